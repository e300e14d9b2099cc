#include "http/yaml_node.h"

#include <yaml.h>

namespace denormd::http {

namespace {

// A tree bigger than this came from aliases multiplying it (the "billion laughs"), not from a
// configuration anyone wrote.
constexpr int max_depth = 64;
constexpr std::size_t max_nodes = 100000;

// libyaml's parser and a document it loaded, freed with it.
struct parser_guard {
  yaml_parser_t parser{};
  bool initialized = false;
  ~parser_guard() {
    if (initialized) yaml_parser_delete(&parser);
  }
};
struct document_guard {
  yaml_document_t doc{};
  bool loaded = false;  // libyaml frees a document it failed to load itself
  ~document_guard() {
    if (loaded) yaml_document_delete(&doc);
  }
};

std::string at_line(std::size_t line) {
  return "line " + std::to_string(line + 1);
}

// libyaml's own description of a syntax error.
denormd::unexpected<denormd::error> syntax_error(const yaml_parser_t& p) {
  std::string what = p.problem != nullptr ? p.problem : "malformed YAML";
  if (p.context != nullptr) what = std::string(p.context) + ": " + what;
  return fail(at_line(p.problem_mark.line) + " column " +
              std::to_string(p.problem_mark.column + 1) + ": " + what);
}

bool is_null_scalar(std::string_view v) {
  return v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL";
}

// Copies libyaml's node `n` of `doc` into a yaml_node, counting nodes against max_nodes.
class converter {
 public:
  explicit converter(yaml_document_t& doc) : doc_(doc) {}

  expected<yaml_node> convert(yaml_node_t* n, int depth) {
    if (depth > max_depth) return fail(at_line(n->start_mark.line) + ": nested too deep");
    if (++count_ > max_nodes) return fail("too many nodes (aliases expand to over 100,000)");
    yaml_node out;
    out.line = static_cast<int>(n->start_mark.line) + 1;
    switch (n->type) {
      case YAML_SCALAR_NODE: {
        out.text.assign(reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length);
        out.plain = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        out.type =
            out.plain && is_null_scalar(out.text) ? yaml_node::kind::null : yaml_node::kind::scalar;
        return out;
      }
      case YAML_SEQUENCE_NODE:
        out.type = yaml_node::kind::sequence;
        for (auto* i = n->data.sequence.items.start; i < n->data.sequence.items.top; ++i) {
          auto item = convert(yaml_document_get_node(&doc_, *i), depth + 1);
          if (!item) return item.error();
          out.items.push_back(std::move(item).value());
        }
        return out;
      case YAML_MAPPING_NODE:
        out.type = yaml_node::kind::mapping;
        if (auto st = convert_pairs(n, depth, out); !st) return st.error();
        return out;
      case YAML_NO_NODE:
        break;
    }
    return out;
  }

 private:
  status convert_pairs(yaml_node_t* n, int depth, yaml_node& out) {
    for (auto* p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; ++p) {
      yaml_node_t* key = yaml_document_get_node(&doc_, p->key);
      if (key->type != YAML_SCALAR_NODE)
        return fail(at_line(key->start_mark.line) + ": a key must be a plain string");
      std::string name(reinterpret_cast<const char*>(key->data.scalar.value),
                       key->data.scalar.length);
      if (out.find(name) != nullptr)
        return fail(at_line(key->start_mark.line) + ": key \"" + name + "\" appears twice");
      auto value = convert(yaml_document_get_node(&doc_, p->value), depth + 1);
      if (!value) return value.error();
      out.entries.emplace_back(std::move(name), std::move(value).value());
    }
    return {};
  }

  yaml_document_t& doc_;
  std::size_t count_ = 0;
};

}  // namespace

const yaml_node* yaml_node::find(std::string_view key) const {
  for (const auto& [name, value] : entries) {
    if (name == key) return &value;
  }
  return nullptr;
}

expected<yaml_node> parse_yaml(std::string_view text) {
  parser_guard p;
  p.initialized = yaml_parser_initialize(&p.parser) != 0;
  if (!p.initialized) return fail("cannot start the YAML parser");
  yaml_parser_set_input_string(&p.parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  document_guard first;
  first.loaded = yaml_parser_load(&p.parser, &first.doc) != 0;
  if (!first.loaded) return syntax_error(p.parser);
  yaml_node_t* root = yaml_document_get_root_node(&first.doc);
  if (root == nullptr) return yaml_node{};  // an empty stream
  auto converted = converter(first.doc).convert(root, 0);
  if (!converted) return converted.error();
  document_guard second;
  second.loaded = yaml_parser_load(&p.parser, &second.doc) != 0;
  if (!second.loaded) return syntax_error(p.parser);
  if (const yaml_node_t* more = yaml_document_get_root_node(&second.doc); more != nullptr)
    return fail(at_line(more->start_mark.line) + ": a second document (the file holds one)");
  return converted;
}

}  // namespace denormd::http
