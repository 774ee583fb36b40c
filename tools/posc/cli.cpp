// The command registry and option parsing shared by every command.
#include "tools/posc/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>

namespace posc::cli {

namespace {

std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> r;
  return r;
}

}  // namespace

CommandRegistration::CommandRegistration(Command c) {
  std::string name = c.name;
  registry().emplace(std::move(name), std::move(c));
}

std::vector<const Command*> commands() {
  std::vector<const Command*> out;
  for (const auto& [name, c] : registry()) out.push_back(&c);
  std::stable_sort(out.begin(), out.end(),
                   [](const Command* a, const Command* b) { return a->order < b->order; });
  return out;
}

const Command* findCommand(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

bool colorOutput() { return isatty(fileno(stderr)) && std::getenv("NO_COLOR") == nullptr; }

int reportDiagnostics(const driver::Compilation& c) {
  std::string text = c.diags.render(colorOutput());
  std::fputs(text.c_str(), stderr);
  return c.diags.hasErrors() ? 2 : 0;
}

int parseCount(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    long long x = std::stoll(v, &used);
    if (used != v.size() || x < 0 || x > 2000000000) throw std::invalid_argument(v);
    return static_cast<int>(x);
  } catch (...) {
    throw UsageError{fmt::format("{} needs a non-negative integer, got '{}'", flag, v)};
  }
}

ExperimentOptions parseExperimentOptions(const std::vector<std::string>& args, const ExtraOption& extra) {
  ExperimentOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::function<std::string()> value = [&]() -> std::string {
      size_t eq = a.find('=');
      if (a.rfind("--", 0) == 0 && eq != std::string::npos) return a.substr(eq + 1);
      if (i + 1 >= args.size()) throw UsageError{fmt::format("{} needs a value", a)};
      return args[++i];
    };
    std::string flag = a.substr(0, a.find('='));
    if (a == "-h" || a == "--help") o.help = true;
    else if (flag == "--experiment") o.request.experiment = value();
    else if (flag == "--preset") o.request.preset = value();
    else if (flag == "--set") {
      std::string kv = value();
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UsageError{fmt::format("--set needs KEY=VALUE, got '{}'", kv)};
      o.request.overrides.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
    } else if (flag == "--steps") {
      o.request.overrides.push_back({"train.steps", std::to_string(parseCount("--steps", value()))});
    } else if (flag == "--seed") {
      o.request.overrides.push_back({"train.seeds", fmt::format("[{}]", parseCount("--seed", value()))});
    } else if (a.rfind("-", 0) == 0 && a.size() > 1) {
      if (!extra || !extra(flag, value)) throw UsageError{fmt::format("unknown option '{}'", a)};
    } else {
      o.files.push_back(a);
    }
  }
  return o;
}

driver::CompileRequest requestFor(const ExperimentOptions& o, const std::string& file) {
  driver::CompileRequest r;
  r.path = file;
  r.experiment = o.request;
  return r;
}

std::string usage() {
  std::string s = "posc - experiments on position, distance and length generalisation\n\nusage:\n";
  for (const Command* c : commands()) {
    if (c->synopsis.size() <= 34) s += fmt::format("  {:<34} {}\n", c->synopsis, c->summary);
    else s += fmt::format("  {}\n  {:<34} {}\n", c->synopsis, "", c->summary);
  }
  s += fmt::format("  {:<34} {}\n", "posc help settings", "list every task/model/train/eval setting");
  s += fmt::format("  {:<34} {}\n", "posc help probes", "list the probes and their arguments");
  s += fmt::format("  {:<34} {}\n", "posc --version", "version and the BLAS kernels in use");
  s += R"(
options of commands that compile an experiment:
  --experiment NAME   the experiment to use (default: the last one in FILE)
  --preset NAME       apply a preset declared in the experiment (e.g. small)
  --set KEY=VALUE     override a setting, e.g. --set train.steps=500, or an
                      argument of the attention section's `use`s, e.g.
                      --set attention.alibi.slopes=0.125 (repeatable)
  --steps N           same as --set train.steps=N
  --seed N            run only this seed (same as --set train.seeds=[N])
  --error-limit N     show the first N errors, count the rest (default 20; 0: all)

Run `posc COMMAND --help` for one command's own options.
Exit codes: 0 success, 2 a problem with the input or the command line,
3 `posc run` finished but missed a release criterion (require(...)),
1 an internal error.
)";
  return s;
}

}  // namespace posc::cli
