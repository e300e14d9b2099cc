#include "http/route_table.h"

#include <gtest/gtest.h>

namespace denormd::http {
namespace {

handler named(std::string name, std::string* called) {
  return [name, called](const request&, std::shared_ptr<reply>) { *called = name; };
}

TEST(route_table_test, a_path_and_method_find_their_handler_get_brings_head) {
  std::string called;
  route_table t;
  t.add({"GET"}, "/metrics", named("metrics", &called));
  t.add({"POST", "PUT"}, "/-/reload", named("reload", &called));
  for (const char* method : {"GET", "HEAD"}) {
    const auto m = t.find(method, "/metrics");
    ASSERT_NE(m.serve, nullptr) << method;
    (*m.serve)(request{}, nullptr);
    EXPECT_EQ(called, "metrics");
  }
  const auto r = t.find("PUT", "/-/reload");
  ASSERT_NE(r.serve, nullptr);
  (*r.serve)(request{}, nullptr);
  EXPECT_EQ(called, "reload");
}

TEST(route_table_test, another_method_lists_the_allowed_ones_and_an_unknown_path_none) {
  std::string called;
  route_table t;
  t.add({"GET"}, "/metrics", named("metrics", &called));
  t.add({"POST", "PUT"}, "/-/reload", named("reload", &called));
  auto m = t.find("POST", "/metrics");
  EXPECT_EQ(m.serve, nullptr);
  EXPECT_EQ(m.allow, "GET, HEAD");
  m = t.find("GET", "/-/reload");
  EXPECT_EQ(m.serve, nullptr);
  EXPECT_EQ(m.allow, "POST, PUT");
  m = t.find("GET", "/metrics/");  // paths match exactly
  EXPECT_EQ(m.serve, nullptr);
  EXPECT_EQ(m.allow, "");
  m = t.find("get", "/metrics");  // methods are case-sensitive (RFC 9110)
  EXPECT_EQ(m.serve, nullptr);
}

TEST(route_table_test, url_decoded_decodes_escapes_and_plus_and_refuses_malformed_ones) {
  EXPECT_EQ(url_decoded("orders%2Dcustomer+x%3a1"), "orders-customer x:1");
  EXPECT_EQ(url_decoded(""), "");
  EXPECT_EQ(url_decoded("%zz"), std::nullopt);
  EXPECT_EQ(url_decoded("a%4"), std::nullopt);
}

}  // namespace
}  // namespace denormd::http
