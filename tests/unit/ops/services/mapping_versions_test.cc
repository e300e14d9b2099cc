// How status prints the recorded mappings: each state of a definition's backfill, with how far a
// running one has come, and what to do about a stale one.
#include "ops/services/mapping_versions.h"

#include <gtest/gtest.h>

#include "bson/json.h"

namespace denormd::ops {
namespace {

std::vector<mapping_version> every_state() {
  std::vector<mapping_version> v(6);
  const char* names[] = {"a", "b", "c", "d", "e", "f"};
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i].name = names[i];
    v[i].fingerprint = "0123456789abcdef";
    v[i].active_since_ms = 1700000000000;
  }
  v[0].backfill = backfill_state::done;
  v[1].backfill = backfill_state::running;
  v[1].backfill_documents = 250;
  v[1].backfill_total = 1000;
  v[2].backfill = backfill_state::running;
  v[2].backfill_documents = 7;  // total unknown
  v[3].backfill = backfill_state::pending;
  v[4].backfill = backfill_state::disabled;
  v[5].removed = true;
  return v;
}

TEST(mapping_versions_test, status_text_names_every_state) {
  const std::string text = to_text(every_state());
  EXPECT_NE(text.find("  a: fingerprint 0123456789abcdef, active since 2023-11-14T22:13:20"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("a: fingerprint 0123456789abcdef, active since "), std::string::npos);
  EXPECT_NE(text.find(", backfill done\n"), std::string::npos) << text;
  EXPECT_NE(text.find(", backfill running 25% (250 of 1000 documents)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find(", backfill running (7 documents so far)\n"), std::string::npos) << text;
  EXPECT_NE(text.find(", backfill pending (documents written before it became active may have "
                      "the old shape: run denormd backfill --mapping d)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(", backfill disabled (documents written before it became active may have "
                      "the old shape: run denormd backfill --mapping e)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  f: fingerprint 0123456789abcdef, removed\n"), std::string::npos) << text;
  EXPECT_NE(to_text({}).find("none recorded yet"), std::string::npos);
}

TEST(mapping_versions_test, status_json_carries_the_state_and_the_counts) {
  const bson::array a = to_bson_array(every_state());
  ASSERT_EQ(a.size(), 6u);
  const std::string running = bson::to_json(a[1].as_document());
  EXPECT_NE(running.find(R"("backfill":"running","backfillDocuments":250,"backfillTotal":1000)"),
            std::string::npos)
      << running;
  const std::string disabled = bson::to_json(a[4].as_document());
  EXPECT_NE(disabled.find(R"("backfill":"disabled")"), std::string::npos) << disabled;
  EXPECT_EQ(disabled.find("backfillDocuments"), std::string::npos) << disabled;
}

}  // namespace
}  // namespace denormd::ops
