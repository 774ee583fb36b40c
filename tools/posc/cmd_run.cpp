// posc run FILE: compile, train every seed, evaluate, write a results folder.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "compiler/jit/compiled.h"
#include "runtime/distributed/process_group.h"
#include "runtime/handset/run_handset.h"
#include "runtime/model/device.h"
#include "runtime/results/run_folder.h"
#include "runtime/run/run_experiment.h"
#include "tools/posc/blas_kernels.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

const char* kRunHelp = R"(usage: posc run FILE [options]

Compiles the experiment, trains each seed, evaluates exact-match accuracy per
test length and writes a results folder (plan.txt, source.pos, metrics.jsonl,
accuracy.csv, summary.md, seed<N>/final.pt). A hand-set model (weights written
in the file) is not trained: its parameters are counted by every rule and it
is evaluated by eval.protocol (parameters.txt, failures.csv, summary.md).

options:
  --experiment NAME   the experiment to use (default: the last one in FILE)
  --preset NAME       apply a preset declared in the experiment (e.g. small)
  --set KEY=VALUE     override a setting, or an attention argument:
                      --set attention.alibi.slopes=0.125 (repeatable)
  --steps N           same as --set train.steps=N
  --seed N            run only this seed
  --out DIR           results folder (default: runs/NAME[-PRESET])
  --device cpu|cuda   where to train (default: cpu)
  --threads N|auto    CPU threads (default auto: every core on OpenBLAS's OpenMP
                      build, which posc loads where it is installed; on the
                      pthread build every core for models of 2M weights or more
                      in their blocks and one for smaller ones, where a second
                      thread slows the step down; 0 = LibTorch's choice)
  --jit on|off        score terms, causal mask and softmax through fused kernels
                      compiled by LLVM's JIT (default: on for the CPU when posc
                      is built with LLVM); off: one LibTorch operation per
                      formula node, the path on CUDA
  --init-root DIR     where warm starts find other experiments' runs
                      (default: the parent of --out)
  --no-progress       plain progress lines even on a terminal
  --dump-training DIR write DIR/seed<N>/init.safetensors (the weights before the
                      first step) and DIR/seed<N>/step_<k>.safetensors (each step's
                      batch: tokens, targets, loss_mask, channels), for comparing
                      posc's training with another implementation step by step
  --fresh             discard the run in the results folder and start over: needed for
                      an unfinished run, or a finished run of another plan (a finished
                      run of the same plan is replaced without it); also writes into a
                      non-empty folder that is not a posc results folder (refused
                      without it), deleting nothing there. A run that differs only in
                      what is evaluated after training (eval, test lengths, probes)
                      needs no --fresh: it keeps the trained weights and evaluates again

Runs can be stopped and continued. Ctrl-C (SIGINT) or SIGTERM stops at the next
step boundary and writes a resume point; even after a SIGKILL, running the same
command again continues from the last resume point (every checkpoint_every
steps, or every twentieth of training) and ends with the weights an
uninterrupted run would have (same device and --threads). One run owns a
results folder at a time.

Data-parallel training: started by a launcher that sets RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT, e.g.

  torchrun --no_python --standalone --nproc_per_node 2 posc run FILE

each process joins a c10d process group over Gloo and trains on its share of
every global batch (train.batch must be a multiple of the world size); rank 0
writes the results folder. A rank that dies ends every rank with an error
within POSC_DIST_TIMEOUT seconds (default 1800). GLOO_SOCKET_IFNAME picks the
network interface across machines. See docs/scale.md.
)";

// The command that continues a run: the same arguments, shell-quoted.
std::string commandLine(const std::vector<std::string>& args) {
  std::string out = "posc run";
  for (const std::string& a : args) {
    if (a == "--fresh") continue;
    bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                   "0123456789-_./=:,+@") == std::string::npos;
    if (plain) {
      out += " " + a;
    } else {
      std::string quoted = "'";
      for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += " " + quoted + "'";
    }
  }
  return out;
}

// More CPU threads than any machine posc runs on has cores; each costs a
// stack and per-thread buffers, so an extra zero cannot exhaust memory.
constexpr int kMaxThreads = 1024;

int runRun(const std::vector<std::string>& args) {
  std::string out, device = "cpu", init_root, dump_dir;
  std::optional<int> threads;  // empty: auto
  bool no_progress = false, fresh = false;
  std::string jit_flag;
  ExperimentOptions o = parseExperimentOptions(args, [&](const std::string& flag, const auto& value) {
    if (flag == "--out") out = value();
    else if (flag == "--device") {
      device = value();
      if (device != "cpu" && device != "cuda")
        throw UsageError{fmt::format("--device takes cpu or cuda, not '{}'", device)};
    } else if (flag == "--threads") {
      const std::string v = value();
      threads = v == "auto" ? std::nullopt : std::optional<int>(parseCount("--threads", v));
      if (threads && *threads > kMaxThreads)
        throw UsageError{fmt::format("--threads {} is more than posc starts ({} at most); auto uses the cores "
                                     "that help", *threads, kMaxThreads)};
    } else if (flag == "--init-root") init_root = value();
    else if (flag == "--dump-training") dump_dir = value();
    else if (flag == "--no-progress") no_progress = true;
    else if (flag == "--fresh") fresh = true;
    else if (flag == "--jit") {
      jit_flag = value();
      if (jit_flag != "on" && jit_flag != "off")
        throw UsageError{fmt::format("--jit takes on or off, not '{}'", jit_flag)};
    }
    else return false;
    return true;
  });
  if (o.help) {
    std::fputs(kRunHelp, stdout);
    return 0;
  }
  if (o.files.size() != 1) throw UsageError{"posc run needs exactly one FILE"};
  driver::Compilation c;
  // Compile first: on any error nothing is written to disk.
  driver::CompileRequest request = requestFor(o, o.files[0]);
  request.experiment.on_cpu = device == "cpu";
  if (!c.compile(request)) return reportDiagnostics(c);
  reportDiagnostics(c);  // warnings
  const plan::ExperimentPlan& plan = *c.plan;

  runtime::RunOptions ro;
  ro.out_dir = out.empty() ? (std::filesystem::path("runs") /
                              (plan.name + (plan.preset.empty() ? "" : "-" + plan.preset))).string()
                           : out;
  ro.device = device;
  ro.dump_dir = dump_dir;
  ro.threads = threads ? *threads
             : device == "cpu" ? model::usefulThreads(plan.model, model::availableCores(), tools::blasSharesTorchThreads())
                               : 1;
  if (ro.threads != 1) tools::ensurePassiveOpenMp();  // may run posc again with OMP_WAIT_POLICY set
  ro.score_jit = jit_flag.empty() ? device == "cpu" && jit::available() : jit_flag == "on";
  const std::string blas = tools::blasDescription();
  std::string numerics = blas.empty() ? "" : blas + "; ";
  numerics += ro.threads == 0 ? "LibTorch's thread count; " : fmt::format("{} CPU thread{}; ", ro.threads, ro.threads == 1 ? "" : "s");
  numerics += ro.score_jit ? "score formulas: fused JIT kernels (LLVM ORC, host CPU)"
                           : "score formulas: tensor operations";
  std::optional<dist::Launch> launch;
  try {
    launch = dist::launchFromEnvironment();
  } catch (const dist::LaunchError& e) {
    std::fprintf(stderr, "posc: error: %s\n", e.what());
    return 2;
  }
  // Each rank trains on its own GPU, as torchrun places ranks (the plan's
  // hash keeps the device as written, the same on every rank).
  if (launch && device == "cuda") ro.device = fmt::format("cuda:{}", launch->local_rank);
  const torch::Device group_device =
      launch && ro.device.rfind("cuda", 0) == 0 ? torch::Device(ro.device) : torch::Device(torch::kCPU);
  if (launch)
    numerics += fmt::format("; data-parallel over {} ranks ({})", launch->world_size, dist::backendFor(group_device));
  ro.plan_text = c.planWithProvenance(kVersion, numerics);
  ro.source_text = c.sources.file(0).text();
  ro.version = kVersion;
  ro.init_root = init_root.empty() ? std::filesystem::path(ro.out_dir).parent_path().string() : init_root;
  if (no_progress) ro.progress_bar = false;
  const std::string placement =
      "\ndevice " + device + (ro.score_jit ? "\nscore formulas: fused kernels" : "\nscore formulas: tensor ops");
  const driver::PlanHashes own = driver::hashPlan(plan, placement);
  ro.plan_hash = own.plan;
  ro.training_hash = own.training;
  // A folder of a version before training hashes: its plan as this run hashes its own.
  if (const std::optional<plan::ExperimentPlan> recorded = results::readRecordedPlan(ro.out_dir)) {
    const driver::PlanHashes folder = driver::hashPlan(*recorded, placement);
    ro.folder_plan_hash = folder.plan;
    ro.folder_training_hash = folder.training;
  }
  ro.fresh = fresh;
  ro.continue_command = commandLine(args);
  std::unique_ptr<dist::ProcessGroup> group;
  try {
    if (launch) {
      if (plan.handset) throw dist::LaunchError("a hand-set model is not trained; run it as one process");
      if (plan.train.batch % launch->world_size != 0)
        throw dist::LaunchError(fmt::format("{}: train.batch = {} does not split evenly across {} ranks; make it a "
                                            "multiple of the world size",
                                            launch->describe(), plan.train.batch, launch->world_size));
      // A data-parallel run writes no resume points, and cannot continue
      // from one process's: refused, so that the resume point is kept.
      if (!fresh) {
        const std::optional<results::RunStatus> previous = results::readStatus(ro.out_dir);
        if (previous && !previous->finished())
          for (const std::filesystem::path& weights : results::trainedWeights(ro.out_dir))
            if (weights.filename() == "resume.pt")
              throw dist::LaunchError(fmt::format(
                  "{}: the run in '{}' ({}) has a resume point written by one process, {}; a data-parallel run "
                  "cannot continue from it (it continues from finished seeds only). Continue it as one process (posc "
                  "run without the launcher), or start over with --fresh",
                  launch->describe(), ro.out_dir, results::describeStatus(*previous), weights.string()));
      }
      group = dist::ProcessGroup::join(*launch, group_device);
      ro.group = group.get();
      if (group->rank() != 0) ro.progress_bar = false;
      std::fprintf(stderr, "data-parallel: %s over %s, %d rows of each batch of %d\n", launch->describe().c_str(),
                   group->backend(), plan.train.batch / launch->world_size, plan.train.batch);
    }
  } catch (const dist::LaunchError& e) {
    std::fprintf(stderr, "posc: error: %s\n", e.what());
    return 2;
  } catch (const dist::CollectiveError& e) {
    std::fprintf(stderr, "posc: error: %s\n", e.what());
    return 1;
  }
  try {
    if (plan.handset) return handset::runHandset(plan, ro);
    return runtime::runExperiment(plan, ro);
  } catch (const dist::CollectiveError& e) {
    std::fprintf(stderr, "posc: error: data-parallel training stopped: %s\n", e.what());
    return 1;
  } catch (const runtime::UserError& e) {
    std::fprintf(stderr, "posc: error: %s\n", e.what());
    return 2;
  } catch (const runtime::Interrupted& e) {
    std::fprintf(stderr, "posc: %s\n", e.what());
    return 128 + e.signal;
  }
}

const CommandRegistration reg{{"run", "posc run FILE [options]",
                               "train, evaluate and write a results folder", 30, true, runRun}};

}  // namespace
}  // namespace posc::cli
