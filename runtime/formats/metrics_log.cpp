// Reading metrics.jsonl through the JSON library; see metrics_log.h.
#include "runtime/formats/metrics_log.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace posc::formats {

using json = nlohmann::json;

std::optional<size_t> firstDamagedLine(const std::vector<std::string>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) {
    const json record = json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    if (!record.is_object()) return i + 1;
  }
  return std::nullopt;
}

MetricsLog readMetricsLog(std::string_view log) {
  MetricsLog out;
  size_t number = 0;
  for (size_t from = 0; from < log.size();) {
    size_t end = log.find('\n', from);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(from, end - from);
    from = end + 1;
    ++number;
    if (line.empty()) continue;
    const json record = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (!record.is_object()) throw std::runtime_error(fmt::format("metrics.jsonl line {} is not a JSON record", number));
    auto bad = [&](const char* what) {
      return std::runtime_error(fmt::format("metrics.jsonl line {}: {} is not a number", number, what));
    };
    auto seed = record.find("seed"), step = record.find("step");
    if (seed == record.end() || step == record.end()) continue;
    if (!seed->is_number_unsigned()) throw bad("seed");
    if (!step->is_number()) throw bad("step");
    // A number, NaN for null or absent.
    auto number_or_nan = [&](const char* key) {
      auto it = record.find(key);
      if (it == record.end() || it->is_null()) return std::nan("");
      if (!it->is_number()) throw bad(key);
      return it->get<double>();
    };
    if (record.contains("loss"))
      out.train.push_back({seed->get<uint64_t>(), step->get<double>(), number_or_nan("loss"), number_or_nan("lr"),
                           number_or_nan("tokens_per_s")});
    if (auto eval = record.find("eval"); eval != record.end()) {
      if (!eval->is_object()) throw std::runtime_error(fmt::format("metrics.jsonl line {}: eval is not a record", number));
      for (auto it = eval->begin(); it != eval->end(); ++it) {
        if (!it.value().is_number()) throw bad("an accuracy");
        out.evals.push_back({seed->get<uint64_t>(), step->get<double>(), it.key(), it.value().get<double>()});
      }
    }
  }
  return out;
}

std::vector<LossPoint> lossCurve(std::string_view log) {
  std::vector<LossPoint> out;
  for (const TrainPoint& p : readMetricsLog(log).train)
    if (!std::isnan(p.loss)) out.push_back({p.seed, p.step, p.loss});
  return out;
}

}  // namespace posc::formats
