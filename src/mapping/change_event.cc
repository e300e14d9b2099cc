#include "mapping/change_event.h"

#include <bson/bson.h>

#include <algorithm>

#include "bson/convert.h"
#include "bson/json.h"
#include "query/path.h"

namespace denormd::mapping {

namespace {

operation operation_from(std::string_view name) {
  static constexpr std::pair<std::string_view, operation> names[] = {
      {"insert", operation::insert},
      {"update", operation::update},
      {"replace", operation::replace},
      {"delete", operation::delete_},
      {"drop", operation::drop},
      {"rename", operation::rename},
      {"dropDatabase", operation::drop_database},
      {"invalidate", operation::invalidate}};
  for (const auto& [n, op] : names) {
    if (n == name) return op;
  }
  return operation::other;
}

std::string_view key_of(const bson_iter_t& it) {
  return {bson_iter_key(&it), bson_iter_key_len(&it)};
}

std::string string_of(const bson_iter_t& it) {
  std::uint32_t len = 0;
  const char* s = bson_iter_utf8(&it, &len);
  return {s, len};
}

// Converts a (sub-)document, keeping only `keep` top-level fields when given.
expected<bson::document> read_picked(const bson_iter_t& it, const std::vector<std::string>* keep,
                                     std::string_view what) {
  bson_iter_t child;
  if (!bson_iter_recurse(&it, &child)) return fail("corrupt BSON in " + std::string(what));
  bson::document out;
  if (keep != nullptr) out.fields().reserve(keep->size());
  while (bson_iter_next(&child)) {
    const std::string_view name = key_of(child);
    if (keep != nullptr && std::find(keep->begin(), keep->end(), name) == keep->end()) continue;
    auto v = bson::read_value(child);
    if (!v) return v.error();
    out.append(std::string(name), std::move(v).value());
  }
  if (child.err_off != 0) return fail("corrupt BSON in " + std::string(what));
  return out;
}

// The part of the event that only names paths: updatedFields keys (values are not needed,
// fullDocument has the current state), removedFields, truncatedArrays[].field.
status read_update_description(const bson_iter_t& it, std::vector<std::string>& touched) {
  bson_iter_t desc;
  if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &desc)) {
    return fail("update event has no updateDescription");
  }
  while (bson_iter_next(&desc)) {
    const std::string_view key = key_of(desc);
    bson_iter_t list;
    if (key == "updatedFields") {
      if (!BSON_ITER_HOLDS_DOCUMENT(&desc) || !bson_iter_recurse(&desc, &list)) {
        return fail("updateDescription.updatedFields must be a document");
      }
      while (bson_iter_next(&list))
        touched.emplace_back(key_of(list));
    } else if (key == "removedFields") {
      if (!BSON_ITER_HOLDS_ARRAY(&desc) || !bson_iter_recurse(&desc, &list)) {
        return fail("updateDescription.removedFields must be an array");
      }
      while (bson_iter_next(&list)) {
        if (!BSON_ITER_HOLDS_UTF8(&list))
          return fail("updateDescription.removedFields must hold strings");
        touched.push_back(string_of(list));
      }
    } else if (key == "truncatedArrays" && BSON_ITER_HOLDS_ARRAY(&desc)) {
      if (!bson_iter_recurse(&desc, &list)) return fail("corrupt BSON in truncatedArrays");
      while (bson_iter_next(&list)) {
        bson_iter_t entry;
        bson_iter_t field;
        if (!BSON_ITER_HOLDS_DOCUMENT(&list) || !bson_iter_recurse(&list, &entry) ||
            !bson_iter_find(&entry, "field") || !BSON_ITER_HOLDS_UTF8(&entry)) {
          return fail("updateDescription.truncatedArrays entries need a field string");
        }
        field = entry;
        touched.push_back(string_of(field));
      }
    }
    if (list.err_off != 0) return fail("corrupt BSON in updateDescription");
  }
  return {};
}

}  // namespace

expected<change_event> change_event::parse(bson::document raw) {
  const bson::bson_ptr b = bson::to_bson(raw);
  return parse_bson({bson_get_data(b.get()), b->len});
}

expected<change_event> change_event::parse_bson(std::span<const std::uint8_t> bytes,
                                                const std::vector<std::string>* keep) {
  if (bytes.size() < 5) return fail("corrupt BSON: shorter than 5 bytes");
  bson_t b;
  bson_iter_t it;
  if (!bson_init_static(&b, bytes.data(), bytes.size()) || !bson_iter_init(&it, &b)) {
    return fail("corrupt BSON: bad header");
  }
  change_event ev;
  bool has_type = false;
  bool has_token = false;
  bool has_key = false;
  bool has_description = false;
  while (bson_iter_next(&it)) {
    const std::string_view key = key_of(it);
    if (key == "operationType" && BSON_ITER_HOLDS_UTF8(&it)) {
      ev.op_name = string_of(it);
      ev.op = operation_from(ev.op_name);
      has_type = true;
    } else if (key == "_id" && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      auto token = read_picked(it, nullptr, "_id");
      if (!token) return token.error();
      ev.token = std::move(token).value();
      has_token = true;
    } else if (key == "clusterTime" && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
      bson_iter_timestamp(&it, &ev.cluster_time.t, &ev.cluster_time.i);
    } else if (key == "wallTime" && BSON_ITER_HOLDS_DATE_TIME(&it)) {
      ev.wall_time = bson::date_time{bson_iter_date_time(&it)};
    } else if (key == "ns" && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      bson_iter_t n;
      if (!bson_iter_recurse(&it, &n)) return fail("corrupt BSON in ns");
      while (bson_iter_next(&n)) {
        if (!BSON_ITER_HOLDS_UTF8(&n)) continue;
        if (key_of(n) == "db") ev.source.db = string_of(n);
        if (key_of(n) == "coll") ev.source.coll = string_of(n);
      }
    } else if (key == "documentKey" && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      bson_iter_t id;
      if (bson_iter_recurse(&it, &id) && bson_iter_find(&id, "_id")) {
        auto v = bson::read_value(id);
        if (!v) return v.error();
        ev.id = std::move(v).value();
        has_key = true;
      }
    } else if (key == "updateDescription") {
      if (auto st = read_update_description(it, ev.touched); !st) return st.error();
      has_description = true;
    } else if (key == "fullDocument" || key == "fullDocumentBeforeChange") {
      auto& slot = key == "fullDocument" ? ev.full_document : ev.full_document_before_change;
      if (BSON_ITER_HOLDS_NULL(&it)) continue;
      if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return fail(std::string(key) + " must be a document");
      auto doc = read_picked(it, keep, key);
      if (!doc) return doc.error();
      slot = std::move(doc).value();
    }
  }
  if (it.err_off != 0) return fail("corrupt BSON at byte " + std::to_string(it.err_off));

  if (!has_type) return fail("change event has no operationType string");
  if (!has_token) return fail("change event has no _id (resume token) document");
  if (!ev.is_document_event()) return ev;
  if (ev.source.db.empty() || ev.source.coll.empty()) {
    return fail(ev.op_name + " event has no ns {db, coll}");
  }
  if (!has_key) return fail(ev.op_name + " event has no documentKey._id");
  if ((ev.op == operation::insert || ev.op == operation::replace) && !ev.full_document) {
    return fail(ev.op_name + " event has no fullDocument");
  }
  if (ev.op == operation::update && !has_description) {
    return fail("update event has no updateDescription");
  }
  return ev;
}

bool touches(const std::vector<std::string>& touched, const std::vector<std::string>& paths) {
  if (touched.empty() || paths.empty()) return false;
  if (std::find(paths.begin(), paths.end(), whole_document_path) != paths.end()) return true;
  std::vector<std::vector<std::string_view>> watched;
  watched.reserve(paths.size());
  for (const auto& p : paths)
    watched.push_back(query::field_components(p));
  return std::any_of(touched.begin(), touched.end(), [&](const std::string& t) {
    const auto parts = query::field_components(t);
    return std::any_of(watched.begin(), watched.end(), [&](const auto& w) {
      const std::size_t n = std::min(parts.size(), w.size());
      return std::equal(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(n), w.begin());
    });
  });
}

std::string token_position(const bson::document& token) {
  const bson::value* data = token.get("_data");
  if (data != nullptr && data->is_string()) return data->as_string();
  return bson::to_json(token);
}

std::optional<bson::timestamp> token_time(const bson::document& token) {
  const bson::value* data = token.get("_data");
  if (data == nullptr || !data->is_string()) return std::nullopt;
  const std::string& d = data->as_string();
  if (d.size() < 18 || !d.starts_with("82")) return std::nullopt;
  auto hex = [&](std::size_t from) -> std::optional<std::uint32_t> {
    std::uint32_t v = 0;
    for (std::size_t k = from; k < from + 8; ++k) {
      const char c = d[k];
      std::uint32_t digit = 0;
      if (c >= '0' && c <= '9')
        digit = static_cast<std::uint32_t>(c - '0');
      else if (c >= 'A' && c <= 'F')
        digit = static_cast<std::uint32_t>(c - 'A' + 10);
      else if (c >= 'a' && c <= 'f')
        digit = static_cast<std::uint32_t>(c - 'a' + 10);
      else
        return std::nullopt;
      v = (v << 4) | digit;
    }
    return v;
  };
  const auto t = hex(2);
  const auto i = hex(10);
  if (!t || !i) return std::nullopt;
  return bson::timestamp{*t, *i};
}

}  // namespace denormd::mapping
