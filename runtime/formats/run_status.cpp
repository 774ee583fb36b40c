// status.json as text, through the JSON library; see run_status.h.
#include "runtime/formats/run_status.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

namespace posc::formats {

using json = nlohmann::json;

bool RunStatus::seedDone(uint64_t s) const {
  return std::find(seeds_done.begin(), seeds_done.end(), s) != seeds_done.end();
}

std::string statusJson(const RunStatus& s) {
  // Keys in the documented order (nlohmann's object sorts them otherwise).
  std::string out = "{";
  auto field = [&](const char* key, const json& value) {
    out += (out.size() > 1 ? "," : "") + json(key).dump() + ":" + value.dump();
  };
  field("state", s.state);
  field("pid", s.pid);
  field("plan_hash", s.plan_hash);
  if (!s.training_hash.empty()) field("training_hash", s.training_hash);  // as before 2026-12-07 when unknown
  field("seeds_done", s.seeds_done);
  field("metrics_lines", s.metrics_lines);
  field("seed", s.seed ? json(*s.seed) : json(nullptr));
  field("step", s.step);
  // A message may hold any bytes (an error's text); invalid UTF-8 is replaced.
  out += ",\"message\":" + json(s.message).dump(-1, ' ', false, json::error_handler_t::replace);
  return out + "}\n";
}

std::optional<RunStatus> parseStatus(const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto has = [&](const char* key, bool (json::*is)() const noexcept) {
    auto it = j.find(key);
    return it != j.end() && ((*it).*is)();
  };
  if (!has("state", &json::is_string) || !has("pid", &json::is_number_integer) ||
      !has("plan_hash", &json::is_string) || !has("seeds_done", &json::is_array) ||
      !has("metrics_lines", &json::is_number_unsigned) || !has("step", &json::is_number_integer) ||
      !j.contains("seed"))
    return std::nullopt;
  RunStatus s;
  s.state = j["state"].get<std::string>();
  if (s.state != "running" && s.state != "interrupted" && s.state != "failed" && s.state != "finished")
    return std::nullopt;
  const int64_t pid = j["pid"].get<int64_t>();
  const int64_t step = j["step"].get<int64_t>();
  if (pid < 0 || step < 0 || step > std::numeric_limits<int>::max()) return std::nullopt;
  s.pid = static_cast<long>(pid);
  s.step = static_cast<int>(step);
  s.plan_hash = j["plan_hash"].get<std::string>();
  for (const json& seed : j["seeds_done"]) {
    if (!seed.is_number_unsigned()) return std::nullopt;
    s.seeds_done.push_back(seed.get<uint64_t>());
  }
  s.metrics_lines = j["metrics_lines"].get<size_t>();
  const json& seed = j["seed"];
  if (seed.is_number_unsigned()) s.seed = seed.get<uint64_t>();
  else if (!seed.is_null()) return std::nullopt;
  if (auto t = j.find("training_hash"); t != j.end()) {
    if (!t->is_string()) return std::nullopt;
    s.training_hash = t->get<std::string>();
  }
  if (auto m = j.find("message"); m != j.end()) {
    if (!m->is_string()) return std::nullopt;
    s.message = m->get<std::string>();
  }
  return s;
}

}  // namespace posc::formats
