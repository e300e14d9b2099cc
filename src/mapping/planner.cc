#include "mapping/planner.h"

#include <algorithm>

namespace denormd::mapping {

bool replay_gate::admits(std::string_view name, std::string_view position) const {
  const auto it = from.find(name);
  return position > (it == from.end() ? std::string_view(others_after) : it->second);
}

bool replay_gate::passed(std::string_view position) const {
  if (position <= others_after) return false;
  return std::all_of(from.begin(), from.end(),
                     [&](const auto& f) { return position > std::string_view(f.second); });
}

planner::planner(std::vector<mapping> mappings) : mappings_(std::move(mappings)) {
  auto add_field = [](source_plan& plan, const std::string& path) {
    const std::string top = path.substr(0, path.find('.'));
    if (std::find(plan.fields.begin(), plan.fields.end(), top) == plan.fields.end()) {
      plan.fields.push_back(top);
    }
  };
  for (auto& m : mappings_) {
    std::visit([&](auto& k) { k.prepare(m); }, m.kind);
    compiled c{&m, m.watched_paths()};
    auto& plan = by_source_[m.source];
    add_field(plan, "_id");
    for (const auto& p : c.watched)
      add_field(plan, p);
    for (const auto& p : m.visit([](const auto& k) { return k.key_paths(); }))
      add_field(plan, p);
    plan.mappings.push_back(std::move(c));
    if (!m.fill_new_targets) continue;

    // As a watched target: what a new or re-keyed dependent is made of.
    compiled t{&m, m.visit([](const auto& k) { return k.fill_paths(); })};
    auto& target_plan = by_source_[m.target];
    add_field(target_plan, "_id");
    for (const auto& p : t.watched)
      add_field(target_plan, p);
    m.visit([&](const auto& k) {
      if constexpr (requires { k.new_target_reads(); }) {
        for (const auto& p : k.new_target_reads())
          add_field(target_plan, p);
      }
    });
    target_plan.fills.push_back(std::move(t));
  }
}

std::vector<ns> planner::source_namespaces() const {
  std::vector<ns> out;
  for (const auto& [n, plan] : by_source_) {
    if (!plan.mappings.empty()) out.push_back(n);
  }
  return out;
}

std::vector<ns> planner::watched_namespaces() const {
  std::vector<ns> out;
  for (const auto& [n, plan] : by_source_)
    out.push_back(n);
  return out;
}

const std::vector<std::string>& planner::document_fields(const ns& source) const {
  static const std::vector<std::string> none;
  auto it = by_source_.find(source);
  return it == by_source_.end() ? none : it->second.fields;
}

stream_images planner::needs_images(const ns& source) const {
  stream_images out;
  auto it = by_source_.find(source);
  if (it == by_source_.end()) return out;
  for (const compiled& c : it->second.mappings) {
    c.m->visit([&](const auto& k) {
      if constexpr (requires { k.needs_images(); }) {
        const stream_images need = k.needs_images();
        out.before = out.before || need.before;
        out.after = out.after || need.after;
      }
    });
  }
  return out;
}

std::string planner::stream_signature(const ns& source) const {
  auto it = by_source_.find(source);
  if (it == by_source_.end()) return {};
  std::vector<std::string> parts;
  for (const compiled& c : it->second.mappings)
    parts.push_back("source " + c.m->name + " " + c.m->fingerprint());
  for (const compiled& c : it->second.fills)
    parts.push_back("fills " + c.m->name + " " + c.m->fingerprint());
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& p : parts)
    out += p + "\n";
  return out;
}

std::vector<std::string> planner::mappings_reading(const ns& source) const {
  std::vector<std::string> out;
  auto it = by_source_.find(source);
  if (it == by_source_.end()) return out;
  for (const compiled& c : it->second.mappings)
    out.push_back(c.m->name);
  for (const compiled& c : it->second.fills) {
    if (std::find(out.begin(), out.end(), c.m->name) == out.end()) out.push_back(c.m->name);
  }
  return out;
}

void planner::plan(const change_event& ev, std::vector<write_op>& out,
                   std::vector<std::string>* notes, const replay_gate* gate) const {
  if (!ev.is_document_event()) return;
  auto it = by_source_.find(ev.source);
  if (it == by_source_.end()) return;
  std::string position;
  if (gate != nullptr) position = token_position(ev.token);
  auto admitted = [&](const compiled& c) {
    return gate == nullptr || gate->admits(c.m->name, position);
  };
  for (const compiled& c : it->second.mappings) {
    if (admitted(c)) c.m->visit([&](const auto& k) { k.plan(*c.m, c.watched, ev, out, notes); });
  }
  for (const compiled& c : it->second.fills) {
    if (admitted(c))
      c.m->visit([&](const auto& k) { k.plan_new_target(*c.m, c.watched, ev, out); });
  }
}

bson::array& pushed_elements(write_op& push) {
  auto& update = std::get<update_write>(push.what).update;
  auto& spec = update.get("$push")->as_document().fields().front().val.as_document();
  return spec.get("$each")->as_array();
}

}  // namespace denormd::mapping
