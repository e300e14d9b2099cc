// Aggregation expressions, each case from MongoDB 6.0's operator documentation (results and
// error codes), and $expr in queries.

#include "expression.h"

#include <chrono>

#include "expression_cases.h"
#include "query_operators.h"

namespace mongo_emulator::engine::testing {
namespace {

namespace bson = denormd::bson;

TEST(expression, comparisons_use_bson_order_and_missing_ranks_lowest) {
  EXPECT_EQ(eval(R"({"$eq": ["$a", 1]})", R"({"a": 1.0})"), v("true"));
  EXPECT_EQ(eval(R"({"$ne": ["$a", 1]})", R"({"a": 2})"), v("true"));
  EXPECT_EQ(eval(R"({"$eq": ["$missing", null]})"), v("false"));
  EXPECT_EQ(eval(R"({"$lt": ["$missing", null]})"), v("true"));
  EXPECT_EQ(eval(R"({"$eq": ["$missing", "$other"]})"), v("true"));
  EXPECT_EQ(eval(R"({"$gt": ["abc", 5]})"), v("true"));  // strings sort after numbers
  EXPECT_EQ(eval(R"({"$gte": [[1, 2], [1]]})"), v("true"));
  EXPECT_EQ(eval(R"({"$cmp": ["b", "a"]})"), v("1"));
  EXPECT_EQ(eval(R"({"$cmp": [1, 1.0]})"), v("0"));
  EXPECT_EQ(eval(R"({"$lte": ["$a", 3]})", R"({"a": [1, 2]})"), v("false"));  // arrays whole
  expect_parse_error(R"({"$eq": [1]})", 16020);
  expect_parse_error(R"({"$eq": [1, 2, 3]})", 16020);
}

TEST(expression, boolean_operators_read_truthiness) {
  EXPECT_EQ(eval(R"({"$and": [1, "x", [], {}]})"), v("true"));
  EXPECT_EQ(eval(R"({"$and": [1, 0]})"), v("false"));
  EXPECT_EQ(eval(R"({"$and": []})"), v("true"));
  EXPECT_EQ(eval(R"({"$or": []})"), v("false"));
  EXPECT_EQ(eval(R"({"$or": [null, "$missing", false, {"$numberDecimal": "0"}]})"), v("false"));
  EXPECT_EQ(eval(R"({"$or": [null, ""]})"), v("true"));  // an empty string is true
  EXPECT_EQ(eval(R"({"$not": [null]})"), v("true"));
  EXPECT_EQ(eval(R"({"$not": [[false]]})"), v("false"));  // an array is true
  EXPECT_EQ(eval(R"({"$not": "$missing"})"), v("true"));
  expect_parse_error(R"({"$not": [1, 2]})", 16020);
}

TEST(expression, in_needs_an_array) {
  EXPECT_EQ(eval(R"({"$in": [2, [1, 2, 3]]})"), v("true"));
  EXPECT_EQ(eval(R"({"$in": ["$a", "$list"]})", R"({"a": "x", "list": ["y"]})"), v("false"));
  EXPECT_EQ(eval(R"({"$in": [null, [1, null]]})"), v("true"));
  EXPECT_EQ(eval(R"({"$in": ["$missing", [null]]})"), v("false"));
  const auto [code, message] = run_error(R"({"$in": [1, "$missing"]})");
  EXPECT_EQ(code, 40081);
  EXPECT_EQ(message, "$in requires an array as a second argument, found: missing");
}

TEST(expression, object_to_array_map_and_filter) {
  const char* event = R"({"u": {"a.b": 1, "c": {"d": 2}}, "r": ["x", "y.z"]})";
  EXPECT_EQ(eval(R"({"$objectToArray": "$u"})", event),
            v(R"([{"k": "a.b", "v": {"$numberInt": "1"}},
                  {"k": "c", "v": {"d": {"$numberInt": "2"}}}])"));
  EXPECT_EQ(eval(R"({"$objectToArray": "$missing"})"), v("null"));
  EXPECT_EQ(run_error(R"({"$objectToArray": "$r"})", event).first, 40390);
  EXPECT_EQ(
      eval(R"({"$map": {"input": {"$objectToArray": "$u"}, "as": "f", "in": "$$f.k"}})", event),
      v(R"(["a.b", "c"])"));
  EXPECT_EQ(eval(R"({"$map": {"input": [1, 2], "in": {"$eq": ["$$this", 2]}}})"),
            v("[false, true]"));
  EXPECT_EQ(eval(R"({"$map": {"input": "$missing", "in": 1}})"), v("null"));
  EXPECT_EQ(eval(R"({"$map": {"input": [1], "in": "$$REMOVE"}})"), v("[null]"));
  EXPECT_EQ(run_error(R"({"$map": {"input": "$u", "in": 1}})", event).first, 16883);
  expect_parse_error(R"({"$map": {"input": [1]}})", 16882);
  expect_parse_error(R"({"$map": {"in": 1}})", 16880);
  expect_parse_error(R"({"$map": {"input": [1], "in": 1, "x": 1}})", 16879);
  expect_parse_error(R"({"$map": {"input": [1], "as": "Bad", "in": 1}})", 16867);
  // Inner bindings shadow outer ones; the outer one is back afterwards; CURRENT stays the doc.
  EXPECT_EQ(eval(R"({"$map": {"input": [1, 2], "in": {"$concatArrays": [
                   {"$map": {"input": [10], "in": "$$this"}}, ["$$this", "$k"]]}}})",
                 R"({"k": "doc"})"),
            v(R"([[{"$numberInt": "10"}, {"$numberInt": "1"}, "doc"],
                  [{"$numberInt": "10"}, {"$numberInt": "2"}, "doc"]])"));
  EXPECT_EQ(eval(R"({"$filter": {"input": [1, 5, 2, 8], "as": "n", "cond": {"$gt": ["$$n", 1]}}})"),
            v("[5, 2, 8]"));
  EXPECT_EQ(eval(R"({"$filter": {"input": [1, 5, 2, 8], "cond": {"$gt": ["$$this", 1]},
                                 "limit": 2}})"),
            v("[5, 2]"));
  EXPECT_EQ(run_error(R"({"$filter": {"input": [1], "cond": true, "limit": 0}})").first, 327392);
  EXPECT_EQ(run_error(R"({"$filter": {"input": 1, "cond": true}})").first, 28651);
  expect_parse_error(R"({"$filter": {"input": [1]}})", 28648);
  expect_parse_error(R"({"$map": {"input": [1], "in": "$$nothere"}})", 17276);
}

TEST(expression, element_truth_size_and_arrays) {
  EXPECT_EQ(eval(R"({"$anyElementTrue": [[false, 0, null]]})"), v("false"));
  EXPECT_EQ(eval(R"({"$anyElementTrue": [[false, 1]]})"), v("true"));
  EXPECT_EQ(eval(R"({"$allElementsTrue": [[]]})"), v("true"));
  EXPECT_EQ(eval(R"({"$allElementsTrue": [[1, [], "x"]]})"), v("true"));
  EXPECT_EQ(eval(R"({"$allElementsTrue": [[1, null]]})"), v("false"));
  EXPECT_EQ(run_error(R"({"$anyElementTrue": "$missing"})"),
            std::make_pair(17041, std::string("$anyElementTrue's argument must be an array, "
                                              "but is missing")));
  EXPECT_EQ(run_error(R"({"$allElementsTrue": [1]})").first, 17040);
  EXPECT_EQ(eval(R"({"$size": "$a"})", R"({"a": [1, [2, 3]]})"), v("2"));
  EXPECT_EQ(run_error(R"({"$size": "$a"})", R"({"a": "xy"})"),
            std::make_pair(17124, std::string("The argument to $size must be an array. Type of "
                                              "argument: string")));
  EXPECT_EQ(eval(R"({"$concatArrays": [[1], "$a", []]})", R"({"a": [2]})"), v("[1, 2]"));
  EXPECT_EQ(eval(R"({"$concatArrays": [[1], "$missing"]})"), v("null"));
  EXPECT_EQ(run_error(R"({"$concatArrays": [[1], 2]})").first, 28664);
  EXPECT_EQ(eval(R"({"$arrayElemAt": [[1, 2, 3], -1]})"), v("3"));
  EXPECT_EQ(eval(R"({"$arrayElemAt": [[1, 2, 3], 3]})"), "missing");
  EXPECT_EQ(run_error(R"({"$arrayElemAt": [[1], 0.5]})").first, 28691);
}

TEST(expression, if_null_cond_and_type) {
  EXPECT_EQ(eval(R"({"$ifNull": ["$missing", null, "x"]})"), v(R"("x")"));
  EXPECT_EQ(eval(R"({"$ifNull": ["$a", "x"]})", R"({"a": 0})"), v("0"));
  EXPECT_EQ(eval(R"({"$ifNull": ["$missing", "$other"]})"), "missing");
  expect_parse_error(R"({"$ifNull": ["$a"]})", 1257300);  // "$ifNull needs at least two arguments"
  EXPECT_EQ(
      eval(R"({"$cond": {"if": {"$gte": ["$q", 250]}, "then": 30, "else": 20}})", R"({"q": 300})"),
      v("30"));
  EXPECT_EQ(eval(R"({"$cond": [{"$gte": ["$q", 250]}, 30, 20]})", R"({"q": 10})"), v("20"));
  expect_parse_error(R"({"$cond": {"then": 1, "else": 2}})", 17080);
  expect_parse_error(R"({"$cond": {"if": 1, "else": 2}})", 17081);
  expect_parse_error(R"({"$cond": {"if": 1, "then": 2}})", 17082);
  expect_parse_error(R"({"$cond": {"if": 1, "then": 2, "else": 3, "x": 4}})", 17083);
  EXPECT_EQ(eval(R"({"$type": "$missing"})"), v(R"("missing")"));
  EXPECT_EQ(eval(R"({"$type": "$a"})", R"({"a": {"$numberLong": "1"}})"), v(R"("long")"));
  EXPECT_EQ(eval(R"({"$type": "$a"})", R"({"a": [1]})"), v(R"("array")"));
  EXPECT_EQ(eval(R"({"$type": "$a"})", R"({"a": {}})"), v(R"("object")"));
}

TEST(expression, to_int_converts_numbers_within_int32) {
  EXPECT_EQ(eval(R"({"$toInt": {"$numberLong": "-7"}})"), v(R"({"$numberInt": "-7"})"));
  EXPECT_EQ(eval(R"({"$toInt": 2.9})"), v(R"({"$numberInt": "2"})"));
  EXPECT_EQ(eval(R"({"$toInt": -2.9})"), v(R"({"$numberInt": "-2"})"));
  EXPECT_EQ(eval(R"({"$toInt": {"$numberDecimal": "5.5"}})"), v(R"({"$numberInt": "5"})"));
  EXPECT_EQ(eval(R"({"$toInt": true})"), v(R"({"$numberInt": "1"})"));
  EXPECT_EQ(eval(R"({"$toInt": "$missing"})"), v("null"));
  EXPECT_EQ(run_error(R"({"$toInt": {"$numberLong": "2147483648"}})").first, 241);
  EXPECT_EQ(run_error(R"({"$toInt": {"$numberDouble": "NaN"}})").first, 241);
  EXPECT_EQ(run_error(R"({"$toInt": {"$literal": {"a": 1}}})").first, 241);
}

TEST(expression, bson_size_measures_documents_only) {
  // {} is 5 bytes; {"a": 1} adds a type byte, "a\0" and 4 bytes of int32: 12.
  EXPECT_EQ(eval(R"({"$bsonSize": {"$literal": {}}})"), v(R"({"$numberInt": "5"})"));
  EXPECT_EQ(eval(R"({"$bsonSize": "$d"})", R"({"d": {"a": 1}})"), v(R"({"$numberInt": "12"})"));
  // The whole input document: {"_id": 1, "s": "xy"}: 5 + (1 + 4 + 4) + (1 + 2 + 4 + 3) = 24.
  EXPECT_EQ(eval(R"({"$bsonSize": "$$ROOT"})", R"({"_id": 1, "s": "xy"})"),
            v(R"({"$numberInt": "24"})"));
  EXPECT_EQ(eval(R"({"$bsonSize": ["$d"]})", R"({"d": {"a": 1}})"), v(R"({"$numberInt": "12"})"));
  EXPECT_EQ(eval(R"({"$bsonSize": "$missing"})"), v("null"));
  EXPECT_EQ(eval(R"({"$bsonSize": null})"), v("null"));
  EXPECT_EQ(
      run_error(R"({"$bsonSize": "$a"})", R"({"a": [1, 2]})"),
      std::make_pair(31393, std::string("$bsonSize requires a document input, found: array")));
  EXPECT_EQ(run_error(R"({"$bsonSize": 123})").first, 31393);
  expect_parse_error(R"({"$bsonSize": [1, 2]})", 16020);
}

TEST(expression, add_promotes_types_and_widens_on_overflow) {
  EXPECT_EQ(eval(R"({"$add": [1, 2]})"), v(R"({"$numberInt": "3"})"));
  EXPECT_EQ(eval(R"({"$add": []})"), v(R"({"$numberInt": "0"})"));
  // int32 overflow widens to int64; an int64 operand makes int64 even when the sum fits int32.
  EXPECT_EQ(eval(R"({"$add": [2147483647, 1]})"), v(R"({"$numberLong": "2147483648"})"));
  EXPECT_EQ(eval(R"({"$add": [{"$numberLong": "1"}, 1]})"), v(R"({"$numberLong": "2"})"));
  // int64 overflow widens to double (SafeNum, $inc, would fail instead).
  EXPECT_EQ(eval(R"({"$add": [{"$numberLong": "9223372036854775807"}, 1]})"),
            v(R"({"$numberDouble": "9223372036854775808"})"));
  EXPECT_EQ(eval(R"({"$add": [1, 2.5]})"), v(R"({"$numberDouble": "3.5"})"));
  EXPECT_EQ(eval(R"({"$add": [1, {"$numberDouble": "2"}]})"), v(R"({"$numberDouble": "3"})"));
  // A decimal makes a decimal; a later double operand is taken to 15 digits.
  EXPECT_EQ(eval(R"({"$add": [1, {"$numberDecimal": "0.5"}]})"), v(R"({"$numberDecimal": "1.5"})"));
  EXPECT_EQ(eval(R"({"$add": [{"$numberDecimal": "1"}, 0.1]})"),
            v(R"({"$numberDecimal": "1.100000000000000"})"));
  // One date: the sum is a date.
  EXPECT_EQ(eval(R"({"$add": [{"$date": {"$numberLong": "1000"}}, 500, {"$numberLong": "1"}]})"),
            v(R"({"$date": {"$numberLong": "1501"}})"));
  EXPECT_EQ(run_error(R"({"$add": [{"$date": {"$numberLong": "1"}}, "$d"]})",
                      R"({"d": {"$date": {"$numberLong": "2"}}})"),
            std::make_pair(16612, std::string("only one date allowed in an $add expression")));
  // Null or missing makes null at once, even before a bad operand; a bad one before it fails.
  EXPECT_EQ(eval(R"({"$add": [1, "$missing"]})"), v("null"));
  EXPECT_EQ(eval(R"({"$add": [1, null, "x"]})"), v("null"));
  EXPECT_EQ(
      run_error(R"({"$add": [1, "x", null]})"),
      std::make_pair(14, std::string("$add only supports numeric or date types, not string")));
  EXPECT_EQ(run_error(R"({"$add": ["$a", 1]})", R"({"a": [1]})").second,
            "$add only supports numeric or date types, not array");
}

TEST(expression, subtract_numbers_and_dates) {
  EXPECT_EQ(eval(R"({"$subtract": [5, 7]})"), v(R"({"$numberInt": "-2"})"));
  EXPECT_EQ(eval(R"({"$subtract": [-2147483648, 1]})"), v(R"({"$numberLong": "-2147483649"})"));
  EXPECT_EQ(eval(R"({"$subtract": [{"$numberLong": "5"}, 1]})"), v(R"({"$numberLong": "4"})"));
  EXPECT_EQ(eval(R"({"$subtract": [{"$numberLong": "-9223372036854775808"}, 1]})"),
            v(R"({"$numberDouble": "-9223372036854775808"})"));
  EXPECT_EQ(eval(R"({"$subtract": [5, 0.5]})"), v(R"({"$numberDouble": "4.5"})"));
  EXPECT_EQ(eval(R"({"$subtract": [{"$numberDecimal": "5.5"}, 1]})"),
            v(R"({"$numberDecimal": "4.5"})"));
  // date - date: milliseconds as a long; date - number: a date.
  EXPECT_EQ(eval(R"({"$subtract": ["$b", "$a"]})", R"({"a": {"$date": {"$numberLong": "1000"}},
                                                        "b": {"$date": {"$numberLong": "4000"}}})"),
            v(R"({"$numberLong": "3000"})"));
  EXPECT_EQ(eval(R"({"$subtract": [{"$date": {"$numberLong": "4000"}}, 1000]})"),
            v(R"({"$date": {"$numberLong": "3000"}})"));
  EXPECT_EQ(eval(R"({"$subtract": ["$missing", "x"]})"), v("null"));
  EXPECT_EQ(eval(R"({"$subtract": [1, null]})"), v("null"));
  EXPECT_EQ(run_error(R"({"$subtract": [1, {"$date": {"$numberLong": "1"}}]})"),
            std::make_pair(14, std::string("can't $subtract date from int")));
  EXPECT_EQ(run_error(R"({"$subtract": ["a", 1]})").second, "can't $subtract int from string");
  EXPECT_EQ(run_error(R"({"$subtract": [{"$date": {"$numberLong": "1"}}, "x"]})").second,
            "can't $subtract string from Date");
  expect_parse_error(R"({"$subtract": [1]})", 16020);
}

TEST(expression, multiply_promotes_types_and_widens_on_overflow) {
  EXPECT_EQ(eval(R"({"$multiply": [2, 3]})"), v(R"({"$numberInt": "6"})"));
  EXPECT_EQ(eval(R"({"$multiply": []})"), v(R"({"$numberInt": "1"})"));
  EXPECT_EQ(eval(R"({"$multiply": [65536, 65536]})"), v(R"({"$numberLong": "4294967296"})"));
  EXPECT_EQ(eval(R"({"$multiply": [{"$numberLong": "9223372036854775807"}, 2]})"),
            v(R"({"$numberDouble": "18446744073709551614"})"));
  EXPECT_EQ(eval(R"({"$multiply": [2, 1.5]})"), v(R"({"$numberDouble": "3"})"));
  EXPECT_EQ(eval(R"({"$multiply": [3, {"$numberDecimal": "0.5"}]})"),
            v(R"({"$numberDecimal": "1.5"})"));
  EXPECT_EQ(eval(R"({"$multiply": [2, "$missing", "x"]})"), v("null"));
  EXPECT_EQ(run_error(R"({"$multiply": [2, "x"]})"),
            std::make_pair(14, std::string("$multiply only supports numeric types, not string")));
}

TEST(expression, divide_makes_doubles_or_decimals) {
  EXPECT_EQ(eval(R"({"$divide": [6, 3]})"), v(R"({"$numberDouble": "2"})"));
  EXPECT_EQ(eval(R"({"$divide": [{"$numberLong": "1"}, 4]})"), v(R"({"$numberDouble": "0.25"})"));
  EXPECT_EQ(eval(R"({"$divide": [1, {"$numberDecimal": "4"}]})"),
            v(R"({"$numberDecimal": "0.25"})"));
  EXPECT_EQ(eval(R"({"$divide": [1, "$missing"]})"), v("null"));
  EXPECT_EQ(eval(R"({"$divide": [null, "x"]})"), v("null"));
  EXPECT_EQ(run_error(R"({"$divide": [1, 0]})"),
            std::make_pair(2, std::string("can't $divide by zero")));
  EXPECT_EQ(run_error(R"({"$divide": [1, -0.0]})").first, 2);
  EXPECT_EQ(run_error(R"({"$divide": [1.5, {"$numberDecimal": "0"}]})").first, 2);
  // Zero is checked only once both are numbers.
  EXPECT_EQ(
      run_error(R"({"$divide": ["a", 0]})"),
      std::make_pair(14, std::string("$divide only supports numeric types, not string and int")));
  expect_parse_error(R"({"$divide": [1, 2, 3]})", 16020);
}

TEST(expression, switch_takes_the_first_true_branch) {
  const char* grade = R"({"$switch": {"branches": [
      {"case": {"$gte": ["$s", 90]}, "then": "A"},
      {"case": {"$gte": ["$s", 80]}, "then": "B"}], "default": "C"}})";
  EXPECT_EQ(eval(grade, R"({"s": 95})"), v(R"("A")"));
  EXPECT_EQ(eval(grade, R"({"s": 85})"), v(R"("B")"));
  EXPECT_EQ(eval(grade, R"({"s": 10})"), v(R"("C")"));
  EXPECT_EQ(
      eval(R"({"$switch": {"branches": [{"case": "$a", "then": 1}], "default": "$missing"}})"),
      "missing");
  const char* no_default =
      R"({"$switch": {"branches": [{"case": {"$eq": ["$a", 1]}, "then": 1}]}})";
  EXPECT_EQ(eval(no_default, R"({"a": 1})"), v("1"));
  EXPECT_EQ(run_error(no_default, R"({"a": 2})"),
            std::make_pair(40066, std::string("$switch could not find a matching branch for an "
                                              "input, and no default was specified.")));
  expect_parse_error(R"({"$switch": [1]})", 40060);
  expect_parse_error(R"({"$switch": {"branches": {"case": 1, "then": 1}}})", 40061);
  expect_parse_error(R"({"$switch": {"branches": [1]}})", 40062);
  expect_parse_error(R"({"$switch": {"branches": [{"case": 1, "then": 1, "x": 1}]}})", 40063);
  expect_parse_error(R"({"$switch": {"branches": [{"then": 1}]}})", 40064);
  expect_parse_error(R"({"$switch": {"branches": [{"case": 1}]}})", 40065);
  expect_parse_error(R"({"$switch": {"branches": [], "x": 1}})", 40067);
  expect_parse_error(R"({"$switch": {"default": 1}})", 40068);
  // MongoDB's optimizer drops constant false cases; none left and no default fails.
  expect_parse_error(R"({"$switch": {"branches": [{"case": false, "then": 1}]}})", 40069);
  EXPECT_EQ(eval(R"({"$switch": {"branches": [{"case": false, "then": 1}], "default": 2}})"),
            v("2"));
}

TEST(expression, strings_count_code_points) {
  EXPECT_EQ(eval(R"({"$concat": ["a", "$b", "c"]})", R"({"b": "-"})"), v(R"("a-c")"));
  EXPECT_EQ(eval(R"({"$concat": ["a", "$missing"]})"), v("null"));
  EXPECT_EQ(run_error(R"({"$concat": ["a", 1]})"),
            std::make_pair(16702, std::string("$concat only supports strings, not int")));
  EXPECT_EQ(eval(R"({"$substrCP": ["café au lait", 2, 3]})"), v(R"("fé ")"));
  EXPECT_EQ(eval(R"({"$substrCP": ["寿司sushi", 0, 2]})"), v(R"("寿司")"));
  EXPECT_EQ(eval(R"({"$substrCP": ["abc", 5, 2]})"), v(R"("")"));
  EXPECT_EQ(eval(R"({"$substrCP": ["$missing", 0, 2]})"), v(R"("")"));
  // coerceToString: numbers and dates are text first (MongoDB 6.0 ExpressionSubstrCP).
  EXPECT_EQ(eval(R"({"$substrCP": [12345, 1, 2]})"), v(R"("23")"));
  EXPECT_EQ(run_error(R"({"$substrCP": [[1], 0, 1]})").first, 16007);
  EXPECT_EQ(run_error(R"({"$substrCP": ["abc", "0", 1]})").first, 34450);
  EXPECT_EQ(run_error(R"({"$substrCP": ["abc", 0, -1]})").first, 34454);
  EXPECT_EQ(run_error(R"({"$substrCP": ["abc", -1, 1]})").first, 34455);
  EXPECT_EQ(run_error(R"({"$substrCP": ["abc", 0.5, 1]})").first, 34451);
  EXPECT_EQ(eval(R"({"$indexOfCP": ["cafétéria", "é"]})"), v("3"));
  EXPECT_EQ(eval(R"({"$indexOfCP": ["cafétéria", "é", 4]})"), v("5"));
  EXPECT_EQ(eval(R"({"$indexOfCP": ["cafétéria", "é", 6, 8]})"), v("-1"));
  EXPECT_EQ(eval(R"({"$indexOfCP": ["abc", ""]})"), v("0"));
  EXPECT_EQ(eval(R"({"$indexOfCP": ["abc", "d"]})"), v("-1"));
  EXPECT_EQ(eval(R"({"$indexOfCP": ["abc", "a", 5]})"), v("-1"));
  EXPECT_EQ(eval(R"({"$indexOfCP": ["$missing", "a"]})"), v("null"));
  EXPECT_EQ(run_error(R"({"$indexOfCP": [1, "a"]})").first, 40093);
  EXPECT_EQ(run_error(R"({"$indexOfCP": ["a", null]})").first, 40094);
  EXPECT_EQ(run_error(R"({"$indexOfCP": ["a", "a", -1]})").first, 40097);
  EXPECT_EQ(run_error(R"({"$indexOfCP": ["a", "a", 1.5]})").first, 40096);
  EXPECT_EQ(eval(R"({"$split": ["June-15-2013", "-"]})"), v(R"(["June", "15", "2013"])"));
  EXPECT_EQ(eval(R"({"$split": ["a.b.", "."]})"), v(R"(["a", "b", ""])"));
  EXPECT_EQ(eval(R"({"$split": ["$missing", "."]})"), v("null"));
  EXPECT_EQ(run_error(R"({"$split": ["abc", ""]})").first, 40087);
  EXPECT_EQ(run_error(R"({"$split": [1, "."]})").first, 40085);
  EXPECT_EQ(run_error(R"({"$split": ["a", 1]})").first, 40086);
  EXPECT_EQ(eval(R"({"$strLenCP": "cafés"})"), v("5"));
}

TEST(expression, get_field_reads_names_paths_cannot) {
  const char* d = R"({"a.b": 1, "a": {"b": 2}, "$price": 3})";
  EXPECT_EQ(eval(R"({"$getField": "a.b"})", d), v("1"));
  EXPECT_EQ(eval(R"({"$getField": {"$literal": "$price"}})", d), v("3"));
  EXPECT_EQ(eval(R"({"$getField": {"field": "b", "input": "$a"}})", d), v("2"));
  EXPECT_EQ(eval(R"({"$getField": {"field": "x", "input": "$a"}})", d), "missing");
  EXPECT_EQ(eval(R"({"$getField": {"field": "x", "input": "$missing"}})", d), v("null"));
  EXPECT_EQ(run_error(R"({"$getField": {"field": "x", "input": "$a.b"}})", d).first, 3041705);
  expect_parse_error(R"({"$getField": {"field": "$a", "input": "$$CURRENT"}})", 5654601);
  expect_parse_error(R"({"$getField": {"field": 1, "input": "$$CURRENT"}})", 5654602);
  expect_parse_error(R"({"$getField": {"input": "$a"}})", 3041702);
}

TEST(expression, let_binds_variables_for_in_only) {
  EXPECT_EQ(eval(R"({"$let": {"vars": {"x": 2, "y": "$a"}, "in": {"$eq": ["$$x", "$$y"]}}})",
                 R"({"a": 2})"),
            v("true"));
  // Variables are evaluated in the outer scope: `y` cannot see `x`.
  expect_parse_error(R"({"$let": {"vars": {"x": 1, "y": "$$x"}, "in": "$$y"}})", 17276);
  expect_parse_error(R"({"$let": {"vars": {"x": 1}, "in": "$$x"}, "y": 1})", 15983);
  expect_parse_error(R"({"$let": {"vars": {"X": 1}, "in": 1}})", 16867);
  expect_parse_error(R"({"$let": {"vars": {"a-b": 1}, "in": 1}})", 16868);
  expect_parse_error(R"({"$let": {"in": 1}})", 16876);
  expect_parse_error(R"({"$let": {"vars": {}}})", 16877);
  EXPECT_EQ(eval(R"({"$let": {"vars": {"o": {"k": [1, 2]}}, "in": "$$o.k"}})"), v("[1, 2]"));
  expect_parse_error(R"({"$frobnicate": 1})", 168);
}

TEST(expression, a_commands_let_variables_are_constants) {
  auto let =
      evaluate_let(&doc(R"({"l": {"target": "name", "n": {"$size": [[1, 2]]}}})").fields()[0].val);
  ASSERT_TRUE(let) << let.error().message;
  EXPECT_EQ(eval(R"({"$eq": ["$k", "$$target"]})", R"({"k": "name"})", &*let), v("true"));
  EXPECT_EQ(eval(R"("$$n")", "{}", &*let), v("2"));
  EXPECT_EQ(eval(R"("$$target.deeper")", "{}", &*let), "missing");
  EXPECT_FALSE(evaluate_let(&doc(R"({"l": {"Bad": 1}})").fields()[0].val));
  auto failed = evaluate_let(&doc(R"({"l": {"x": {"$size": 1}}})").fields()[0].val);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, 17124);
}

TEST(expression, now_is_the_commands_start_time) {
  const auto ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const std::int64_t before = ms();
  auto e = expression::parse(bson::value("$$NOW"));
  ASSERT_TRUE(e) << e.error().message;
  const std::int64_t after = ms();
  auto now = e->evaluate(doc("{}"));
  ASSERT_TRUE(now && now->is<bson::date_time>());
  EXPECT_GE(now->as<bson::date_time>().millis, before);
  EXPECT_LE(now->as<bson::date_time>().millis, after);
  // The same value wherever it is used in one parsed expression.
  EXPECT_EQ(eval(R"({"$eq": ["$$NOW", "$$NOW"]})"), v("true"));
  EXPECT_EQ(eval(R"("$$NOW.x")"), "missing");
  // As a lease table uses it: expired when its expiry is before now.
  auto m = compile_query(doc(R"({"$expr": {"$lt": ["$expiresAt", "$$NOW"]}})"));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->matches(doc(R"({"expiresAt": {"$date": 1000}})")));
  EXPECT_FALSE(m->matches(doc(R"({"expiresAt": {"$date": 32503680000000}})")));
  EXPECT_EQ(eval(R"({"$gt": [{"$add": ["$$NOW", 10000]}, "$$NOW"]})"), v("true"));
}

TEST(expression, expr_in_a_query) {
  auto m = compile_query(doc(R"({"$expr": {"$gt": ["$spent", "$budget"]}})"));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->matches(doc(R"({"spent": 10, "budget": 5})")));
  EXPECT_FALSE(m->matches(doc(R"({"spent": 1, "budget": 5})")));
  // Combined with ordinary predicates, and under $or / $nor.
  m = compile_query(doc(R"({"k": 1, "$or": [{"$expr": {"$eq": ["$a", "$b"]}}, {"z": 1}]})"));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->matches(doc(R"({"k": 1, "a": 2, "b": 2})")));
  EXPECT_FALSE(m->matches(doc(R"({"k": 2, "a": 2, "b": 2})")));
  EXPECT_FALSE(m->matches(doc(R"({"k": 1, "a": 2, "b": 3})")));
  // The filter a change stream uses to keep updates that touch `name` (or under or above it).
  const char* touches_name = R"({"$expr": {"$anyElementTrue": [{"$map": {
      "input": {"$objectToArray": "$updateDescription.updatedFields"}, "as": "f",
      "in": {"$or": [{"$eq": ["$$f.k", "name"]},
                     {"$eq": [{"$indexOfCP": ["$$f.k", "name."]}, 0]},
                     {"$eq": [{"$indexOfCP": ["name", {"$concat": ["$$f.k", "."]}]}, 0]}]}}}]}})";
  m = compile_query(doc(touches_name));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->matches(doc(R"({"updateDescription": {"updatedFields": {"name": "x"}}})")));
  EXPECT_TRUE(m->matches(doc(R"({"updateDescription": {"updatedFields": {"name.first": "x"}}})")));
  EXPECT_FALSE(m->matches(doc(R"({"updateDescription": {"updatedFields": {"names": "x"}}})")));
  EXPECT_FALSE(m->matches(doc(R"({"updateDescription": {"updatedFields": {"title": "x"}}})")));
  // A command's let.
  auto let = evaluate_let(&doc(R"({"l": {"min": 3}})").fields()[0].val);
  ASSERT_TRUE(let);
  m = compile_query(doc(R"({"$expr": {"$gte": ["$n", "$$min"]}})"), &*let);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->matches(doc(R"({"n": 3})")));
  EXPECT_FALSE(m->matches(doc(R"({"n": 2})")));
  // Parse errors are compile errors with MongoDB's code; run-time errors are thrown.
  auto bad = compile_query(doc(R"({"$expr": {"$frobnicate": 1}})"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, 168);
  EXPECT_FALSE(compile_query(doc(R"({"$expr": "$$undefinedVar"})")));
  m = compile_query(doc(R"({"$expr": {"$size": "$a"}})"));
  ASSERT_TRUE(m);
  EXPECT_THROW((void)m->matches(doc(R"({"a": 1})")), expression_error);
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
