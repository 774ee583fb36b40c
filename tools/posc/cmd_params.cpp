// posc params FILE: the parameter counts of a model, tensor by tensor. A
// hand-set model is counted from its written weights, rule by rule; a trained
// one from the model posc builds for it (the trained tensors, each counted
// once, so a tied embedding once; fixed tables and score constants are listed
// and not counted, the leaderboard's rule for fixed positional encodings).
#include <fmt/format.h>

#include <cstdio>

#include "compiler/plan/params.h"
#include "runtime/model/gpt.h"
#include "runtime/train/safetensors.h"
#include "runtime/train/trainer.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

const char* kParamsHelp = R"(usage: posc params FILE [options]

A hand-set model (weights written in the file): its parameters under each
rule: dense, non-zero, excluding tensors that only route dimensions
(identities), and unique after tying (the leaderboard's tying rule, applied to
the non-zero entries). ALiBi slopes are a fixed positional encoding and are
reported without being counted.

A trained model: the unique trained parameters of the model posc builds for
the experiment, tensor by tensor under the names of final.safetensors (a tied
embedding is one tensor and counts once); fixed tensors (constant score
parameters) are listed and not counted.

options:
  --experiment NAME   the experiment to use (default: the last one in FILE)
  --set KEY=VALUE     override a setting (repeatable)
)";

std::string renderTrainedCounts(const plan::ExperimentPlan& plan) {
  model::Gpt gpt(plan, train::vocabularySize(plan.task));
  std::string rows, fixed;
  long long trained = 0;
  auto row = [](const std::string& name, const torch::Tensor& t) {
    return fmt::format("  {:<40} {:>10}\n", train::gptName(name), t.numel());
  };
  for (const auto& p : gpt->named_parameters()) {
    (p.value().requires_grad() ? rows : fixed) += row(p.key(), p.value());
    if (p.value().requires_grad()) trained += p.value().numel();
  }
  for (const auto& b : gpt->named_buffers()) fixed += row(b.key(), b.value());
  std::string out = fmt::format("{}: {} unique trained parameters\n{}", plan.name, trained, rows);
  if (!fixed.empty()) out += "fixed (not counted):\n" + fixed;
  return out;
}

int runParams(const std::vector<std::string>& args) {
  ExperimentOptions o = parseExperimentOptions(args);
  if (o.help) {
    std::fputs(kParamsHelp, stdout);
    return 0;
  }
  if (o.files.size() != 1) throw UsageError{"posc params needs exactly one FILE"};
  driver::Compilation c;
  if (!c.compile(requestFor(o, o.files[0]))) return reportDiagnostics(c);
  reportDiagnostics(c);
  if (!c.plan->handset) {
    std::fputs(renderTrainedCounts(*c.plan).c_str(), stdout);
    return 0;
  }
  std::fputs(plan::renderParameterCounts(plan::countParameters(*c.plan->handset)).c_str(), stdout);
  return 0;
}

const CommandRegistration reg{{"params", "posc params FILE [options]",
                               "count a model's parameters (hand-set: under each rule)", 45, false, runParams}};

}  // namespace
}  // namespace posc::cli
