// The operators of expression_math.cc, expression_string.cc, expression_convert.cc,
// expression_date.cc and $reduce, with MongoDB 6.0's results for null and missing, mixed numeric
// types and overflow, and its error codes and messages (expression.cpp, expression_convert.cpp,
// TimeZone::formatDate). Also the arity errors every operator shares.

#include "expression_cases.h"

namespace mongo_emulator::engine::testing {
namespace {

// 2020-01-02T03:04:05.006Z, a Thursday.
constexpr const char* thursday = R"({"d": {"$date": {"$numberLong": "1577934245006"}}})";

std::string error_text(const std::pair<int, std::string>& e) {
  return std::to_string(e.first) + " " + e.second;
}

TEST(expression_operators, arity_errors_are_mongodbs) {
  EXPECT_EQ(parse_error_message(R"({"$round": [1, 2, 3]})"),
            "Expression $round takes at least 1 arguments, and at most 2, but 3 were passed in.");
  expect_parse_error(R"({"$round": [1, 2, 3]})", 28667);
  expect_parse_error(R"({"$indexOfCP": ["a", "b", 1, 2, 3]})", 28667);
  EXPECT_EQ(parse_error_message(R"({"$ifNull": [1]})"),
            "$ifNull needs at least two arguments, had: 1");
  expect_parse_error(R"({"$mod": [1]})", 16020);
  expect_parse_error(R"({"$toUpper": ["a", "b"]})", 16020);
  EXPECT_EQ(parse_error_message(R"({"$toInt": [1, 2]})"),
            "$toInt requires a single argument, got 2");
  expect_parse_error(R"({"$toInt": [1, 2]})", 50723);
  // Not implemented by the emulator (MongoDB 6.0 has them): the unknown-operator error.
  expect_parse_error(R"({"$rand": {}})", 168);
  expect_parse_error(R"({"$function": {"body": "x", "args": [], "lang": "js"}})", 168);
}

TEST(expression_operators, mod_keeps_the_operand_types) {
  EXPECT_EQ(eval(R"({"$mod": [7, 3]})"), v(R"({"$numberInt": "1"})"));
  EXPECT_EQ(eval(R"({"$mod": [-7, 3]})"), v(R"({"$numberInt": "-1"})"));
  EXPECT_EQ(eval(R"({"$mod": [7, 2.0]})"), v(R"({"$numberInt": "1"})"));  // a whole divisor
  EXPECT_EQ(eval(R"({"$mod": [7.5, 2]})"), v(R"({"$numberDouble": "1.5"})"));
  EXPECT_EQ(eval(R"({"$mod": [7, 2.5]})"), v(R"({"$numberDouble": "2.0"})"));
  EXPECT_EQ(eval(R"({"$mod": [{"$numberLong": "7"}, 3]})"), v(R"({"$numberLong": "1"})"));
  EXPECT_EQ(eval(R"({"$mod": [{"$numberDecimal": "7.5"}, 2]})"), v(R"({"$numberDecimal": "1.5"})"));
  EXPECT_EQ(eval(R"({"$mod": [-2147483648, -1]})"), v(R"({"$numberInt": "0"})"));
  EXPECT_EQ(eval(R"({"$mod": [null, 1]})"), v("null"));
  EXPECT_EQ(eval(R"({"$mod": ["$missing", 1]})"), v("null"));
  EXPECT_EQ(error_text(run_error(R"({"$mod": [1, 0]})")), "16610 can't $mod by zero");
  EXPECT_EQ(run_error(R"({"$mod": [1.5, 0.0]})").first, 16610);
  EXPECT_EQ(run_error(R"({"$mod": [1, {"$numberDecimal": "0"}]})").first, 16610);
  EXPECT_EQ(error_text(run_error(R"({"$mod": ["a", 1]})")),
            "16611 $mod only supports numeric types, not string and int");
}

TEST(expression_operators, abs_widens_int32_min_and_refuses_int64_min) {
  EXPECT_EQ(eval(R"({"$abs": -5})"), v(R"({"$numberInt": "5"})"));
  EXPECT_EQ(eval(R"({"$abs": -2147483648})"), v(R"({"$numberLong": "2147483648"})"));
  EXPECT_EQ(eval(R"({"$abs": {"$numberLong": "-3"}})"), v(R"({"$numberLong": "3"})"));
  EXPECT_EQ(eval(R"({"$abs": -1.5})"), v("1.5"));
  EXPECT_EQ(eval(R"({"$abs": {"$numberDecimal": "-2.50"}})"), v(R"({"$numberDecimal": "2.50"})"));
  EXPECT_EQ(eval(R"({"$abs": null})"), v("null"));
  EXPECT_EQ(eval(R"({"$abs": "$missing"})"), v("null"));
  EXPECT_EQ(error_text(run_error(R"({"$abs": {"$numberLong": "-9223372036854775808"}})")),
            "28680 can't take $abs of long long min");
  EXPECT_EQ(error_text(run_error(R"({"$abs": "x"})")),
            "28765 $abs only supports numeric types, not string");
}

TEST(expression_operators, round_goes_half_to_even_through_decimal) {
  EXPECT_EQ(eval(R"({"$round": 2.5})"), v(R"({"$numberDouble": "2.0"})"));
  EXPECT_EQ(eval(R"({"$round": [3.5, 0]})"), v(R"({"$numberDouble": "4.0"})"));
  EXPECT_EQ(eval(R"({"$round": -2.5})"), v(R"({"$numberDouble": "-2.0"})"));
  EXPECT_EQ(eval(R"({"$round": [1.2345, 2]})"), v("1.23"));
  // 1.235 is 1.2350000000000000977 as a double: above the half.
  EXPECT_EQ(eval(R"({"$round": [1.235, 2]})"), v("1.24"));
  EXPECT_EQ(eval(R"({"$round": [1234, -2]})"), v(R"({"$numberInt": "1200"})"));
  EXPECT_EQ(eval(R"({"$round": [1250, -2]})"), v(R"({"$numberInt": "1200"})"));
  EXPECT_EQ(eval(R"({"$round": [1350, -2]})"), v(R"({"$numberInt": "1400"})"));
  EXPECT_EQ(eval(R"({"$round": [{"$numberLong": "1234567"}, -3]})"),
            v(R"({"$numberLong": "1235000"})"));
  EXPECT_EQ(eval(R"({"$round": [5, 2]})"), v(R"({"$numberInt": "5"})"));
  EXPECT_EQ(eval(R"({"$round": [{"$numberDecimal": "1.2345"}, 2]})"),
            v(R"({"$numberDecimal": "1.23"})"));
  EXPECT_EQ(eval(R"({"$round": [{"$numberDecimal": "2.5"}]})"), v(R"({"$numberDecimal": "2"})"));
  EXPECT_EQ(eval(R"({"$round": [{"$numberDouble": "Infinity"}, 1]})"),
            v(R"({"$numberDouble": "Infinity"})"));
  EXPECT_EQ(eval(R"({"$round": [null, 1]})"), v("null"));
  EXPECT_EQ(eval(R"({"$round": [1.5, null]})"), v("null"));
  EXPECT_EQ(eval(R"({"$round": "$missing"})"), v("null"));
  EXPECT_EQ(error_text(run_error(R"({"$round": "x"})")),
            "51081 $round only supports numeric types, not string");
  EXPECT_EQ(error_text(run_error(R"({"$round": [1, 1.5]})")),
            "51082 precision argument to  $round must be a integral value");
  EXPECT_EQ(error_text(run_error(R"({"$round": [1, 101]})")),
            "51083 cannot apply $round with precision value 101 value must be in [-20, 100]");
  EXPECT_EQ(error_text(run_error(R"({"$round": [1, "x"]})")),
            "16004 can't convert from BSON type string to long");
}

TEST(expression_operators, trunc_rounds_toward_zero_at_a_place) {
  EXPECT_EQ(eval(R"({"$trunc": 2.7})"), v(R"({"$numberDouble": "2.0"})"));
  EXPECT_EQ(eval(R"({"$trunc": -2.7})"), v(R"({"$numberDouble": "-2.0"})"));
  EXPECT_EQ(eval(R"({"$trunc": [1.239, 2]})"), v("1.23"));
  EXPECT_EQ(eval(R"({"$trunc": [1299, -2]})"), v(R"({"$numberInt": "1200"})"));
  EXPECT_EQ(eval(R"({"$trunc": [{"$numberDecimal": "-1.99"}, 1]})"),
            v(R"({"$numberDecimal": "-1.9"})"));
  EXPECT_EQ(eval(R"({"$trunc": null})"), v("null"));
  EXPECT_EQ(run_error(R"({"$trunc": [1, -21]})").first, 51083);
}

TEST(expression_operators, to_upper_and_lower_coerce_to_a_string) {
  EXPECT_EQ(eval(R"({"$toUpper": "abc é"})"), v(R"("ABC é")"));  // ASCII letters only
  EXPECT_EQ(eval(R"({"$toLower": "ABC"})"), v(R"("abc")"));
  EXPECT_EQ(eval(R"({"$toUpper": 5})"), v(R"("5")"));
  EXPECT_EQ(eval(R"({"$toUpper": 1.5})"), v(R"("1.5")"));
  EXPECT_EQ(eval(R"({"$toUpper": null})"), v(R"("")"));
  EXPECT_EQ(eval(R"({"$toUpper": "$missing"})"), v(R"("")"));
  EXPECT_EQ(eval(R"({"$toLower": "$d"})", thursday), v(R"("2020-01-02t03:04:05.006z")"));
  EXPECT_EQ(error_text(run_error(R"({"$toUpper": [[1]]})")),
            "16007 can't convert from BSON type array to String");
}

TEST(expression_operators, trim_removes_code_points) {
  EXPECT_EQ(eval(R"({"$trim": {"input": "  a b \n"}})"), v(R"("a b")"));
  EXPECT_EQ(eval(R"({"$ltrim": {"input": "  a  "}})"), v(R"("a  ")"));
  EXPECT_EQ(eval(R"({"$rtrim": {"input": "  a  "}})"), v(R"("  a")"));
  EXPECT_EQ(eval(R"({"$trim": {"input": "\u00a0a\u3000"}})"), v(R"("a")"));
  EXPECT_EQ(eval(R"({"$trim": {"input": "xxaxx", "chars": "x"}})"), v(R"("a")"));
  EXPECT_EQ(eval(R"({"$trim": {"input": "éaé", "chars": "é"}})"), v(R"("a")"));
  EXPECT_EQ(eval(R"({"$trim": {"input": null}})"), v("null"));
  EXPECT_EQ(eval(R"({"$trim": {"input": "$missing"}})"), v("null"));
  EXPECT_EQ(eval(R"({"$trim": {"input": "a", "chars": null}})"), v("null"));
  EXPECT_EQ(error_text(run_error(R"({"$trim": {"input": 5}})")),
            "50699 $trim requires its input to be a string, got 5 (of type int) instead.");
  EXPECT_EQ(run_error(R"({"$ltrim": {"input": "a", "chars": 5}})").first, 50700);
  expect_parse_error(R"({"$trim": "a"})", 50696);
  expect_parse_error(R"({"$trim": {"input": "a", "x": 1}})", 50694);
  expect_parse_error(R"({"$trim": {"chars": "a"}})", 50695);
}

TEST(expression_operators, to_int_parses_strings_and_fails_with_conversion_failure) {
  EXPECT_EQ(eval(R"({"$toInt": "42"})"), v(R"({"$numberInt": "42"})"));
  EXPECT_EQ(eval(R"({"$toInt": "-2147483648"})"), v(R"({"$numberInt": "-2147483648"})"));
  EXPECT_EQ(eval(R"({"$toInt": 1.9})"), v(R"({"$numberInt": "1"})"));
  EXPECT_EQ(eval(R"({"$toInt": [true]})"), v(R"({"$numberInt": "1"})"));
  EXPECT_EQ(eval(R"({"$toInt": null})"), v("null"));
  EXPECT_EQ(error_text(run_error(R"({"$toInt": "abc"})")),
            "241 Failed to parse number 'abc' in $convert with no onError value: Did not consume "
            "whole string.");
  EXPECT_EQ(error_text(run_error(R"({"$toInt": ""})")),
            "241 Failed to parse number '' in $convert with no onError value: No digits");
  EXPECT_EQ(error_text(run_error(R"({"$toInt": "2147483648"})")),
            "241 Failed to parse number '2147483648' in $convert with no onError value: Overflow");
  EXPECT_EQ(error_text(run_error(R"({"$toInt": "1.5"})")),
            "241 Failed to parse number '1.5' in $convert with no onError value: Did not consume "
            "whole string.");
  EXPECT_EQ(error_text(run_error(R"({"$toInt": "0x1F"})")),
            "241 Illegal hexadecimal input in $convert with no onError value: 0x1F");
  EXPECT_EQ(error_text(run_error(R"({"$toInt": 3e9})")),
            "241 Conversion would overflow target type in $convert with no onError value: 3e+09");
  EXPECT_EQ(error_text(run_error(R"({"$toInt": {"$numberDouble": "NaN"}})")),
            "241 Attempt to convert NaN value to integer type in $convert with no onError value");
  EXPECT_EQ(error_text(run_error(R"({"$toInt": "$d"})", thursday)),
            "241 Unsupported conversion from date to int in $convert with no onError value");
}

TEST(expression_operators, to_long_and_to_double) {
  EXPECT_EQ(eval(R"({"$toLong": "9223372036854775807"})"),
            v(R"({"$numberLong": "9223372036854775807"})"));
  EXPECT_EQ(eval(R"({"$toLong": "-9223372036854775808"})"),
            v(R"({"$numberLong": "-9223372036854775808"})"));
  EXPECT_EQ(eval(R"({"$toLong": 5})"), v(R"({"$numberLong": "5"})"));
  EXPECT_EQ(eval(R"({"$toLong": -1.5})"), v(R"({"$numberLong": "-1"})"));
  EXPECT_EQ(eval(R"({"$toLong": "$d"})", thursday), v(R"({"$numberLong": "1577934245006"})"));
  EXPECT_EQ(eval(R"({"$toLong": {"$numberDecimal": "12.9"}})"), v(R"({"$numberLong": "12"})"));
  EXPECT_EQ(run_error(R"({"$toLong": "9223372036854775808"})").first, 241);
  EXPECT_EQ(error_text(run_error(R"({"$toLong": {"$numberDecimal": "1E+30"}})")),
            "241 Conversion would overflow target type in $convert with no onError value: 1E+30");
  EXPECT_EQ(eval(R"({"$toDouble": "1.5"})"), v("1.5"));
  EXPECT_EQ(eval(R"({"$toDouble": true})"), v(R"({"$numberDouble": "1.0"})"));
  EXPECT_EQ(eval(R"({"$toDouble": {"$numberLong": "7"}})"), v(R"({"$numberDouble": "7.0"})"));
  EXPECT_EQ(eval(R"({"$toDouble": {"$numberDecimal": "0.25"}})"), v("0.25"));
  EXPECT_EQ(error_text(run_error(R"({"$toDouble": "abc"})")),
            "241 Failed to parse number 'abc' in $convert with no onError value: Did not consume "
            "any digits");
  EXPECT_EQ(error_text(run_error(R"({"$toDouble": "1e400"})")),
            "241 Failed to parse number '1e400' in $convert with no onError value: Out of range");
  EXPECT_EQ(error_text(run_error(R"({"$toDouble": {"$numberDecimal": "1E+400"}})")),
            "241 Conversion would overflow target type in $convert with no onError value: 1E+400");
}

TEST(expression_operators, to_decimal_bool_string_and_object_id) {
  EXPECT_EQ(eval(R"({"$toDecimal": 2.5})"), v(R"({"$numberDecimal": "2.50000000000000"})"));
  EXPECT_EQ(eval(R"({"$toDecimal": 5})"), v(R"({"$numberDecimal": "5"})"));
  EXPECT_EQ(eval(R"({"$toDecimal": "1.25"})"), v(R"({"$numberDecimal": "1.25"})"));
  EXPECT_EQ(eval(R"({"$toDecimal": true})"), v(R"({"$numberDecimal": "1"})"));
  EXPECT_EQ(error_text(run_error(R"({"$toDecimal": "abc"})")),
            "241 Failed to parse number 'abc' in $convert with no onError value: Failed to parse "
            "string to decimal");
  EXPECT_EQ(eval(R"({"$toBool": 0})"), v("false"));
  EXPECT_EQ(eval(R"({"$toBool": {"$numberDecimal": "0"}})"), v("false"));
  EXPECT_EQ(eval(R"({"$toBool": "false"})"), v("true"));  // every string is true
  EXPECT_EQ(eval(R"({"$toBool": [[]]})"), v("true"));
  EXPECT_EQ(eval(R"({"$toBool": null})"), v("null"));
  EXPECT_EQ(eval(R"({"$toString": 5})"), v(R"("5")"));
  EXPECT_EQ(eval(R"({"$toString": {"$numberLong": "-5"}})"), v(R"("-5")"));
  EXPECT_EQ(eval(R"({"$toString": 2.5})"), v(R"("2.5")"));
  EXPECT_EQ(eval(R"({"$toString": -0.0})"), v(R"("-0")"));
  EXPECT_EQ(eval(R"({"$toString": true})"), v(R"("true")"));
  EXPECT_EQ(eval(R"({"$toString": {"$numberDecimal": "1.50"}})"), v(R"("1.50")"));
  EXPECT_EQ(eval(R"({"$toString": "$d"})", thursday), v(R"("2020-01-02T03:04:05.006Z")"));
  EXPECT_EQ(eval(R"({"$toString": {"$oid": "5f0c3b9a1c9d440000a1b2c3"}})"),
            v(R"("5f0c3b9a1c9d440000a1b2c3")"));
  EXPECT_EQ(eval(R"({"$toObjectId": "5f0c3b9a1c9d440000a1b2c3"})"),
            v(R"({"$oid": "5f0c3b9a1c9d440000a1b2c3"})"));
  // An ObjectId's creation time: 0x5f0c3b9a seconds.
  EXPECT_EQ(eval(R"({"$toDate": {"$oid": "5f0c3b9a1c9d440000a1b2c3"}})"),
            v(R"({"$date": {"$numberLong": "1594637210000"}})"));
  EXPECT_EQ(eval(R"({"$toDate": {"$numberLong": "1000"}})"),
            v(R"({"$date": {"$numberLong": "1000"}})"));
  EXPECT_EQ(error_text(run_error(R"({"$toDate": 5})")),
            "241 Unsupported conversion from int to date in $convert with no onError value");
  EXPECT_EQ(error_text(run_error(R"({"$toString": {"$literal": {"a": 1}}})")),
            "241 Unsupported conversion from object to string in $convert with no onError value");
  EXPECT_EQ(error_text(run_error(R"({"$toObjectId": "abc"})")),
            "241 Failed to parse objectId 'abc' in $convert with no onError value: Invalid string "
            "length for parsing to OID, expected 24 but found 3");
}

TEST(expression_operators, convert_takes_names_or_codes_and_catches_only_conversion_failures) {
  EXPECT_EQ(eval(R"({"$convert": {"input": "5", "to": "int"}})"), v(R"({"$numberInt": "5"})"));
  EXPECT_EQ(eval(R"({"$convert": {"input": "5", "to": 18}})"), v(R"({"$numberLong": "5"})"));
  EXPECT_EQ(eval(R"({"$convert": {"input": "abc", "to": "int", "onError": -1}})"), v("-1"));
  EXPECT_EQ(eval(R"({"$convert": {"input": null, "to": "int", "onNull": 0}})"), v("0"));
  EXPECT_EQ(eval(R"({"$convert": {"input": "$missing", "to": "int", "onNull": "n"}})"),
            v(R"("n")"));
  EXPECT_EQ(eval(R"({"$convert": {"input": "$missing", "to": "int"}})"), v("null"));
  EXPECT_EQ(eval(R"({"$convert": {"input": 1, "to": null}})"), v("null"));
  EXPECT_EQ(eval(R"({"$convert": {"input": 1, "to": "$t"}})", R"({"t": "string"})"), v(R"("1")"));
  EXPECT_EQ(error_text(run_error(R"({"$convert": {"input": 1, "to": "foo", "onError": 0}})")),
            "2 Unknown type name: foo");
  EXPECT_EQ(run_error(R"({"$convert": {"input": null, "to": "foo"}})").first, 2);
  EXPECT_EQ(error_text(run_error(R"({"$convert": {"input": 1, "to": 1.5}})")),
            "9 In $convert, numeric 'to' argument is not an integer");
  EXPECT_EQ(error_text(run_error(R"({"$convert": {"input": 1, "to": 100}})")),
            "9 In $convert, numeric value for 'to' does not correspond to a BSON type: 100");
  EXPECT_EQ(error_text(run_error(R"({"$convert": {"input": 1, "to": true}})")),
            "9 $convert's 'to' argument must be a string or number, but is bool");
  EXPECT_EQ(error_text(run_error(R"({"$convert": {"input": 1, "to": "null"}})")),
            "241 Unsupported conversion from int to null in $convert with no onError value");
  // onError catches conversion failures only: an error inside `input` propagates.
  EXPECT_EQ(
      run_error(R"({"$convert": {"input": {"$divide": [1, 0]}, "to": "int", "onError": 0}})").first,
      2);
  EXPECT_EQ(parse_error_message(R"({"$convert": {"to": "int"}})"),
            "Missing 'input' parameter to $convert");
  EXPECT_EQ(parse_error_message(R"({"$convert": {"input": 1}})"),
            "Missing 'to' parameter to $convert");
  expect_parse_error(R"({"$convert": {"input": 1, "to": "int", "x": 1}})", 9);
  expect_parse_error(R"({"$convert": 1})", 9);
}

TEST(expression_operators, date_to_string_formats_and_offsets) {
  EXPECT_EQ(eval(R"({"$dateToString": {"date": "$d"}})", thursday),
            v(R"("2020-01-02T03:04:05.006Z")"));
  EXPECT_EQ(
      eval(R"({"$dateToString": {"date": "$d", "format": "%Y-%m-%d %H:%M:%S.%L %%"}})", thursday),
      v(R"("2020-01-02 03:04:05.006 %")"));
  EXPECT_EQ(eval(R"({"$dateToString": {"date": "$d", "format": "%j %w %u %U %G-%V"}})", thursday),
            v(R"("002 5 4 00 2020-01")"));
  // 2021-01-01, a Friday, is in ISO week 53 of 2020.
  EXPECT_EQ(eval(R"({"$dateToString": {"date": {"$date": {"$numberLong": "1609459200000"}},
                                       "format": "%G-%V %U %w"}})"),
            v(R"("2020-53 00 6")"));
  EXPECT_EQ(eval(R"({"$dateToString": {"date": "$d", "format": "%H:%M %z %Z",
                                       "timezone": "+05:30"}})",
                 thursday),
            v(R"("08:34 +0530 330")"));
  EXPECT_EQ(eval(R"({"$dateToString": {"date": "$d", "format": "%Y-%m-%d %H %z",
                                       "timezone": "-0800"}})",
                 thursday),
            v(R"("2020-01-01 19 -0800")"));
  EXPECT_EQ(eval(R"({"$dateToString": {"date": {"$date": {"$numberLong": "-1"}}}})"),
            v(R"("1969-12-31T23:59:59.999Z")"));
  EXPECT_EQ(eval(R"({"$dateToString": {"date": {"$timestamp": {"t": 1577934245, "i": 1}}}})"),
            v(R"("2020-01-02T03:04:05.000Z")"));
  EXPECT_EQ(eval(R"({"$dateToString": {"date": null, "onNull": "none"}})"), v(R"("none")"));
  EXPECT_EQ(eval(R"({"$dateToString": {"date": "$missing"}})"), v("null"));
  EXPECT_EQ(eval(R"({"$dateToString": {"date": "$d", "format": null}})", thursday), v("null"));
  EXPECT_EQ(eval(R"({"$dateToString": {"date": "$d", "timezone": null}})", thursday), v("null"));
}

TEST(expression_operators, date_to_string_errors) {
  EXPECT_EQ(error_text(run_error(R"({"$dateToString": {"date": "$d", "timezone": "Not/AZone"}})",
                                 thursday)),
            "40485 unrecognized time zone identifier: \"Not/AZone\"");
  EXPECT_EQ(error_text(run_error(R"({"$dateToString": {"date": "$d", "timezone": 5}})", thursday)),
            "40517 timezone must evaluate to a string, found int");
  EXPECT_EQ(error_text(run_error(R"({"$dateToString": {"date": "x"}})")),
            "16006 can't convert from BSON type string to Date");
  EXPECT_EQ(error_text(run_error(R"({"$dateToString": {"date": "$d", "format": "$f"}})",
                                 R"({"d": {"$date": {"$numberLong": "0"}}, "f": "%Q"})")),
            "18536 Invalid format character '%Q' in format string");
  EXPECT_EQ(parse_error_message(R"({"$dateToString": {"date": 1, "format": "%Q"}})"),
            "Invalid format character '%Q' in format string");
  expect_parse_error(R"({"$dateToString": {"date": 1, "format": "abc%"}})", 18535);
  expect_parse_error(R"({"$dateToString": {"date": 1, "format": 5}})", 18533);
  expect_parse_error(R"({"$dateToString": {"date": 1, "x": 5}})", 18534);
  expect_parse_error(R"({"$dateToString": {"format": "%Y"}})", 18628);
  expect_parse_error(R"({"$dateToString": 1})", 18629);
}

TEST(expression_operators, year_month_day_of_month_in_a_time_zone) {
  EXPECT_EQ(eval(R"({"$year": "$d"})", thursday), v(R"({"$numberInt": "2020"})"));
  EXPECT_EQ(eval(R"({"$month": ["$d"]})", thursday), v(R"({"$numberInt": "1"})"));
  EXPECT_EQ(eval(R"({"$dayOfMonth": {"date": "$d"}})", thursday), v(R"({"$numberInt": "2"})"));
  constexpr const char* new_year = R"({"d": {"$date": {"$numberLong": "1609462800000"}}})";
  EXPECT_EQ(eval(R"({"$year": {"date": "$d", "timezone": "-05:00"}})", new_year), v("2020"));
  EXPECT_EQ(eval(R"({"$month": {"date": "$d", "timezone": "-05"}})", new_year), v("12"));
  EXPECT_EQ(eval(R"({"$dayOfMonth": {"date": "$d", "timezone": "-05:00"}})", new_year), v("31"));
  EXPECT_EQ(eval(R"({"$year": {"$oid": "5f0c3b9a1c9d440000a1b2c3"}})"), v("2020"));
  EXPECT_EQ(eval(R"({"$year": null})"), v("null"));
  EXPECT_EQ(eval(R"({"$year": {"date": "$d", "timezone": null}})", thursday), v("null"));
  EXPECT_EQ(run_error(R"({"$month": "x"})").first, 16006);
  expect_parse_error(R"({"$year": {"date": 1, "foo": 2}})", 40535);
  expect_parse_error(R"({"$year": {}})", 40539);
  expect_parse_error(R"({"$year": [1, 2]})", 40536);
}

TEST(expression_operators, reduce_folds_with_this_and_value) {
  EXPECT_EQ(eval(R"({"$reduce": {"input": [1, 2, 3], "initialValue": 0,
                                 "in": {"$add": ["$$value", "$$this"]}}})"),
            v("6"));
  EXPECT_EQ(eval(R"({"$reduce": {"input": "$a", "initialValue": "",
                                 "in": {"$concat": ["$$value", "$$this"]}}})",
                 R"({"a": ["x", "y"]})"),
            v(R"("xy")"));
  EXPECT_EQ(eval(R"({"$reduce": {"input": [], "initialValue": 7, "in": 0}})"), v("7"));
  EXPECT_EQ(eval(R"({"$reduce": {"input": null, "initialValue": 7, "in": 0}})"), v("null"));
  EXPECT_EQ(eval(R"({"$reduce": {"input": [], "initialValue": "$missing", "in": 0}})"), "missing");
  EXPECT_EQ(eval(R"({"$reduce": {"input": [[1, 2], [3]], "initialValue": [],
                                 "in": {"$concatArrays": ["$$value", "$$this"]}}})"),
            v("[1, 2, 3]"));
  EXPECT_EQ(error_text(run_error(R"({"$reduce": {"input": 5, "initialValue": 0, "in": 0}})")),
            "40080 $reduce requires that 'input' be an array, found: 5");
  expect_parse_error(R"({"$reduce": 1})", 40075);
  expect_parse_error(R"({"$reduce": {"input": [], "initialValue": 0, "in": 0, "x": 1}})", 40076);
  expect_parse_error(R"({"$reduce": {"initialValue": 0, "in": 0}})", 40077);
  expect_parse_error(R"({"$reduce": {"input": [], "in": 0}})", 40078);
  expect_parse_error(R"({"$reduce": {"input": [], "initialValue": 0}})", 40079);
  expect_parse_error(R"({"$reduce": {"input": [], "initialValue": "$$this", "in": 0}})", 17276);
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
