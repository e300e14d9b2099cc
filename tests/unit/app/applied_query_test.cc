#include "app/applied_query.h"

#include <gtest/gtest.h>

namespace denormd::app {
namespace {

using namespace std::chrono_literals;

TEST(applied_query_test, parses_the_operation_time_the_mapping_and_the_timeout) {
  auto q = parse_applied_query("after=1700000000:7&mapping=orders%2Dcustomer&timeout=2.5");
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->after, (bson::timestamp{1700000000, 7}));
  EXPECT_EQ(q->mapping, "orders-customer");
  EXPECT_EQ(q->timeout, 2500ms);
  q = parse_applied_query("after=42");
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->after, (bson::timestamp{42, 0}));
  EXPECT_EQ(q->mapping, "");
  EXPECT_EQ(q->timeout, 10s);
  EXPECT_EQ(parse_applied_query("").error().message,
            "missing after=T[:I], the operation time to wait for");
  EXPECT_EQ(parse_applied_query("after=12x").error().message,
            "bad after=\"12x\": expected an operation time T or T:I (whole numbers)");
  EXPECT_EQ(parse_applied_query("after=99999999999").error().message,
            "bad after=\"99999999999\": expected an operation time T or T:I (whole numbers)");
  EXPECT_EQ(parse_applied_query("after=1&timeout=61").error().message,
            "bad timeout=\"61\": expected seconds from 0 to 60");
  EXPECT_EQ(parse_applied_query("after=1&timeout=nan").error().message,
            "bad timeout=\"nan\": expected seconds from 0 to 60");
  EXPECT_EQ(parse_applied_query("after=1&mapping=%zz").error().message,
            "bad mapping=\"%zz\": malformed %-escape");
  EXPECT_EQ(parse_applied_query("after=1&wait=1").error().message,
            "unknown parameter \"wait\" (GET /applied takes after, mapping and timeout)");
}

}  // namespace
}  // namespace denormd::app
