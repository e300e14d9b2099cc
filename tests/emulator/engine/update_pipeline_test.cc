// Pipeline-style updates as denormd sends them: a version check with $switch, arithmetic on
// counters ($add, $ifNull, $arrayElemAt), a guarded $divide and a $cond that keeps or replaces
// a stored version. Results as MongoDB 6.0 computes them (expression.cpp, BSON order).

#include "expression.h"
#include "update_cases.h"

namespace mongo_emulator::engine::testing {
namespace {

// Applies the event at version {t: Timestamp(6, 1), k: "8201"} with weight 2, 1 or 0 by how
// far the stored version `p` is behind it (index 0: behind {5,1,"8200"}, 1: behind the new
// version, 2: at or past it).
constexpr const char* versioned_update = R"([
  {"$set": {"__denormd_i": {"$switch": {"branches": [
     {"case": {"$lt": ["$p", {"$literal": {"t": {"$timestamp": {"t": 5, "i": 1}}, "k": "8200"}}]},
      "then": 0},
     {"case": {"$lt": ["$p", {"$literal": {"t": {"$timestamp": {"t": 6, "i": 1}}, "k": "8201"}}]},
      "then": 1}],
   "default": 2}}}},
  {"$set": {"r.count": {"$add": [{"$ifNull": ["$r.count", 0]},
                                 {"$arrayElemAt": [[2, 1, 0], "$__denormd_i"]}]},
            "r.s": {"$add": [{"$ifNull": ["$r.s", 0]},
                             {"$arrayElemAt": [[{"$numberDouble": "2.5"}, 1, 0], "$__denormd_i"]}]},
            "p": {"$cond": [{"$lt": ["$__denormd_i", 2]},
                            {"$literal": {"t": {"$timestamp": {"t": 6, "i": 1}}, "k": "8201"}},
                            "$p"]}}},
  {"$set": {"r.avg": {"$cond": [{"$gt": ["$r.count", 0]}, {"$divide": ["$r.s", "$r.count"]},
                                "$$REMOVE"]}}},
  {"$unset": "__denormd_i"}])";

TEST(update_pipeline, versioned_counter_update) {
  const update_case cases[] = {
      {"p missing: weight 2, p set", R"({"_id": 1})", versioned_update,
       R"({"_id": 1, "r": {"count": 2, "s": {"$numberDouble": "2.5"},
                            "avg": {"$numberDouble": "1.25"}},
           "p": {"t": {"$timestamp": {"t": 6, "i": 1}}, "k": "8201"}})"},
      {"p lower than both bounds: weight 2",
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 4, "i": 1}}, "k": "9999"},
           "r": {"count": 3, "s": {"$numberDouble": "4.5"}}})",
       versioned_update,
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 6, "i": 1}}, "k": "8201"},
           "r": {"count": 5, "s": {"$numberDouble": "7.0"}, "avg": {"$numberDouble": "1.4"}}})"},
      {"p equal to the first bound: weight 1 (an int makes the double sum 4.0)",
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 5, "i": 1}}, "k": "8200"},
           "r": {"count": 2, "s": {"$numberDouble": "3.0"}}})",
       versioned_update,
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 6, "i": 1}}, "k": "8201"},
           "r": {"count": 3, "s": {"$numberDouble": "4.0"},
                 "avg": {"$numberDouble": "1.3333333333333333"}}})"},
      {"p equal to the new version: weight 0, nothing changes",
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 6, "i": 1}}, "k": "8201"},
           "r": {"count": 2, "s": {"$numberDouble": "3.0"}, "avg": {"$numberDouble": "1.5"}}})",
       versioned_update,
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 6, "i": 1}}, "k": "8201"},
           "r": {"count": 2, "s": {"$numberDouble": "3.0"}, "avg": {"$numberDouble": "1.5"}}})",
       "noop"},
      {"p higher: weight 0, nothing changes",
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 7, "i": 1}}, "k": "00"},
           "r": {"count": 2, "s": {"$numberDouble": "3.0"}, "avg": {"$numberDouble": "1.5"}}})",
       versioned_update,
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 7, "i": 1}}, "k": "00"},
           "r": {"count": 2, "s": {"$numberDouble": "3.0"}, "avg": {"$numberDouble": "1.5"}}})",
       "noop"},
      {"p at the new time with k MaxKey is past it: weight 0",
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 6, "i": 1}}, "k": {"$maxKey": 1}},
           "r": {"count": 2, "s": {"$numberDouble": "3.0"}, "avg": {"$numberDouble": "1.5"}}})",
       versioned_update,
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 6, "i": 1}}, "k": {"$maxKey": 1}},
           "r": {"count": 2, "s": {"$numberDouble": "3.0"}, "avg": {"$numberDouble": "1.5"}}})",
       "noop"},
      {"a zero count removes avg ($$REMOVE), count and s stay",
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 9, "i": 1}}, "k": "1"},
           "r": {"count": 0, "s": 0, "avg": 1}})",
       versioned_update,
       R"({"_id": 1, "p": {"t": {"$timestamp": {"t": 9, "i": 1}}, "k": "1"},
           "r": {"count": 0, "s": 0}})",
       R"({"removedFields": ["r.avg"]})"},
      {"$cond yielding a missing $p leaves p missing", R"({"_id": 1, "q": 1})",
       R"([{"$set": {"p": {"$cond": [false, 1, "$p"]}}}])", R"({"_id": 1, "q": 1})", "noop"},
  };
  for (const auto& c : cases)
    run_case(c);
}

// BSON order inside embedded documents: field by field, the type's canonical rank first
// (MaxKey above every string), then the name, then the value.
TEST(update_pipeline, versions_compare_in_bson_order) {
  const auto lt = [](const char* a, const char* b) {
    auto e = expression::parse(
        doc(std::string(R"({"e": {"$lt": [{"$literal": )") + a + R"(}, {"$literal": )" + b + "}]}}")
            .fields()[0]
            .val);
    EXPECT_TRUE(e) << (e ? "" : e.error().message);
    auto v = e ? e->evaluate(denormd::bson::document{}) : std::nullopt;
    return v && v->is<bool>() && v->as<bool>();
  };
  const char* max_key = R"({"t": {"$timestamp": {"t": 6, "i": 1}}, "k": {"$maxKey": 1}})";
  const char* current = R"({"t": {"$timestamp": {"t": 6, "i": 1}}, "k": "8201"})";
  const char* later = R"({"t": {"$timestamp": {"t": 7, "i": 1}}, "k": "00"})";
  EXPECT_TRUE(lt(current, max_key));
  EXPECT_FALSE(lt(max_key, current));
  EXPECT_TRUE(lt(max_key, later));
  EXPECT_FALSE(lt(later, max_key));
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
