#pragma once
// MongoDB projections: find's `projection` and the aggregation $project stage. Inclusion
// (with `_id` included unless excluded), exclusion, dotted and nested paths through arrays,
// computed fields (expression.h), and find's $slice and $elemMatch. The positional `a.$`
// projection and $meta are not supported (parse error, code 2).
// Lifecycle: parsed once, immutable; copies share state; safe to use from several threads.

#include <memory>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator::engine {

class projection {
 public:
  enum class flavour { find, aggregate };

  // `let`: the command's variables (evaluate_let), readable by computed fields.
  static denormd::expected<projection> parse(const denormd::bson::document& spec, flavour f,
                                             const denormd::bson::document* let = nullptr);

  denormd::bson::document apply(const denormd::bson::document& doc) const;
  bool is_inclusion() const { return inclusion_; }

  struct node;

 private:
  std::shared_ptr<const node> root_;
  bool inclusion_ = false;
};

// find's projection. An empty spec is an exclusion of nothing (the document unchanged).
denormd::expected<projection> parse_projection(const denormd::bson::document& spec);
denormd::bson::document apply(const projection& p, const denormd::bson::document& doc);

}  // namespace mongo_emulator::engine
