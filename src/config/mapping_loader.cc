#include "config/mapping_loader.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "bson/json.h"
#include "common/json_text.h"
#include "config/json_reader.h"
#include "mapping/computed_expression.h"
#include "mapping/kind_contract.h"

namespace denormd::config {

namespace {

using mapping::json;
using mapping::json_type;
using mapping::path_problem;
using mapping::spec_object;
using mapping::spec_reader;

// A mapping name: letters, digits, '_', '.', '-', not starting with a punctuation mark, at
// most max_name_length long. Checked by hand: std::regex recurses once per character and
// overflowed the stack on a 30,000-character name.
std::string name_problem(const std::string& name) {
  if (name.size() > max_name_length) {
    return "a name of " + std::to_string(name.size()) + " characters is too long (at most " +
           std::to_string(max_name_length) + ")";
  }
  const auto alnum = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  bool ok = !name.empty() && alnum(name[0]);
  for (std::size_t i = 1; ok && i < name.size(); ++i) {
    ok = alnum(name[i]) || name[i] == '_' || name[i] == '.' || name[i] == '-';
  }
  if (ok) return "";
  return "\"" + name + "\" is not a valid name (letters, digits, '_', '.', '-')";
}

void read_namespace(spec_object& o, mapping::ns& out, const std::string& default_db) {
  if (auto db = o.string("db", default_db.empty())) {
    out.db = *db;
    if (out.db.empty() || out.db.find_first_of("/\\. \"$") != std::string::npos) {
      o.error("db", "\"" + out.db + "\" is not a valid database name");
    }
  } else {
    out.db = default_db;
  }
  out.coll = o.string("collection", true).value_or("");
  if (o.get("collection", false) != nullptr &&
      (out.coll.empty() || out.coll.find('$') != std::string::npos ||
       out.coll.starts_with("system."))) {
    o.error("collection", "\"" + out.coll + "\" is not a collection denormd can use");
  }
}

// The names of every kind, for messages: "copy" or "recent".
std::string kind_names() {
  std::string out;
  const std::size_t n = std::variant_size_v<mapping::any_kind>;
  std::size_t i = 0;
  mapping::for_each_kind([&]<class K>() {
    out += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + ("\"" + std::string(K::name) + "\"");
    ++i;
  });
  return out;
}

// Copy and recent: name -> source path.
void read_source_paths(spec_reader& r, spec_object& o, mapping::mapping& m) {
  mapping::read_fields(
      r, o, m, [&](const std::string& here, const std::string& name, const json& value) {
        if (value.is_object()) {
          if (auto e = mapping::read_computed(r, value, here))
            m.fields.push_back({name, e->value_path(), std::move(e)});
          return;
        }
        if (!value.is_string()) {
          r.error(here,
                  "must be a source field path (a string) or a computed field (one "
                  "expression object), not " +
                      json_type(value));
          return;
        }
        const auto src_path = value.get<std::string>();
        auto problem = path_problem(src_path);
        if (problem.empty()) problem = mapping::reserved_path_problem(src_path);
        if (!problem.empty()) {
          r.error(here, "\"" + src_path + "\" is not a valid field path: it " + problem);
          return;
        }
        m.fields.push_back({name, src_path, nullptr});
      });
}

template <class K>
void read_delete_policy(spec_object& o, mapping::mapping& m) {
  m.on_source_delete = K::default_delete_policy();
  auto policy = o.string("onSourceDelete", false);
  if (!policy) return;
  std::string names;
  for (const auto& [name, value] : K::delete_policies()) {
    if (name == *policy) {
      m.on_source_delete = value;
      return;
    }
    names += (names.empty() ? "" : " or ") + ("\"" + name + "\"");
  }
  o.error("onSourceDelete", "\"" + *policy + "\" is not a policy of a " + std::string(K::name) +
                                " mapping (use " + names + ")");
}

// Everything after the kind: the common keys, and the kind's own through K.
template <mapping::mapping_kind K>
void read_as(spec_reader& r, const json& root, const std::string& default_db, mapping::mapping& m) {
  K kind;
  std::set<std::string> top = {"$schema", "name", "kind",   "description",    "source",
                               "target",  "into", "fields", "onSourceDelete", "fillNewTargets"};
  top.merge(K::keys(""));
  spec_object o(r, root, "", top);
  o.string("$schema", false);
  if (auto name = o.string("name", true)) {
    if (auto problem = name_problem(*name); !problem.empty()) r.error("/name", problem);
    m.name = *name;
  }
  m.description = o.string("description", false).value_or("");
  if (const json* src = o.sub_object("source", true)) {
    std::set<std::string> keys = {"db", "collection"};
    keys.merge(K::keys("source"));
    spec_object so(r, *src, "/source", keys);
    read_namespace(so, m.source, default_db);
    kind.read_source(r, so);
  }
  if (const json* tgt = o.sub_object("target", true)) {
    std::set<std::string> keys = {"db", "collection", "key"};
    keys.merge(K::keys("target"));
    spec_object to(r, *tgt, "/target", keys);
    read_namespace(to, m.target, default_db);
    kind.read_target(r, to);
  }
  m.into = o.path("into", K::into_required).value_or("");
  if constexpr (K::reads_own_fields) {
    kind.read_fields(r, o, m);  // accumulators, not source paths
  } else {
    read_source_paths(r, o, m);
  }
  read_delete_policy<K>(o, m);
  m.fill_new_targets = o.boolean("fillNewTargets").value_or(false);
  kind.read_rest(r, o, m);
  kind.prepare(m);
  m.kind = std::move(kind);
}

void read_mapping(spec_reader& r, const json& root, const std::string& default_db,
                  std::vector<mapping::mapping>& out) {
  if (!root.is_object()) {
    r.error("", "a mapping file must hold one JSON object, not " + json_type(root));
    return;
  }
  mapping::mapping m;
  m.file = r.file();
  // The kind first: it decides which keys are allowed.
  auto kind_it = root.find("kind");
  if (kind_it == root.end()) {
    r.error("/kind", "required key \"kind\" is missing (" + kind_names() + ")");
    return;
  }
  const std::string kind = kind_it->is_string() ? kind_it->get<std::string>() : "";
  bool known = false;
  mapping::for_each_kind([&]<class K>() {
    if (kind != K::name) return;
    known = true;
    read_as<K>(r, root, default_db, m);
  });
  if (!known) {
    r.error("/kind", "must be " + kind_names() + ", not " + kind_it->dump());
    return;
  }
  out.push_back(std::move(m));
}

// Reports that the later of two mappings writing one target writes path `pa` that the other
// also writes (as `pb`).
void report_shared_path(const mapping::mapping& a, const std::string& pa, const mapping::mapping& b,
                        const std::string& pb, std::vector<load_error>& errors) {
  errors.push_back({a.file, std::string(a.visit([](const auto& k) { return k.written_pointer; })),
                    "writes " + a.target.full() + " path \"" + pa + "\", which mapping \"" +
                        b.name + "\" (" + b.file + ") also writes (\"" + pb + "\")"});
}

// No two mappings write overlapping paths of one target collection. Every written path is
// indexed by target; each path then looks up itself and its parents, so the check is linear
// in the number of paths instead of comparing every pair.
void check_target_paths(const std::vector<mapping::mapping>& all, std::vector<load_error>& errors) {
  struct written {
    std::string path;
    std::size_t owner;
  };
  std::map<std::string, std::vector<written>> by_target;
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (auto& p : all[i].written_paths())
      by_target[all[i].target.full()].push_back({std::move(p), i});
  }
  for (const auto& [target, paths] : by_target) {
    std::unordered_map<std::string_view, std::vector<const written*>> index;
    for (const auto& w : paths)
      index[w.path].push_back(&w);
    for (const auto& w : paths) {
      const auto check = [&](std::string_view other_path) {
        auto it = index.find(other_path);
        if (it == index.end()) return;
        for (const written* o : it->second) {
          // An equal path is found from both sides: report it once, on the later mapping.
          if (o->owner == w.owner || (o->path == w.path && o->owner > w.owner)) continue;
          const bool w_later = w.owner > o->owner;
          const written& a = w_later ? w : *o;
          const written& b = w_later ? *o : w;
          report_shared_path(all[a.owner], a.path, all[b.owner], b.path, errors);
        }
      };
      check(w.path);
      mapping::for_each_parent(w.path, check);
    }
  }
}

// Cross-file rules: unique names, and no two mappings writing one target path.
void check_across(const std::vector<mapping::mapping>& all, std::vector<load_error>& errors) {
  std::unordered_map<std::string_view, const mapping::mapping*> by_name;
  for (const auto& m : all) {
    auto [it, added] = by_name.emplace(m.name, &m);
    if (!added) {
      errors.push_back(
          {m.file, "/name",
           "duplicate mapping name \"" + m.name + "\" (also in " + it->second->file + ")"});
    }
  }
  check_target_paths(all, errors);
}

}  // namespace

load_result parse_mapping(const std::string& file, const std::string& text,
                          const std::string& default_db) {
  std::vector<load_error> errors;
  spec_reader r(file, errors);
  auto root = read_json(text, max_file_depth);
  if (!root) {
    r.error(root.error().pointer, root.error().message);
    return unexpected<std::vector<load_error>>{std::move(errors)};
  }
  std::vector<mapping::mapping> out;
  read_mapping(r, *root, default_db, out);
  if (!errors.empty()) return unexpected<std::vector<load_error>>{std::move(errors)};
  return out;
}

load_result load_mappings(const std::filesystem::path& path, const std::string& default_db) {
  namespace fs = std::filesystem;
  using failure = unexpected<std::vector<load_error>>;
  // Every filesystem call takes an error_code: a symlink loop or an unreadable entry is a
  // load error naming the file, never an exception.
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::is_regular_file(status)) return load_mapping_files({path}, default_db);
  if (!fs::is_directory(status)) {
    return failure{{{path.string(), "",
                     "is neither a mapping file nor a folder of them" +
                         (ec ? " (" + ec.message() + ")" : std::string())}}};
  }
  std::vector<fs::path> files;
  std::vector<load_error> errors;
  fs::directory_iterator it(path, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".json") continue;
    std::error_code entry_ec;
    const bool regular = it->is_regular_file(entry_ec);
    if (entry_ec) {
      errors.push_back({it->path().string(), "", "cannot be read: " + entry_ec.message()});
    } else if (regular) {
      files.push_back(it->path());
    }
  }
  if (ec) errors.push_back({path.string(), "", "cannot be listed: " + ec.message()});
  if (!errors.empty()) {
    // In name order, like the files, whatever order the folder lists them in.
    std::sort(errors.begin(), errors.end(),
              [](const load_error& a, const load_error& b) { return a.file < b.file; });
    return failure{std::move(errors)};
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return unexpected<std::vector<load_error>>{
        {{path.string(), "", "holds no mapping files (*.json)"}}};
  }
  return load_mapping_files(files, default_db);
}

load_result load_mapping_files(const std::vector<std::filesystem::path>& files,
                               const std::string& default_db) {
  std::vector<load_error> errors;
  std::vector<mapping::mapping> all;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      errors.push_back({path.string(), "", "cannot be read"});
      continue;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = parse_mapping(path.string(), text.str(), default_db);
    if (!parsed) {
      errors.insert(errors.end(), parsed.error().begin(), parsed.error().end());
      continue;
    }
    for (auto& m : *parsed)
      all.push_back(std::move(m));
  }
  check_across(all, errors);
  if (!errors.empty()) return unexpected<std::vector<load_error>>{std::move(errors)};
  return all;
}

}  // namespace denormd::config
