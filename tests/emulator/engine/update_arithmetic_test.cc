// $inc, $mul, $min, $max, $bit, $currentDate.
#include "update_cases.h"

namespace mongo_emulator::engine::testing {
namespace {

TEST(update_inc, numbers_and_types) {
  const update_case cases[] = {
      {.name = "missing field is set",
       .before = R"({"_id": 1})",
       .update = R"({"$inc": {"a": 5}})",
       .after = R"({"_id": 1, "a": 5})",
       .description = R"({"updatedFields": {"a": 5}})"},
      {.name = "missing nested field is created",
       .before = R"({"_id": 1})",
       .update = R"({"$inc": {"a.b": -2}})",
       .after = R"({"_id": 1, "a": {"b": -2}})",
       .description = R"({"updatedFields": {"a": {"b": -2}}})"},
      {.name = "int32 plus int32",
       .before = R"({"_id": 1, "a": 2})",
       .update = R"({"$inc": {"a": 3}})",
       .after = R"({"_id": 1, "a": 5})",
       .description = R"({"updatedFields": {"a": 5}})"},
      {.name = "int32 overflow widens to int64",
       .before = R"({"_id": 1, "a": 2147483647})",
       .update = R"({"$inc": {"a": 1}})",
       .after = R"({"_id": 1, "a": {"$numberLong": "2147483648"}})",
       .description = R"({"updatedFields": {"a": {"$numberLong": "2147483648"}}})"},
      {.name = "int32 underflow widens to int64",
       .before = R"({"_id": 1, "a": -2147483648})",
       .update = R"({"$inc": {"a": -1}})",
       .after = R"({"_id": 1, "a": {"$numberLong": "-2147483649"}})"},
      {.name = "int32 plus int64 is int64",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$inc": {"a": {"$numberLong": "1"}}})",
       .after = R"({"_id": 1, "a": {"$numberLong": "2"}})"},
      {.name = "with a double the result is a double",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$inc": {"a": 0.5}})",
       .after = R"({"_id": 1, "a": 1.5})",
       .description = R"({"updatedFields": {"a": 1.5}})"},
      {.name = "double field plus int",
       .before = R"({"_id": 1, "a": 1.5})",
       .update = R"({"$inc": {"a": 1}})",
       .after = R"({"_id": 1, "a": 2.5})"},
      {.name = "increment by zero is a no-op",
       .before = R"({"_id": 1, "a": 7})",
       .update = R"({"$inc": {"a": 0}})",
       .after = R"({"_id": 1, "a": 7})",
       .description = "noop"},
      {.name = "int64 overflow is an error",
       .before = R"({"_id": 1, "a": {"$numberLong": "9223372036854775807"}})",
       .update = R"({"$inc": {"a": 1}})",
       .code = 2,
       .message = "Failed to apply $inc operations to current value "
                  "((NumberLong)9223372036854775807) for document {_id: 1}"},
      {.name = "non-numeric field",
       .before = R"({"_id": 1, "a": "x"})",
       .update = R"({"$inc": {"a": 1}})",
       .code = 14,
       .message = "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' "
                  "of non-numeric type string"},
      {.name = "non-numeric nested field names only the last component",
       .before = R"({"_id": "d", "a": {"b": null}})",
       .update = R"({"$inc": {"a.b": 1}})",
       .code = 14,
       .message = "Cannot apply $inc to a value of non-numeric type. {_id: \"d\"} has the field "
                  "'b' of non-numeric type null"},
      {.name = "array field",
       .before = R"({"_id": 1, "a": []})",
       .update = R"({"$inc": {"a": 1}})",
       .code = 14,
       .message = "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' "
                  "of non-numeric type array"},
      {.name = "blocked path",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$inc": {"a.b": 1}})",
       .code = 28},
  };
  for (const auto& c : cases)
    run_case(c);
  expect_parse_error(R"({"$inc": {"a": "x"}})", "[]", 14,
                     "Cannot increment with non-numeric argument: {a: \"x\"}");
  expect_parse_error(R"({"$inc": {"a.b": null}})", "[]", 14,
                     "Cannot increment with non-numeric argument: {a.b: null}");
}

TEST(update_mul, numbers_and_types) {
  const update_case cases[] = {
      {.name = "missing field becomes zero of the operand's type (int32)",
       .before = R"({"_id": 1})",
       .update = R"({"$mul": {"a": 3}})",
       .after = R"({"_id": 1, "a": 0})",
       .description = R"({"updatedFields": {"a": 0}})"},
      {.name = "missing field, int64 operand",
       .before = R"({"_id": 1})",
       .update = R"({"$mul": {"a": {"$numberLong": "3"}}})",
       .after = R"({"_id": 1, "a": {"$numberLong": "0"}})"},
      {.name = "missing field, double operand",
       .before = R"({"_id": 1})",
       .update = R"({"$mul": {"a": 2.5}})",
       .after = R"({"_id": 1, "a": 0.0})"},
      {.name = "existing",
       .before = R"({"_id": 1, "a": 4})",
       .update = R"({"$mul": {"a": 3}})",
       .after = R"({"_id": 1, "a": 12})"},
      {.name = "int32 overflow widens",
       .before = R"({"_id": 1, "a": 65536})",
       .update = R"({"$mul": {"a": 65536}})",
       .after = R"({"_id": 1, "a": {"$numberLong": "4294967296"}})"},
      {.name = "multiply by one is a no-op",
       .before = R"({"_id": 1, "a": 4})",
       .update = R"({"$mul": {"a": 1}})",
       .after = R"({"_id": 1, "a": 4})",
       .description = "noop"},
      {.name = "int64 overflow",
       .before = R"({"_id": 1, "a": {"$numberLong": "4611686018427387904"}})",
       .update = R"({"$mul": {"a": 4}})",
       .code = 2,
       .message = "Failed to apply $mul operations to current value "
                  "((NumberLong)4611686018427387904) for document {_id: 1}"},
      {.name = "non-numeric",
       .before = R"({"_id": 1, "a": true})",
       .update = R"({"$mul": {"a": 2}})",
       .code = 14,
       .message = "Cannot apply $mul to a value of non-numeric type. {_id: 1} has the field 'a' "
                  "of non-numeric type bool"},
  };
  for (const auto& c : cases)
    run_case(c);
  expect_parse_error(R"({"$mul": {"a": "2"}})", "[]", 14,
                     "Cannot multiply with non-numeric argument: {a: \"2\"}");
}

TEST(update_min_max, bson_order_across_types) {
  const update_case cases[] = {
      {.name = "$min on a missing field sets it",
       .before = R"({"_id": 1})",
       .update = R"({"$min": {"a": 5}})",
       .after = R"({"_id": 1, "a": 5})",
       .description = R"({"updatedFields": {"a": 5}})"},
      {.name = "$min with a smaller value",
       .before = R"({"_id": 1, "a": 5})",
       .update = R"({"$min": {"a": 3}})",
       .after = R"({"_id": 1, "a": 3})",
       .description = R"({"updatedFields": {"a": 3}})"},
      {.name = "$min with a larger value is a no-op",
       .before = R"({"_id": 1, "a": 5})",
       .update = R"({"$min": {"a": 7}})",
       .after = R"({"_id": 1, "a": 5})",
       .description = "noop"},
      {.name = "$min with an equal number of another type is a no-op",
       .before = R"({"_id": 1, "a": 5})",
       .update = R"({"$min": {"a": 5.0}})",
       .after = R"({"_id": 1, "a": 5})",
       .description = "noop"},
      {.name = "$min: null sorts before numbers",
       .before = R"({"_id": 1, "a": 5})",
       .update = R"({"$min": {"a": null}})",
       .after = R"({"_id": 1, "a": null})"},
      {.name = "$min: a string is larger than any number",
       .before = R"({"_id": 1, "a": 5})",
       .update = R"({"$min": {"a": "x"}})",
       .after = R"({"_id": 1, "a": 5})",
       .description = "noop"},
      {.name = "$max: a string is larger than any number",
       .before = R"({"_id": 1, "a": 5})",
       .update = R"({"$max": {"a": "x"}})",
       .after = R"({"_id": 1, "a": "x"})",
       .description = R"({"updatedFields": {"a": "x"}})"},
      {.name = "$max: documents sort before arrays",
       .before = R"({"_id": 1, "a": {"z": 1}})",
       .update = R"({"$max": {"a": [0]}})",
       .after = R"({"_id": 1, "a": [0]})"},
      {.name = "$max with a smaller date is a no-op",
       .before = R"({"_id": 1, "a": {"$date": {"$numberLong": "2000"}}})",
       .update = R"({"$max": {"a": {"$date": {"$numberLong": "1000"}}}})",
       .after = R"({"_id": 1, "a": {"$date": {"$numberLong": "2000"}}})",
       .description = "noop"},
      {.name = "$max on a nested missing field",
       .before = R"({"_id": 1, "a": {}})",
       .update = R"({"$max": {"a.b": 1}})",
       .after = R"({"_id": 1, "a": {"b": 1}})",
       .description = R"({"updatedFields": {"a.b": 1}})"},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(update_bit, integer_operations) {
  const update_case cases[] = {
      {.name = "and",
       .before = R"({"_id": 1, "a": 13})",
       .update = R"({"$bit": {"a": {"and": 10}}})",
       .after = R"({"_id": 1, "a": 8})"},
      {.name = "or then xor, in order",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$bit": {"a": {"or": 6, "xor": 2}}})",
       .after = R"({"_id": 1, "a": 5})"},
      {.name = "int64 operand makes int64",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$bit": {"a": {"or": {"$numberLong": "2"}}}})",
       .after = R"({"_id": 1, "a": {"$numberLong": "3"}})"},
      {.name = "unchanged is a no-op",
       .before = R"({"_id": 1, "a": 3})",
       .update = R"({"$bit": {"a": {"or": 1}}})",
       .after = R"({"_id": 1, "a": 3})",
       .description = "noop"},
      {.name = "missing field starts from zero",
       .before = R"({"_id": 1})",
       .update = R"({"$bit": {"a": {"or": 5}}})",
       .after = R"({"_id": 1, "a": 5})"},
      {.name = "non-integral field",
       .before = R"({"_id": 1, "a": 1.5})",
       .update = R"({"$bit": {"a": {"or": 1}}})",
       .code = 2,
       .message = "Cannot apply $bit to a value of non-integral type._id: 1 has the field a of "
                  "non-integer type double"},
  };
  for (const auto& c : cases)
    run_case(c);
  expect_parse_error(R"({"$bit": {"a": 1}})", "[]", 2,
                     "The $bit modifier is not compatible with a int. You must pass in an "
                     "embedded document: {$bit: {field: {and/or/xor: #}}");
  expect_parse_error(R"({"$bit": {"a": {"not": 1}}})", "[]", 2,
                     "The $bit modifier only supports 'and', 'or', and 'xor', not 'not' which is "
                     "an unknown operator: {not: 1}");
  expect_parse_error(R"({"$bit": {"a": {"and": 1.0}}})", "[]", 2,
                     "The $bit modifier field must be an Integer(32/64 bit); a 'double' is not "
                     "supported here: {and: 1.0}");
}

TEST(update_current_date, date_and_timestamp) {
  const update_case cases[] = {
      {.name = "true means a date",
       .before = R"({"_id": 1})",
       .update = R"({"$currentDate": {"a": true}})",
       .after = R"({"_id": 1, "a": {"$date": {"$numberLong": "1700000000000"}}})"},
  };
  for (const auto& c : cases)
    run_case(c);

  // {$type: ...} is legacy Extended JSON for binary, so these updates are built by hand.
  auto current_date = [](const char* path, const char* type) {
    return denormd::bson::document{
        {"$currentDate",
         denormd::bson::document{{path, denormd::bson::document{{"$type", type}}}}}};
  };
  auto apply = [](const denormd::bson::document& update, denormd::bson::document d) {
    auto spec = parse_update(update, {});
    EXPECT_TRUE(spec) << (spec ? "" : spec.error().message);
    if (!spec) return denormd::bson::document{};
    auto r = apply_update(*spec, d, fixed_context(std::nullopt, false));
    EXPECT_TRUE(r);
    return d;
  };
  EXPECT_EQ(json(apply(current_date("a", "timestamp"), doc(R"({"_id": 1, "a": 1})"))),
            json(doc(R"({"_id": 1, "a": {"$timestamp": {"t": 1700000000, "i": 7}}})")));
  EXPECT_EQ(json(apply(current_date("a.b", "date"), doc(R"({"_id": 1})"))),
            json(doc(R"({"_id": 1, "a": {"b": {"$date": {"$numberLong": "1700000000000"}}}})")));
  auto bad_type = parse_update(current_date("a", "x"), {});
  ASSERT_FALSE(bad_type);
  EXPECT_EQ(bad_type.error().code, 2);
  EXPECT_EQ(bad_type.error().message,
            "The '$type' string field is required to be 'date' or 'timestamp': "
            "{$currentDate: {field : {$type: 'date'}}}");
  expect_parse_error(R"({"$currentDate": {"a": 1}})", "[]", 2,
                     "int is not valid type for $currentDate. Please use a boolean ('true') or a "
                     "$type expression ({$type: 'timestamp/date'}).");
  expect_parse_error(R"({"$currentDate": {"a": {"x": 1}}})", "[]", 2,
                     "Unrecognized $currentDate option: x");
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
