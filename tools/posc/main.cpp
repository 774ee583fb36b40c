// posc: the command line.
//
//   posc check FILE...             parse and check; exit 2 on any error
//   posc emit ast|plan FILE        print the AST or the resolved plan
//   posc run FILE [options]        compile, train, evaluate, write a results folder
//   posc help [settings]           usage, or every setting with its meaning
//
// Exit codes: 0 success, 2 a problem with the input or the command line
// (reported with file:line:col and a caret), 1 an internal error.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/sema/settings.h"
#include "runtime/run.h"
#include "tools/posc/blas_kernels.h"

namespace {

constexpr const char* kVersion = POSC_VERSION;

const char* kUsage = R"(posc - experiments on position, distance and length generalisation

usage:
  posc check FILE...              check .pos files (every experiment in each)
  posc emit ast FILE              print the syntax tree
  posc emit plan FILE [options]   print the resolved experiment plan
  posc run FILE [options]         train, evaluate and write a results folder
  posc help settings              list every task/model/train/eval setting
  posc --version

options (emit plan, run):
  --experiment NAME   the experiment to use (default: the last one in FILE)
  --preset NAME       apply a preset declared in the experiment (e.g. small)
  --set KEY=VALUE     override a setting, e.g. --set train.steps=500 (repeatable)
  --steps N           same as --set train.steps=N
  --seed N            run only this seed (same as --set train.seeds=[N])
options (run):
  --out DIR           results folder (default: runs/NAME[-PRESET])
  --device cpu|cuda   where to train (default: cpu)
  --threads N         CPU threads (default 1: for the small models of these
                      studies one thread is fastest on CPU; 0 = LibTorch's choice)
  --init-root DIR     where warm starts find other experiments' runs
                      (default: the parent of --out)
  --no-progress       plain progress lines even on a terminal

Run `posc COMMAND --help` for one command.
)";

struct UsageError {
  std::string message;
};

bool colorOutput() { return isatty(fileno(stderr)) && std::getenv("NO_COLOR") == nullptr; }

int reportDiagnostics(const posc::driver::Compilation& c) {
  std::string text = c.diags.render(colorOutput());
  std::fputs(text.c_str(), stderr);
  return c.diags.hasErrors() ? 2 : 0;
}

struct Options {
  std::vector<std::string> files;
  posc::sema::ExperimentRequest request;
  std::string out;
  std::string device = "cpu";
  int threads = 1;
  std::string init_root;
  bool no_progress = false;
  bool help = false;
};

int parseInt(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    long long x = std::stoll(v, &used);
    if (used != v.size() || x < 0 || x > 2000000000) throw std::invalid_argument(v);
    return static_cast<int>(x);
  } catch (...) {
    throw UsageError{fmt::format("{} needs a non-negative integer, got '{}'", flag, v)};
  }
}

Options parseOptions(const std::vector<std::string>& args, bool run_options) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
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
      if (eq == std::string::npos || eq == 0) throw UsageError{fmt::format("--set needs KEY=VALUE, got '{}'", kv)};
      o.request.overrides.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
    } else if (flag == "--steps") o.request.overrides.push_back({"train.steps", std::to_string(parseInt("--steps", value()))});
    else if (flag == "--seed") o.request.overrides.push_back({"train.seeds", fmt::format("[{}]", parseInt("--seed", value()))});
    else if (run_options && flag == "--out") o.out = value();
    else if (run_options && flag == "--device") {
      o.device = value();
      if (o.device != "cpu" && o.device != "cuda") throw UsageError{fmt::format("--device takes cpu or cuda, not '{}'", o.device)};
    } else if (run_options && flag == "--threads") o.threads = parseInt("--threads", value());
    else if (run_options && flag == "--init-root") o.init_root = value();
    else if (run_options && a == "--no-progress") o.no_progress = true;
    else if (a.rfind("-", 0) == 0 && a.size() > 1) throw UsageError{fmt::format("unknown option '{}'", a)};
    else o.files.push_back(a);
  }
  return o;
}

posc::driver::CompileRequest requestFor(const Options& o, const std::string& file) {
  posc::driver::CompileRequest r;
  r.path = file;
  r.experiment = o.request;
  return r;
}

int cmdCheck(const std::vector<std::string>& args) {
  Options o = parseOptions(args, false);
  if (o.help) {
    std::puts("usage: posc check FILE...\n\nParses and checks every experiment of each file (and the components\n"
              "they use). Prints located errors and exits with 2 if there are any.");
    return 0;
  }
  if (o.files.empty()) throw UsageError{"posc check needs at least one FILE"};
  int status = 0;
  for (const std::string& f : o.files) {
    posc::driver::Compilation c;
    c.checkAll(requestFor(o, f));
    if (reportDiagnostics(c) != 0) status = 2;
  }
  return status;
}

int cmdEmit(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::puts("usage: posc emit ast FILE\n       posc emit plan FILE [--experiment NAME] [--preset NAME] [--set K=V]...\n\n"
              "ast:  the syntax tree, with the source range of every node\n"
              "plan: the resolved experiment: every setting, every positional component\n"
              "      (which pairs rotate by which channel, exempt kinds, learned params)");
    return 0;
  }
  std::string what = args[0];
  Options o = parseOptions({args.begin() + 1, args.end()}, false);
  if (o.files.size() != 1) throw UsageError{fmt::format("posc emit {} needs exactly one FILE", what)};
  posc::driver::Compilation c;
  if (what == "ast") {
    if (!c.load(requestFor(o, o.files[0]))) return reportDiagnostics(c);
    std::fputs(posc::ast::dump(c.program->main().file, c.sources).c_str(), stdout);
    return reportDiagnostics(c);
  }
  if (what == "plan") {
    if (!c.compile(requestFor(o, o.files[0]))) return reportDiagnostics(c);
    std::fputs(posc::plan::dumpPlan(*c.plan).c_str(), stdout);
    return reportDiagnostics(c);
  }
  throw UsageError{fmt::format("posc emit takes ast or plan, not '{}'", what)};
}

int cmdRun(const std::vector<std::string>& args) {
  Options o = parseOptions(args, true);
  if (o.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (o.files.size() != 1) throw UsageError{"posc run needs exactly one FILE"};
  posc::driver::Compilation c;
  // Compile first: on any error nothing is written to disk.
  if (!c.compile(requestFor(o, o.files[0]))) return reportDiagnostics(c);
  reportDiagnostics(c);  // warnings
  const posc::plan::ExperimentPlan& plan = *c.plan;

  posc::runtime::RunOptions ro;
  ro.out_dir = o.out.empty() ? (std::filesystem::path("runs") /
                                (plan.name + (plan.preset.empty() ? "" : "-" + plan.preset))).string()
                             : o.out;
  ro.device = o.device;
  ro.threads = o.threads;
  std::string blas = posc::tools::blasCoreName();
  ro.plan_text = c.planWithProvenance(kVersion, blas.empty() ? "" : "OpenBLAS " + blas + " kernels");
  ro.source_text = c.sources.file(0).text();
  ro.version = kVersion;
  ro.init_root = o.init_root.empty() ? std::filesystem::path(ro.out_dir).parent_path().string() : o.init_root;
  if (o.no_progress) ro.progress_bar = false;
  try {
    return posc::runtime::runExperiment(plan, ro);
  } catch (const posc::runtime::UserError& e) {
    std::fprintf(stderr, "posc: error: %s\n", e.what());
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Only commands that do numeric work (or report the kernels) pay for the
  // possible re-exec; check and emit never touch the BLAS.
  if (!args.empty() && (args[0] == "run" || args[0] == "--version" || args[0] == "--blas-kernels"))
    posc::tools::chooseBlasKernels(argv);
  try {
    if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
      if (args.size() >= 2 && args[1] == "settings") {
        std::fputs(posc::sema::describeSettings().c_str(), stdout);
        return 0;
      }
      std::fputs(kUsage, stdout);
      return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
      std::string blas = posc::tools::blasCoreName();
      std::printf("posc %s (BLAS: %s)\n", kVersion, blas.empty() ? "not OpenBLAS" : ("OpenBLAS " + blas + " kernels").c_str());
      return 0;
    }
    if (args[0] == "--blas-kernels") {  // the OpenBLAS core in use, for scripts and tests
      std::printf("%s\n", posc::tools::blasCoreName().c_str());
      return 0;
    }
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "check") return cmdCheck(rest);
    if (args[0] == "emit") return cmdEmit(rest);
    if (args[0] == "run") return cmdRun(rest);
    throw UsageError{fmt::format("unknown command '{}'", args[0])};
  } catch (const UsageError& e) {
    std::fprintf(stderr, "posc: error: %s\n(run 'posc --help' for usage)\n", e.message.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "posc: internal error: %s\n", e.what());
    return 1;
  }
}
