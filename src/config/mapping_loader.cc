#include "config/mapping_loader.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "bson/json.h"
#include "common/json_text.h"

namespace denormd::config {

namespace {

using json = nlohmann::ordered_json;

std::string json_type(const json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  return "null";
}

// Extended JSON wrapper keys: values, not query operators.
bool is_extended_json_key(std::string_view k) {
  static const std::set<std::string_view> keys = {
      "$oid",           "$date",      "$numberLong", "$numberInt", "$numberDouble",
      "$numberDecimal", "$binary",    "$uuid",       "$timestamp", "$minKey",
      "$maxKey",        "$undefined", "$symbol",     "$code",      "$regularExpression"};
  return keys.contains(k);
}

bool is_subset_operator(std::string_view k) {
  static const std::set<std::string_view> ops = {"$eq", "$ne",  "$gt",     "$gte", "$lt", "$lte",
                                                 "$in", "$nin", "$exists", "$and", "$or", "$not"};
  return ops.contains(k);
}

// A dotted field path MongoDB can update: non-empty components, none starting with '$'.
std::string path_problem(const std::string& path) {
  if (path.empty()) return "must not be empty";
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string part = path.substr(start, dot - start);
    if (part.empty()) return "has an empty component";
    if (part[0] == '$') return "has a component starting with '$'";
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (path.find('\0') != std::string::npos) return "contains a NUL character";
  return "";
}

// Collects errors for one file while reading its JSON.
class file_reader {
 public:
  file_reader(std::string file, std::vector<load_error>& errors)
      : file_(std::move(file)), errors_(errors) {}

  void error(const std::string& pointer, std::string message) {
    errors_.push_back({file_, pointer, std::move(message)});
  }
  const std::string& file() const { return file_; }

  // An object whose keys are checked against `allowed` when done.
  class object {
   public:
    object(file_reader& r, const json& j, std::string pointer, std::set<std::string> allowed)
        : r_(r), j_(j), pointer_(std::move(pointer)), allowed_(std::move(allowed)) {
      for (auto it = j_.begin(); it != j_.end(); ++it) {
        if (!allowed_.contains(it.key())) {
          r_.error(pointer_join(pointer_, it.key()), unknown_key_message(it.key()));
        }
      }
    }

    const std::string& pointer() const { return pointer_; }
    void error(std::string_view key, std::string message) { r_.error(at(key), std::move(message)); }
    std::string at(std::string_view key) const { return pointer_join(pointer_, key); }

    const json* get(const std::string& key, bool required) {
      auto it = j_.find(key);
      if (it == j_.end()) {
        if (required) r_.error(at(key), "required key \"" + key + "\" is missing");
        return nullptr;
      }
      return &*it;
    }

    std::optional<std::string> string(const std::string& key, bool required) {
      const json* v = get(key, required);
      if (v == nullptr) return std::nullopt;
      if (!v->is_string()) {
        r_.error(at(key), "must be a string, not " + json_type(*v));
        return std::nullopt;
      }
      return v->get<std::string>();
    }

    std::optional<std::string> path(const std::string& key, bool required) {
      auto s = string(key, required);
      if (!s) return s;
      if (auto problem = path_problem(*s); !problem.empty()) {
        r_.error(at(key), "\"" + *s + "\" is not a valid field path: it " + problem);
        return std::nullopt;
      }
      return s;
    }

    std::optional<bool> boolean(const std::string& key) {
      const json* v = get(key, false);
      if (v == nullptr) return std::nullopt;
      if (!v->is_boolean()) {
        r_.error(at(key), "must be true or false, not " + json_type(*v));
        return std::nullopt;
      }
      return v->get<bool>();
    }

    const json* sub_object(const std::string& key, bool required) {
      const json* v = get(key, required);
      if (v != nullptr && !v->is_object()) {
        r_.error(at(key), "must be an object, not " + json_type(*v));
        return nullptr;
      }
      return v;
    }

   private:
    std::string unknown_key_message(const std::string& key) const {
      std::string msg = "unknown key \"" + key + "\"";
      // Suggest the closest allowed key for typos (edit distance <= 2).
      std::string best;
      std::size_t best_distance = 3;
      for (const auto& candidate : allowed_) {
        const std::size_t d = distance(key, candidate);
        if (d < best_distance) {
          best_distance = d;
          best = candidate;
        }
      }
      if (!best.empty()) msg += " (did you mean \"" + best + "\"?)";
      std::string list;
      for (const auto& a : allowed_)
        list += (list.empty() ? "" : ", ") + a;
      return msg + "; allowed here: " + list;
    }

    static std::size_t distance(const std::string& a, const std::string& b) {
      std::vector<std::size_t> row(b.size() + 1);
      for (std::size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
      for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t prev = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
          const std::size_t cur = row[j];
          const bool same = std::tolower(a[i - 1]) == std::tolower(b[j - 1]);
          row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (same ? 0 : 1)});
          prev = cur;
        }
      }
      return row[b.size()];
    }

    file_reader& r_;
    const json& j_;
    std::string pointer_;
    std::set<std::string> allowed_;
  };

 private:
  std::string file_;
  std::vector<load_error>& errors_;
};

// Rejects query operators outside the subset before libbson sees them (it would read
// "$type"/"$regex" as legacy Extended JSON and give a confusing message).
bool scan_query(file_reader& r, const json& j, const std::string& pointer) {
  bool ok = true;
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const std::string here = pointer_join(pointer, k);
      if (k.starts_with('$') && !is_extended_json_key(k) && !is_subset_operator(k)) {
        r.error(here, "operator " + k +
                          " is not supported in mapping queries (supported: equality, $eq $ne "
                          "$gt $gte $lt $lte $in $nin $exists $and $or $not)");
        ok = false;
        continue;
      }
      ok = scan_query(r, it.value(), here) && ok;
    }
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      ok = scan_query(r, j[i], pointer_join(pointer, std::to_string(i))) && ok;
    }
  }
  return ok;
}

std::optional<query::matcher> read_query(file_reader& r, const json& j,
                                         const std::string& pointer) {
  if (!j.is_object()) {
    r.error(pointer, "must be a query object, not " + json_type(j));
    return std::nullopt;
  }
  if (!scan_query(r, j, pointer)) return std::nullopt;
  auto doc = bson::parse_json(j.dump());
  if (!doc) {
    r.error(pointer, "is not valid Extended JSON: " + doc.error().message);
    return std::nullopt;
  }
  auto m = query::matcher::compile(*doc, query::op_set::mapping_subset);
  if (!m) {
    r.error(pointer + m.error().pointer, m.error().message);
    return std::nullopt;
  }
  return std::move(m).value();
}

void read_namespace(file_reader::object& o, mapping::ns& out, const std::string& default_db) {
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

std::string kind_name(mapping::mapping_kind k) {
  return k == mapping::mapping_kind::copy ? "copy" : "recent";
}

void read_mapping(file_reader& r, const json& root, const std::string& default_db,
                  std::vector<mapping::mapping>& out) {
  if (!root.is_object()) {
    r.error("", "a mapping file must hold one JSON object, not " + json_type(root));
    return;
  }
  mapping::mapping m;
  m.file = r.file();
  // Read the kind first: it decides which keys are allowed.
  auto kind_it = root.find("kind");
  std::string kind =
      kind_it != root.end() && kind_it->is_string() ? kind_it->get<std::string>() : "";
  if (kind_it == root.end()) {
    r.error("/kind", "required key \"kind\" is missing (\"copy\" or \"recent\")");
    return;
  }
  if (kind != "copy" && kind != "recent") {
    r.error("/kind", "must be \"copy\" or \"recent\", not " + kind_it->dump());
    return;
  }
  m.kind = kind == "copy" ? mapping::mapping_kind::copy : mapping::mapping_kind::recent;
  const bool copy = m.kind == mapping::mapping_kind::copy;

  std::set<std::string> top = {"$schema", "name", "kind",   "description",   "source",
                               "target",  "into", "fields", "onSourceDelete"};
  top.insert("fillNewTargets");
  if (!copy) top.insert({"idField", "sort", "limit"});
  file_reader::object o(r, root, "", top);
  o.string("$schema", false);
  if (auto name = o.string("name", true)) {
    static const std::regex valid(R"(^[A-Za-z0-9][A-Za-z0-9_.-]*$)");
    if (!std::regex_match(*name, valid)) {
      r.error("/name", "\"" + *name + "\" is not a valid name (letters, digits, '_', '.', '-')");
    }
    m.name = *name;
  }
  m.description = o.string("description", false).value_or("");

  if (const json* src = o.sub_object("source", true)) {
    std::set<std::string> keys = {"db", "collection"};
    if (copy) {
      keys.insert("key");
    } else {
      keys.insert({"parentKey", "filter"});
    }
    file_reader::object s(r, *src, "/source", keys);
    read_namespace(s, m.source, default_db);
    if (copy) {
      m.source_key = s.path("key", false).value_or("_id");
    } else {
      m.parent_key = s.path("parentKey", true).value_or("");
      if (const json* f = s.get("filter", false)) m.filter = read_query(r, *f, "/source/filter");
    }
  }
  if (const json* tgt = o.sub_object("target", true)) {
    std::set<std::string> keys = {"db", "collection", "key"};
    if (copy) keys.insert({"array", "where"});
    file_reader::object t(r, *tgt, "/target", keys);
    read_namespace(t, m.target, default_db);
    if (copy) {
      m.target_key = t.path("key", true).value_or("");
      m.target_array = t.path("array", false).value_or("");
      if (const json* w = t.get("where", false)) m.where = read_query(r, *w, "/target/where");
    } else {
      m.parent_field = t.path("key", false).value_or("_id");
    }
  }
  m.into = o.path("into", !copy).value_or("");

  if (const json* fields = o.sub_object("fields", true)) {
    if (fields->empty()) r.error("/fields", "must name at least one field");
    for (auto it = fields->begin(); it != fields->end(); ++it) {
      const std::string here = pointer_join("/fields", it.key());
      if (auto problem = path_problem(it.key()); !problem.empty()) {
        r.error(here, "\"" + it.key() + "\" is not a valid field name: it " + problem);
        continue;
      }
      if (!it->is_string()) {
        r.error(here, "must be a source field path (a string), not " + json_type(*it));
        continue;
      }
      const auto src_path = it->get<std::string>();
      if (auto problem = path_problem(src_path); !problem.empty()) {
        r.error(here, "\"" + src_path + "\" is not a valid field path: it " + problem);
        continue;
      }
      m.fields.push_back({it.key(), src_path});
    }
    for (std::size_t i = 0; i < m.fields.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (query::paths_overlap(m.fields[i].name, m.fields[j].name)) {
          r.error(pointer_join("/fields", m.fields[i].name),
                  "overlaps field \"" + m.fields[j].name + "\" of the same mapping");
        }
      }
    }
  }

  if (auto policy = o.string("onSourceDelete", false)) {
    static const std::map<std::string, mapping::delete_policy> copy_policies = {
        {"keep", mapping::delete_policy::keep}, {"unset", mapping::delete_policy::unset}};
    static const std::map<std::string, mapping::delete_policy> recent_policies = {
        {"pull", mapping::delete_policy::pull},
        {"pullAndRefill", mapping::delete_policy::pull_and_refill}};
    const auto& allowed = copy ? copy_policies : recent_policies;
    if (auto it = allowed.find(*policy); it != allowed.end()) {
      m.on_source_delete = it->second;
    } else {
      r.error("/onSourceDelete",
              "\"" + *policy + "\" is not a policy of a " + kind_name(m.kind) + " mapping (use " +
                  (copy ? "\"keep\" or \"unset\"" : "\"pull\" or \"pullAndRefill\"") + ")");
    }
  } else {
    m.on_source_delete =
        copy ? mapping::delete_policy::keep : mapping::delete_policy::pull_and_refill;
  }

  m.fill_new_targets = o.boolean("fillNewTargets").value_or(false);
  if (copy) {
    for (const auto& p : m.written_paths()) {
      const std::string key_path =
          m.target_array.empty() ? m.target_key : m.target_array + "." + m.target_key;
      if (!m.target_key.empty() && query::paths_overlap(p, key_path)) {
        r.error("/target/key",
                "the key field \"" + m.target_key + "\" overlaps the copied path \"" + p + "\"");
        break;
      }
    }
  } else {
    if (auto id = o.string("idField", true)) {
      m.id_field = *id;
      const auto* f = m.field_named(*id);
      if (f == nullptr) {
        r.error("/idField", "\"" + *id + "\" is not one of the names in \"fields\"");
      } else if (f->source_path != "_id") {
        r.error("/idField", "\"" + *id + "\" must copy the child's \"_id\" (it is \"" +
                                f->source_path +
                                "\"): the element is found by it when the child is deleted");
      }
    }
    if (const json* sort = o.sub_object("sort", true)) {
      if (sort->empty()) r.error("/sort", "must name at least one field");
      for (auto it = sort->begin(); it != sort->end(); ++it) {
        const std::string here = pointer_join("/sort", it.key());
        if (m.field_named(it.key()) == nullptr) {
          r.error(here, "sort field \"" + it.key() + "\" is not one of the names in \"fields\"");
          continue;
        }
        if (!it->is_number_integer() || (it->get<int>() != 1 && it->get<int>() != -1)) {
          r.error(here, "must be 1 (ascending) or -1 (descending), not " + it->dump());
          continue;
        }
        m.sort.push_back({it.key(), it->get<int>()});
      }
      // The id breaks ties so the array order is the same however it was built.
      if (!m.id_field.empty() && std::none_of(m.sort.begin(), m.sort.end(), [&](const auto& s) {
            return s.name == m.id_field;
          })) {
        m.sort.push_back({m.id_field, 1});
      }
    }
    if (const json* limit = o.get("limit", true)) {
      if (!limit->is_number_integer() || limit->get<long long>() < 1 ||
          limit->get<long long>() > 10000) {
        r.error("/limit", "must be a whole number from 1 to 10000, not " + limit->dump());
      } else {
        m.limit = limit->get<int>();
      }
    }
    if (!m.into.empty() && query::paths_overlap(m.into, m.parent_field)) {
      r.error("/into",
              "\"" + m.into + "\" overlaps the parent key field \"" + m.parent_field + "\"");
    }
  }
  out.push_back(std::move(m));
}

// Cross-file rules: unique names, and no two mappings writing one target path.
void check_across(const std::vector<mapping::mapping>& all, std::vector<load_error>& errors) {
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const auto& a = all[i];
      const auto& b = all[j];
      if (a.name == b.name) {
        errors.push_back({a.file, "/name",
                          "duplicate mapping name \"" + a.name + "\" (also in " + b.file + ")"});
      }
      if (a.target != b.target) continue;
      for (const auto& pa : a.written_paths()) {
        for (const auto& pb : b.written_paths()) {
          if (query::paths_overlap(pa, pb)) {
            errors.push_back({a.file, a.kind == mapping::mapping_kind::recent ? "/into" : "/fields",
                              "writes " + a.target.full() + " path \"" + pa +
                                  "\", which mapping \"" + b.name + "\" (" + b.file +
                                  ") also writes (\"" + pb + "\")"});
          }
        }
      }
    }
  }
}

}  // namespace

std::string load_error::to_string() const {
  std::string out = file;
  out += ": ";
  out += pointer.empty() ? "/" : pointer;
  out += ": ";
  out += message;
  return out;
}

load_result parse_mapping(const std::string& file, const std::string& text,
                          const std::string& default_db) {
  std::vector<load_error> errors;
  file_reader r(file, errors);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
    // nlohmann's message includes the line and column.
    std::string what = e.what();
    if (auto pos = what.find("parse error"); pos != std::string::npos) what = what.substr(pos);
    r.error("", "invalid JSON: " + what);
    return unexpected<std::vector<load_error>>{std::move(errors)};
  }
  std::vector<mapping::mapping> out;
  read_mapping(r, root, default_db, out);
  if (!errors.empty()) return unexpected<std::vector<load_error>>{std::move(errors)};
  return out;
}

load_result load_mappings(const std::filesystem::path& path, const std::string& default_db) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return load_mapping_files({path}, default_db);
  if (!std::filesystem::is_directory(path, ec)) {
    return unexpected<std::vector<load_error>>{
        {{path.string(), "", "is neither a mapping file nor a folder of them"}}};
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    if (entry.path().extension() == ".json" && entry.is_regular_file())
      files.push_back(entry.path());
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
