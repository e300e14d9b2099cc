#include "change_diff.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>

namespace mongo_emulator::engine {

namespace bson = denormd::bson;

std::string dotted(const runtime_path& path) {
  std::string out;
  for (const auto& c : path) {
    if (!out.empty()) out += '.';
    out += c.name;
  }
  return out;
}

bson::document update_description::to_document() && {
  bson::array removed;
  for (auto& r : removed_fields)
    removed.emplace_back(std::move(r));
  bson::array truncated;
  for (auto& t : truncated_arrays)
    truncated.emplace_back(std::move(t));
  bson::document out;
  out.append("updatedFields", std::move(updated_fields));
  out.append("removedFields", std::move(removed));
  out.append("truncatedArrays", std::move(truncated));
  return out;
}

bson::document update_description::to_document() const& {
  bson::array removed;
  for (const auto& r : removed_fields)
    removed.emplace_back(r);
  bson::array truncated;
  for (const auto& t : truncated_arrays)
    truncated.emplace_back(t);
  return bson::document{{"updatedFields", updated_fields},
                        {"removedFields", std::move(removed)},
                        {"truncatedArrays", std::move(truncated)}};
}

// Node kinds of MongoDB's v2 log builder. Document nodes keep their children in MongoDB's
// sections (updates, inserts, deletes, sub-diffs), each in the order they were logged.
struct change_diff::node {
  enum class kind { sub_diff, array, insert_document, update, insert, remove };
  kind k = kind::sub_diff;
  bson::value val;  // update, insert

  struct entry {
    std::string name;
    std::unique_ptr<node> child;
  };
  std::vector<entry> entries;                          // document-like nodes, in logging order
  std::map<std::size_t, std::unique_ptr<node>> items;  // array nodes, by index
  std::optional<std::size_t> resize;                   // array nodes: new (shorter) size

  node* find(const std::string& name) {
    if (k == kind::array) {
      const auto it = items.find(std::stoull(name));
      return it == items.end() ? nullptr : it->second.get();
    }
    for (auto& e : entries) {
      if (e.name == name) return e.child.get();
    }
    return nullptr;
  }

  node* add(const std::string& name, std::unique_ptr<node> child) {
    node* raw = child.get();
    if (k == kind::array) {
      items[std::stoull(name)] = std::move(child);
    } else {
      entries.push_back({name, std::move(child)});
    }
    return raw;
  }
};

namespace {

using node = change_diff::node;

std::unique_ptr<node> make_node(node::kind k, bson::value v = {}) {
  auto n = std::make_unique<node>();
  n->k = k;
  n->val = std::move(v);
  return n;
}

// mongo::v2_log_builder::V2LogBuilder::addNodeAtPath.
void add_at_path(node* root, const runtime_path& path, std::unique_ptr<node> leaf,
                 std::optional<std::size_t> first_new) {
  node* current = root;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const std::string& part = path[i].name;
    if (i + 1 == path.size()) {
      current->add(part, std::move(leaf));
      return;
    }
    if (node* child = current->find(part)) {
      current = child;
      continue;
    }
    const bool new_path = first_new && i >= *first_new;
    node::kind k = node::kind::sub_diff;
    if (path[i + 1].array_index) {
      k = node::kind::array;
    } else if (new_path) {
      k = node::kind::insert_document;
    }
    current = current->add(part, make_node(k));
  }
}

// The value an insert section carries: a created document is built from its inserts.
bson::value inserted_value(const node& n) {
  if (n.k != node::kind::insert_document) return n.val;
  bson::document d;
  for (const auto& e : n.entries)
    d.append(e.name, inserted_value(*e.child));
  return d;
}

bool is_leaf_value(const node& n) {
  return n.k == node::kind::update || n.k == node::kind::insert ||
         n.k == node::kind::insert_document;
}

// mongo::change_stream_document_diff_parser: updates, then inserts, then deletes, then
// sub-diffs of each document level; array entries by index.
void flatten(const node& n, const std::string& prefix, update_description& out) {
  if (n.k == node::kind::array) {
    if (n.resize) {
      out.truncated_arrays.push_back(
          bson::document{{"field", prefix.substr(0, prefix.size() - 1)},
                         {"newSize", static_cast<std::int32_t>(*n.resize)}});
    }
    for (const auto& [index, child] : n.items) {
      const std::string path = prefix + std::to_string(index);
      if (is_leaf_value(*child)) {
        out.updated_fields.append(path, inserted_value(*child));
      } else {
        flatten(*child, path + ".", out);
      }
    }
    return;
  }
  for (const auto& e : n.entries) {
    if (e.child->k == node::kind::update) out.updated_fields.append(prefix + e.name, e.child->val);
  }
  for (const auto& e : n.entries) {
    if (e.child->k == node::kind::insert || e.child->k == node::kind::insert_document) {
      out.updated_fields.append(prefix + e.name, inserted_value(*e.child));
    }
  }
  for (const auto& e : n.entries) {
    if (e.child->k == node::kind::remove) out.removed_fields.push_back(prefix + e.name);
  }
  for (const auto& e : n.entries) {
    if (e.child->k == node::kind::sub_diff || e.child->k == node::kind::array) {
      flatten(*e.child, prefix + e.name + ".", out);
    }
  }
}

// --- diff_documents: mongo::doc_diff::computeDocDiff / computeArrayDiff. Sizes are the
// approximate encoded sizes MongoDB's diff builder tracks to decide when a diff is not worth it.

std::size_t digits(std::size_t n) {
  std::size_t d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

std::size_t value_size(const bson::value& v);

std::size_t document_size(const bson::document& d) {
  std::size_t n = 5;
  for (const auto& f : d)
    n += 2 + f.name.size() + value_size(f.val);
  return n;
}

std::size_t array_size(const bson::array& a) {
  std::size_t n = 5;
  for (std::size_t i = 0; i < a.size(); ++i)
    n += 2 + digits(i) + value_size(a[i]);
  return n;
}

std::size_t value_size(const bson::value& v) {
  switch (v.kind()) {
    case bson::type::double_:
    case bson::type::date:
    case bson::type::timestamp:
    case bson::type::int64:
      return 8;
    case bson::type::int32:
      return 4;
    case bson::type::boolean:
      return 1;
    case bson::type::oid:
      return 12;
    case bson::type::decimal128:
      return 16;
    case bson::type::null:
    case bson::type::undefined:
    case bson::type::min_key:
    case bson::type::max_key:
      return 0;
    case bson::type::string:
      return 5 + v.as_string().size();
    case bson::type::code:
      return 5 + v.as<bson::code>().text.size();
    case bson::type::symbol:
      return 5 + v.as<bson::symbol>().text.size();
    case bson::type::binary:
      return 5 + v.as<bson::binary>().data.size();
    case bson::type::regex: {
      const auto& r = v.as<bson::regex>();
      return r.pattern.size() + r.options.size() + 2;
    }
    case bson::type::document:
      return document_size(v.as_document());
    case bson::type::array:
      return array_size(v.as_array());
  }
  return 0;
}

bool identical_value(const bson::value& a, const bson::value& b);

bool identical_document(const bson::document& a, const bson::document& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& x = a.fields()[i];
    const auto& y = b.fields()[i];
    if (x.name != y.name || !identical_value(x.val, y.val)) return false;
  }
  return true;
}

bool identical_value(const bson::value& a, const bson::value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case bson::type::double_:
      return std::bit_cast<std::uint64_t>(a.as<double>()) ==
             std::bit_cast<std::uint64_t>(b.as<double>());
    case bson::type::document:
      return identical_document(a.as_document(), b.as_document());
    case bson::type::array: {
      const auto& x = a.as_array();
      const auto& y = b.as_array();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!identical_value(x[i], y[i])) return false;
      }
      return true;
    }
    default:
      return a == b;
  }
}

// A diff node under construction with its tracked size.
struct sized_node {
  std::unique_ptr<node> n;
  std::size_t size = 0;
  bool has_updates = false, has_inserts = false, has_deletes = false;

  // DocumentSubDiffNode::addChild: the entry, the `s` prefix of a sub-diff, and the first
  // entry of each section wraps it in a sub-object.
  void add_field(const std::string& name, std::unique_ptr<node> child, std::size_t child_size) {
    size += name.size() + 2 + child_size;
    bool* section = nullptr;
    switch (child->k) {
      case node::kind::update:
        section = &has_updates;
        break;
      case node::kind::insert:
        section = &has_inserts;
        break;
      case node::kind::remove:
        section = &has_deletes;
        break;
      default:
        size += 1;
        break;
    }
    if (section != nullptr && !*section) {
      *section = true;
      size += 8;
    }
    n->add(name, std::move(child));
  }
  // ArrayNode::addChild: `u<index>` or `s<index>`.
  void add_item(std::size_t index, std::unique_ptr<node> child, std::size_t child_size) {
    size += 1 + digits(index) + 2 + child_size;
    n->items[index] = std::move(child);
  }
};

std::optional<sized_node> diff_document(const bson::document& pre, const bson::document& post,
                                        std::size_t padding);
std::optional<sized_node> diff_array(const bson::array& pre, const bson::array& post);

// calculateSubDiffHelper: both values are documents or both arrays.
template <typename Add>
void sub_diff(const bson::value& pre, const bson::value& post, Add add) {
  auto sub = pre.is_document() ? diff_document(pre.as_document(), post.as_document(), 0)
                               : diff_array(pre.as_array(), post.as_array());
  if (sub) {
    add(std::move(sub->n), sub->size);
  } else {
    add(make_node(node::kind::update, post), value_size(post));
  }
}

bool same_container_kind(const bson::value& a, const bson::value& b) {
  return (a.is_document() && b.is_document()) || (a.is_array() && b.is_array());
}

std::optional<sized_node> diff_array(const bson::array& pre, const bson::array& post) {
  sized_node out{make_node(node::kind::array), 9};
  const std::size_t post_size = array_size(post);
  std::size_t i = 0;
  for (; i < pre.size() && i < post.size(); ++i) {
    if (post_size < out.size) return std::nullopt;
    if (identical_value(pre[i], post[i])) continue;
    if (same_container_kind(pre[i], post[i])) {
      sub_diff(pre[i], post[i],
               [&](std::unique_ptr<node> c, std::size_t s) { out.add_item(i, std::move(c), s); });
    } else {
      out.add_item(i, make_node(node::kind::update, post[i]), value_size(post[i]));
    }
  }
  for (; i < post.size(); ++i)
    out.add_item(i, make_node(node::kind::update, post[i]), value_size(post[i]));
  if (pre.size() > post.size()) {
    out.n->resize = post.size();
    out.size += 7;
  }
  if (post_size > out.size) return out;
  return std::nullopt;
}

std::optional<sized_node> diff_document(const bson::document& pre, const bson::document& post,
                                        std::size_t padding) {
  sized_node out{make_node(node::kind::sub_diff), padding + 5};
  const std::size_t post_size = document_size(post);
  const auto& a = pre.fields();
  const auto& b = post.fields();
  std::size_t i = 0;
  std::size_t j = 0;
  std::vector<std::string> deletes;  // a std::set in MongoDB: logged in name order
  while (i < a.size() && j < b.size()) {
    if (post_size < out.size) return std::nullopt;
    if (a[i].name == b[j].name) {
      if (!identical_value(a[i].val, b[j].val)) {
        if (same_container_kind(a[i].val, b[j].val)) {
          sub_diff(a[i].val, b[j].val, [&](std::unique_ptr<node> c, std::size_t s) {
            out.add_field(a[i].name, std::move(c), s);
          });
        } else {
          out.add_field(a[i].name, make_node(node::kind::update, b[j].val), value_size(b[j].val));
        }
      }
      ++i;
      ++j;
    } else {
      deletes.push_back(a[i].name);
      ++i;
    }
  }
  for (; i < a.size(); ++i)
    out.add_field(a[i].name, make_node(node::kind::remove), 1);
  for (; j < b.size(); ++j) {
    out.add_field(b[j].name, make_node(node::kind::insert, b[j].val), value_size(b[j].val));
    std::erase(deletes, b[j].name);
  }
  std::sort(deletes.begin(), deletes.end());
  deletes.erase(std::unique(deletes.begin(), deletes.end()), deletes.end());
  for (const auto& name : deletes)
    out.add_field(name, make_node(node::kind::remove), 1);
  if (post_size > out.size) return out;
  return std::nullopt;
}

// update_oplog_entry::kSizeOfDeltaOplogEntryMetadata: room for the entry's `$v` and `diff`.
constexpr std::size_t delta_entry_metadata_size = 15;

}  // namespace

bool identical(const bson::document& a, const bson::document& b) {
  return identical_document(a, b);
}

std::optional<update_description> diff_documents(const bson::document& pre,
                                                 const bson::document& post) {
  auto diff = diff_document(pre, post, delta_entry_metadata_size);
  if (!diff) return std::nullopt;
  update_description out;
  flatten(*diff->n, "", out);
  return out;
}

change_diff::change_diff() : root_(make_node(node::kind::sub_diff)) {}
change_diff::~change_diff() = default;

void change_diff::updated(const runtime_path& path, bson::value v) {
  add_at_path(root_.get(), path, make_node(node::kind::update, std::move(v)), std::nullopt);
}

void change_diff::created(const runtime_path& path, std::size_t first_new, bson::value v) {
  add_at_path(root_.get(), path, make_node(node::kind::insert, std::move(v)), first_new);
}

void change_diff::deleted(const runtime_path& path) {
  add_at_path(root_.get(), path, make_node(node::kind::remove), std::nullopt);
}

update_description change_diff::describe() const {
  update_description out;
  flatten(*root_, "", out);
  return out;
}

}  // namespace mongo_emulator::engine
