// posc params FILE: the parameter counts of a hand-set model, rule by rule.
#include <fmt/format.h>

#include <cstdio>

#include "compiler/plan/params.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

const char* kParamsHelp = R"(usage: posc params FILE [options]

Counts the parameters of a hand-set model (weights written in the file) under
each rule: dense, non-zero, excluding tensors that only route dimensions
(identities), and unique after tying (the leaderboard's tying rule, applied to
the non-zero entries). ALiBi slopes are a fixed positional encoding and are
reported without being counted.

options:
  --experiment NAME   the experiment to use (default: the last one in FILE)
  --set KEY=VALUE     override a setting (repeatable)
)";

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
    std::fprintf(stderr, "posc: error: experiment '%s' has no written weights; posc params counts hand-set models\n",
                 c.plan->name.c_str());
    return 2;
  }
  std::fputs(plan::renderParameterCounts(plan::countParameters(*c.plan->handset)).c_str(), stdout);
  return 0;
}

const CommandRegistration reg{{"params", "posc params FILE [options]",
                               "count a hand-set model's parameters under each rule", 45, false, runParams}};

}  // namespace
}  // namespace posc::cli
