// posc probe FILE --from RUN_DIR: run the experiment's declared probes on the
// final checkpoints of a finished run, without retraining.
#include <fmt/format.h>

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include <unistd.h>

#include "runtime/model/device.h"
#include "runtime/probe/probe.h"
#include "runtime/results/atomic_file.h"
#include "runtime/run/run_experiment.h"
#include "runtime/results/run_folder.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/trainer.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

namespace fs = std::filesystem;

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(' ') + 1 - b);
}

const char* kProbeHelp = R"(usage: posc probe FILE --from RUN_DIR [options]

Runs the probes declared in the experiment's `probes { }` section on the final
checkpoints (RUN_DIR/seed<N>/final.pt) of a finished run and writes
RUN_DIR/probes/<name>.{csv,md,svg}. Compile FILE with the preset the run used.
`posc help probes` lists the probes and their arguments.

options:
  --from DIR          the results folder of the run (required)
  --probe NAME        run only this declared probe (reach, sink_share, kernel, bands, teacher_forced, stop)
  --probe 'CALL'      run only this probe call, written as a line of a probes section, in place of
                      the declared probe of its kind: --probe 'reach(lengths = [200, 400, 800])'
  --out DIR           write the probe files into DIR (default: RUN_DIR/probes, replacing the files
                      of a probe of the same kind)
  --experiment NAME   the experiment to use (default: the last one in FILE)
  --preset NAME       the preset the run used (e.g. small)
  --set KEY=VALUE     override a setting (repeatable)
  --seed N            probe only this seed
  --device cpu|cuda   where to run (default: cpu)
  --threads N         CPU threads (default 1)
)";

int runProbe(const std::vector<std::string>& args) {
  std::string from, only, out, device = "cpu";
  int threads = 1;
  ExperimentOptions o = parseExperimentOptions(args, [&](const std::string& flag, const auto& value) {
    if (flag == "--from") from = value();
    else if (flag == "--probe") only = value();
    else if (flag == "--out") out = value();
    else if (flag == "--device") {
      device = value();
      if (device != "cpu" && device != "cuda")
        throw UsageError{fmt::format("--device takes cpu or cuda, not '{}'", device)};
    } else if (flag == "--threads") threads = parseCount("--threads", value());
    else return false;
    return true;
  });
  if (o.help) {
    std::fputs(kProbeHelp, stdout);
    return 0;
  }
  if (o.files.size() != 1) throw UsageError{"posc probe needs exactly one FILE"};
  if (from.empty()) throw UsageError{"posc probe needs --from RUN_DIR (the results folder of a run)"};
  // A call (`reach(lengths = [200, 400])`) joins the plan after its declared
  // probes; only that probe runs. Its name is checked by the compiler.
  if (const size_t paren = only.find('('); paren != std::string::npos) {
    o.request.probe_calls.push_back(only);
    only = trim(only.substr(0, paren));
    if (only.empty()) throw UsageError{"--probe 'CALL' starts with the probe's name: --probe 'reach(lengths = [200, 400])'"};
  }
  driver::Compilation c;
  if (!c.compile(requestFor(o, o.files[0]))) return reportDiagnostics(c);
  reportDiagnostics(c);
  const plan::ExperimentPlan& plan = *c.plan;
  try {
    if (plan.probes.empty())
      throw runtime::UserError(fmt::format(
          "experiment '{}' declares no probes; add a section such as probes {{ reach(lengths = [10, 20, 40]) }}",
          plan.name));
    if (!only.empty()) {
      bool found = false;
      std::string names;
      for (const auto& p : plan.probes) {
        found = found || p.name == only;
        names += (names.empty() ? "" : ", ") + p.name;
      }
      if (!found)
        throw UsageError{fmt::format("experiment '{}' declares no probe '{}'; it declares {}", plan.name, only, names)};
    }
    if (!fs::is_directory(from)) throw runtime::UserError(fmt::format("'{}' is not a results folder", from));
    // The checkpoints load into any plan with the same parameter shapes; a
    // changed rate, rotation or exemption would be measured silently on the
    // wrong model. The run's plan.txt records what it trained.
    if (auto recorded = results::readFileText(fs::path(from) / "plan.txt"))
      if (auto d = plan::modelDifference(*recorded, plan::dumpPlan(plan)))
        throw runtime::UserError(fmt::format(
            "'{}' was trained with another model than this plan of {} describes:\n  the run:   {}\n  this plan: {}\n"
            "probe it with the experiment file and preset it was trained with (its copy: {})",
            from, o.files[0], trim(d->recorded), trim(d->current), (fs::path(from) / "source.pos").string()));
    // A run started into the folder meanwhile would replace the checkpoints
    // under the probe and receive the old model's results in its probes/.
    // A folder this user cannot write is one no run of theirs can replace:
    // its probes go to --out without the lock.
    std::optional<results::FolderLock> lock;
    if (out.empty() || ::access(from.c_str(), W_OK) == 0) lock.emplace(from, "probe");
    const torch::Device dev = model::resolveDevice(device);
    model::setThreads(threads);
    // Load every checkpoint before running anything, so a missing one writes nothing.
    std::vector<probe::SeedModel> models;
    for (uint64_t seed : plan.train.seeds) {
      const fs::path ckpt = fs::path(from) / fmt::format("seed{}", seed) / "final.pt";
      if (!fs::exists(ckpt))
        throw runtime::UserError(fmt::format("checkpoint '{}' not found; is '{}' a run of '{}'{}?", ckpt.string(), from,
                                             plan.name, plan.preset.empty() ? "" : " with --preset " + plan.preset));
      model::Gpt m = train::buildModel(plan, seed, torch::kCPU);
      try {
        train::loadCheckpoint(*m, ckpt);
      } catch (const std::runtime_error& e) {
        throw runtime::UserError(fmt::format("{}\n(does the run use the same experiment and preset as this plan?)", e.what()));
      }
      m->to(dev);
      m->eval();
      models.push_back({seed, m});
    }
    const fs::path dir = out.empty() ? fs::path(from) / "probes" : fs::path(out);
    probe::runAndWriteProbes(plan, models, dir, only);
    std::fprintf(stderr, "probes in %s\n", dir.string().c_str());
    return 0;
  } catch (const runtime::UserError& e) {
    std::fprintf(stderr, "posc: error: %s\n", e.what());
    return 2;
  }
}

const CommandRegistration reg{{"probe", "posc probe FILE --from RUN_DIR",
                               "run the declared probes on a finished run's checkpoints", 40, true, runProbe}};

}  // namespace
}  // namespace posc::cli
