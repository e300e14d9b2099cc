#pragma once
// One update operator applied to one path (MongoDB's UpdateLeafNode subclasses): parsing and
// validating its operand, computing the new value of an existing field or of a field it
// creates. Where in the document it applies, logging and `_id` checks live in update_applier.
// Lifecycle: built by parse_update, immutable afterwards; safe to share between threads.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"
#include "query/matcher.h"

namespace mongo_emulator::engine {

enum class op_kind {
  set,
  set_on_insert,
  unset,
  inc,
  mul,
  min,
  max,
  current_date,
  bit,
  push,
  add_to_set,
  pull,
  pull_all,
  pop,
  rename,                // placed at the destination path
  conflict_placeholder,  // the source path of a $rename: occupies it, does nothing
};

// The operator table: "$set" -> op_kind::set; nullopt for an unknown name.
std::optional<op_kind> op_kind_from_name(std::string_view name);

// What applying an operator to an existing value did (ModifierNode::ModifyResult).
struct modify_result {
  enum class kind { noop, normal, appended };
  kind k = kind::noop;
  std::size_t appended = 0;  // for `appended`: the number of elements added at the end
};

// Values an operator may need from the surrounding update.
struct modifier_inputs {
  std::string id_text;  // "_id: 1", or "no id"; MongoDB quotes it in several errors
  std::string path;     // dotted path of the value being updated
  std::string field;    // its last component
  denormd::bson::date_time now;
  denormd::bson::timestamp now_timestamp;
};

class modifier {
 public:
  // Parses {<op>: {<field>: <arg>}} (UpdateLeafNode::init); the error is MongoDB's.
  static denormd::expected<modifier> parse(op_kind op, const std::string& field,
                                           const denormd::bson::value& arg);

  op_kind kind() const { return kind_; }
  bool creates_paths() const;      // allowCreation(): the operator creates a missing path
  bool allows_non_viable() const;  // only $unset ignores a path blocked by a scalar
  bool insert_only() const { return kind_ == op_kind::set_on_insert; }
  // $rename: the source path (the modifier sits at the destination path).
  const std::string& rename_from() const { return rename_from_; }

  // Modifies `target` (an existing value) in place.
  denormd::expected<modify_result> update_existing(denormd::bson::value& target,
                                                   const modifier_inputs& in) const;
  // The value of a field the operator creates.
  denormd::bson::value new_value(const modifier_inputs& in) const;

 private:
  struct push_sort {
    bool whole = true;
    int direction = 1;
    denormd::bson::document pattern;  // {field: 1|-1, ...} when !whole
  };
  enum class pull_form { equality, object, wrapped };

  denormd::expected<modify_result> push_into(denormd::bson::array& items) const;
  bool pull_matches(const denormd::bson::value& element) const;

  op_kind kind_ = op_kind::set;
  denormd::bson::value arg_;
  std::vector<denormd::bson::value> values_;  // $push, $addToSet (deduplicated), $pullAll
  std::optional<std::int64_t> position_;      // $push
  std::optional<std::int64_t> slice_;         // $push
  std::optional<push_sort> sort_;             // $push
  bool date_ = true;                          // $currentDate: date or timestamp
  bool pop_front_ = false;                    // $pop: -1
  std::vector<std::pair<int, denormd::bson::value>> bit_ops_;  // $bit: (0 and, 1 or, 2 xor)
  pull_form pull_form_ = pull_form::equality;
  std::optional<denormd::query::matcher> pull_matcher_;
  std::string rename_from_;
};

// Sorts like $push's $sort (PatternElementCmp): whole values, or documents by a pattern with
// missing fields (and non-documents) as null.
void sort_for_push(denormd::bson::array& items, bool whole, int direction,
                   const denormd::bson::document& pattern);

}  // namespace mongo_emulator::engine
