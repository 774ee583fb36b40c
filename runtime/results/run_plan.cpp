// Reading a run's plan: see runtime/results/run_plan.h.
#include "runtime/results/run_plan.h"

#include <sstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "compiler/plan/plan_json.h"
#include "runtime/results/atomic_file.h"

namespace posc::results {
namespace {

namespace fs = std::filesystem;

// The upper end of "<what> of A..B <unit>" in a line, or 0.
int rangeEnd(const std::string& line, const std::string& what) {
  const size_t at = line.find(what);
  if (at == std::string::npos) return 0;
  const size_t dots = line.find("..", at + what.size());
  if (dots == std::string::npos) return 0;
  try {
    return std::stoi(line.substr(dots + 2));
  } catch (const std::exception&) {
    return 0;
  }
}

// "published exact match (%) by digits: 60: 83 / 98, 100: 62 / 91  [source]"
void readPublished(const std::string& line, plan::EvalPlan& eval) {
  const std::string key = "published exact match (%) by digits: ";
  const size_t at = line.find(key);
  if (at == std::string::npos) return;
  std::string figures = line.substr(at + key.size());
  if (const size_t open = figures.find('['); open != std::string::npos) {
    const size_t close = figures.find(']', open);
    eval.published_source = figures.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1);
    figures.resize(open);
  }
  std::stringstream entries(figures);
  for (std::string entry; std::getline(entries, entry, ',');) {
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) continue;
    plan::PublishedAccuracy a;
    try {
      a.digits = std::stoi(entry.substr(0, colon));
      std::stringstream values(entry.substr(colon + 1));
      for (std::string v; std::getline(values, v, '/');) a.percent.push_back(std::stod(v));
    } catch (const std::exception&) {
      continue;
    }
    eval.published.push_back(std::move(a));
  }
}

plan::ExperimentPlan fromPlanText(const std::string& text, const fs::path& file) {
  plan::ExperimentPlan p;
  p.train.steps = 0;  // unknown
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("experiment ", 0) == 0) p.name = line.substr(11, line.find(' ', 11) - 11);
    else if (line.rfind("  preset ", 0) == 0) p.preset = line.substr(9, line.find(' ', 9) - 9);
    if (int digits = rangeEnd(line, "training operands of")) p.task.train_max_digits = digits;
    if (int tokens = rangeEnd(line, "training prompts of")) {
      p.task.kind = plan::TaskKind::Documents;
      p.task.documents.train_max_length = tokens;
    }
    readPublished(line, p.eval);
  }
  if (p.name.empty()) throw std::runtime_error(fmt::format("'{}' names no experiment", file.string()));
  return p;
}

}  // namespace

plan::ExperimentPlan readRunPlan(const fs::path& dir) {
  if (const auto json = readFileText(dir / "plan.json")) {
    try {
      return plan::planFromJson(*json);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(fmt::format("'{}': {}", (dir / "plan.json").string(), e.what()));
    }
  }
  const auto text = readFileText(dir / "plan.txt");
  if (!text) throw std::runtime_error(fmt::format("'{}' is not a results folder (no plan.json or plan.txt)", dir.string()));
  return fromPlanText(*text, dir / "plan.txt");
}

std::string runVariant(const plan::ExperimentPlan& plan) {
  return plan.preset.empty() ? plan.name : plan.name + "-" + plan.preset;
}

}  // namespace posc::results
