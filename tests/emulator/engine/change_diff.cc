#include "change_diff.h"

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

}  // namespace

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
