// Reading metrics.jsonl through the JSON library; see metrics_log.h.
#include "runtime/formats/metrics_log.h"

#include <fmt/format.h>

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

std::vector<LossPoint> lossCurve(std::string_view log) {
  std::vector<LossPoint> out;
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
    auto seed = record.find("seed"), step = record.find("step"), loss = record.find("loss");
    if (seed == record.end() || step == record.end() || loss == record.end() || loss->is_null()) continue;
    if (!seed->is_number_unsigned() || !step->is_number() || !loss->is_number())
      throw std::runtime_error(fmt::format("metrics.jsonl line {}: seed, step or loss is not a number", number));
    out.push_back({seed->get<uint64_t>(), step->get<double>(), loss->get<double>()});
  }
  return out;
}

}  // namespace posc::formats
