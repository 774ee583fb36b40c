// runExperiment: the whole run of a compiled plan, seed by seed, into a
// results folder (layout documented in runtime/train/run_experiment.h).
//
// The folder is filled as the run goes: plan.txt and source.pos first,
// metrics.jsonl at every log point, checkpoints during training, and
// accuracy.csv / summary.md rewritten after every seed, so a run stopped
// part-way still leaves complete results for the seeds it finished.
#include <sys/statvfs.h>
#include <unistd.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "runtime/eval/greedy.h"
#include "runtime/probe/probe.h"
#include "runtime/results/atomic_file.h"
#include "runtime/results/tables.h"
#include "compiler/jit/compiled.h"
#include "runtime/model/fused_attention.h"
#include "runtime/train/run_experiment.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/interrupt.h"
#include "runtime/train/run_folder.h"
#include "runtime/train/trainer.h"

namespace posc::runtime {
namespace {

namespace fs = std::filesystem;

fs::path defaultInitRoot(const fs::path& out_dir) {
  fs::path p = out_dir.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "runs/x/" -> "runs/x"
  fs::path parent = p.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

void writeOrFail(const fs::path& path, std::string_view content) {
  try {
    results::writeFileAtomic(path, content);
  } catch (const std::runtime_error& e) {
    throw UserError(e.what());
  }
}

void createFolder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw UserError(fmt::format("cannot create results folder '{}': {}", dir.string(),
                                ec ? ec.message() : "a file of that name exists"));
}

// Steps between resume points: the checkpoint interval when one is set,
// else a twentieth of training (each point costs one write of the model and
// both AdamW moments).
int resumeInterval(const plan::TrainPlan& train) {
  if (train.checkpoint_every > 0) return train.checkpoint_every;
  return std::max(1, (train.steps + 19) / 20);
}

// The refusal to continue an unfinished run of another plan, naming the
// first line where the plans differ.
std::string differentPlan(const fs::path& out_dir, const std::string& plan_text) {
  auto planLines = [](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("# ", 0) != 0) lines.push_back(line);  // provenance lines differ between builds
    return lines;
  };
  const std::vector<std::string> old_lines = planLines(results::readFileText(out_dir / "plan.txt").value_or(""));
  const std::vector<std::string> new_lines = planLines(plan_text);
  std::string difference = "its plan.txt is missing";
  for (size_t i = 0; i < std::max(old_lines.size(), new_lines.size()); ++i) {
    const std::string was = i < old_lines.size() ? old_lines[i] : "(nothing)";
    const std::string now = i < new_lines.size() ? new_lines[i] : "(nothing)";
    if (was != now) {
      difference = fmt::format("plan line {}: was '{}', now '{}'", i + 1, was, now);
      break;
    }
    if (i + 1 == std::max(old_lines.size(), new_lines.size()))
      difference = "the same plan text, other run options (--device or --jit)";
  }
  return fmt::format("'{}' holds an unfinished run of another plan ({}); continue it with its own settings, "
                     "start over with --fresh, or choose another --out",
                     out_dir.string(), difference);
}

// Refuses, before any training, a run whose checkpoints cannot fit on the
// disk: per seed final.pt and every checkpoint_<step>.pt, and the resume
// point (the model and two AdamW moments) twice, as it is rewritten.
void checkDiskSpace(const plan::ExperimentPlan& plan, torch::nn::Module& model, const fs::path& out_dir) {
  int64_t bytes = 0;
  for (const auto& p : model.parameters()) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  for (const auto& b : model.buffers()) bytes += b.numel() * static_cast<int64_t>(b.element_size());
  const int64_t checkpoints = plan.train.checkpoint_every > 0 ? plan.train.steps / plan.train.checkpoint_every : 0;
  const double need = static_cast<double>(bytes) *
                      (static_cast<double>(plan.train.seeds.size()) * static_cast<double>(1 + checkpoints) + 2 * 3);
  struct statvfs fs_info {};
  if (::statvfs(out_dir.c_str(), &fs_info) != 0) return;  // unknown: the writes will say
  const double free_bytes = static_cast<double>(fs_info.f_bavail) * static_cast<double>(fs_info.f_frsize);
  if (need > free_bytes)
    throw UserError(fmt::format(
        "not enough disk space in '{}' for this run's checkpoints: about {:.1f} MB needed ({} seed(s) x {} "
        "checkpoint(s) of {:.1f} MB, and the resume point), {:.1f} MB free",
        out_dir.string(), need / 1e6, plan.train.seeds.size(), 1 + checkpoints, static_cast<double>(bytes) / 1e6,
        free_bytes / 1e6));
}

}  // namespace

namespace {
int runSeeds(const plan::ExperimentPlan& plan, const RunOptions& options);
}  // namespace

int runExperiment(const plan::ExperimentPlan& plan, const RunOptions& options) {
  try {
    return runSeeds(plan, options);
  } catch (const model::NonFiniteScores& e) {
    throw UserError(fmt::format("training diverged: {}", e.what()));
  }
}

namespace {
int runSeeds(const plan::ExperimentPlan& plan, const RunOptions& options) {
  const torch::Device device = train::resolveDevice(options.device);
  if (options.score_jit && !jit::available())
    throw UserError("--jit on: the score-formula JIT is unavailable (posc was built without LLVM)");
  if (options.score_jit && !device.is_cpu())
    throw UserError("--jit on: the fused score-formula kernels run on the CPU only; use --jit off on " +
                    device.str());
  train::setThreads(options.threads);

  const fs::path out_dir = options.out_dir.empty() ? fs::path(plan.name) : fs::path(options.out_dir);
  const fs::path init_root = options.init_root.empty() ? defaultInitRoot(out_dir) : fs::path(options.init_root);
  const bool terminal = ::isatty(fileno(stderr)) != 0;
  const bool bar = options.progress_bar.value_or(terminal);

  // A warm start reads <init_root>/<init_from>[-<preset>]/seed<N>/final.pt: the
  // folder `posc run` gives that experiment under the same preset.
  auto warmStartCheckpoint = [&](uint64_t seed) {
    std::string folder = *plan.train.init_from + (plan.preset.empty() ? "" : "-" + plan.preset);
    return init_root / folder / fmt::format("seed{}", seed) / "final.pt";
  };
  // Check every warm-start checkpoint before anything is written or trained.
  if (plan.train.init_from) {
    for (uint64_t seed : plan.train.seeds) {
      const fs::path ckpt = warmStartCheckpoint(seed);
      if (!fs::exists(ckpt))
        throw UserError(fmt::format(
            "warm start: checkpoint '{}' not found; run the experiment '{}' first{}, or pass --init-root "
            "(the folder that holds its results folder)",
            ckpt.string(), *plan.train.init_from, plan.preset.empty() ? "" : " with --preset " + plan.preset));
    }
  }

  createFolder(out_dir);
  train::FolderLock lock(out_dir);
  train::removeTemporaryFiles(out_dir);

  // An earlier run in the folder: continue it (same plan, unfinished), refuse
  // it (another plan, unfinished) or clear its files (finished, or --fresh).
  std::optional<train::RunStatus> previous = train::readStatus(out_dir);
  const bool resuming = previous && !previous->finished() && !options.fresh;
  if (resuming && previous->plan_hash != options.plan_hash)
    throw UserError(differentPlan(out_dir, options.plan_text));
  if (resuming)
    std::fprintf(stderr, "continuing the run in %s: %s (--fresh starts over)\n", out_dir.string().c_str(),
                 train::describeStatus(*previous).c_str());
  else
    train::removeRunOutputs(out_dir);

  train::RunStatus status = resuming ? *previous : train::RunStatus{};
  status.state = "running";
  status.pid = ::getpid();
  status.plan_hash = options.plan_hash;
  status.message.clear();
  train::writeStatus(out_dir, status);
  writeOrFail(out_dir / "plan.txt", options.plan_text);
  writeOrFail(out_dir / "source.pos", options.source_text);

  results::JsonLinesLog metrics = resuming ? results::JsonLinesLog::reopen(out_dir / "metrics.jsonl")
                                           : results::JsonLinesLog(out_dir / "metrics.jsonl");
  std::vector<results::LengthAccuracy> records;
  if (resuming) {
    // The committed seeds' results; anything later is computed again.
    try {
      for (const auto& r : results::parseAccuracyCsv(results::readFileText(out_dir / "accuracy.csv").value_or("")))
        if (status.seedDone(r.seed)) records.push_back(r);
    } catch (const std::runtime_error& e) {
      throw UserError(fmt::format("cannot continue the run in '{}': accuracy.csv: {}; start over with --fresh",
                                  out_dir.string(), e.what()));
    }
  }
  double tokens = 0, seconds = 0;
  std::vector<probe::SeedModel> trained;  // for the declared probes
  std::vector<std::string> final_errors;  // final.pt files that could not be written
  train::StopOnSignals signals;
  auto stopIfAsked = [&](uint64_t seed, int step) {
    if (int signal = train::stopRequested())
      throw Interrupted(fmt::format("stopped by {} after step {} of seed {}", train::signalName(signal), step, seed),
                        signal, step);
  };
  try {
    for (uint64_t seed : plan.train.seeds) {
      const fs::path seed_dir = out_dir / fmt::format("seed{}", seed);
      const fs::path final_file = seed_dir / "final.pt", resume_file = seed_dir / "resume.pt";
      createFolder(seed_dir);
      model::Gpt model = train::buildModel(plan, seed, device);
      model->setScoreJit(options.score_jit);
      if (seed == plan.train.seeds.front()) {
        std::fprintf(stderr, "%s: %lld parameters, %zu seed(s), %d steps each, device %s\n", plan.name.c_str(),
                     static_cast<long long>(model->parameterCount()), plan.train.seeds.size(), plan.train.steps,
                     device.str().c_str());
        checkDiskSpace(plan, *model, out_dir);
      }
      status.seed = seed;
      status.step = 0;
      // Trained in an earlier process: final.pt is complete (written atomically).
      if (resuming && fs::exists(final_file)) {
        try {
          train::loadCheckpoint(*model, final_file);
        } catch (const std::runtime_error& e) {
          throw UserError(fmt::format("{}; start over with --fresh", e.what()));
        }
        if (status.seedDone(seed)) {
          std::fprintf(stderr, "seed %llu: trained and evaluated earlier\n", static_cast<unsigned long long>(seed));
          if (!plan.probes.empty()) trained.push_back({seed, model});
          continue;
        }
        std::fprintf(stderr, "seed %llu: trained earlier; evaluating %s\n", static_cast<unsigned long long>(seed),
                     final_file.string().c_str());
      } else {
        if (!fs::exists(resume_file)) {
          metrics.truncate(status.metrics_lines);  // lines of a seed that had no resume point yet
          if (plan.train.init_from) {
            const fs::path ckpt = warmStartCheckpoint(seed);
            try {
              const train::WarmStartReport report = train::warmStart(*model, ckpt);
              std::fputs(train::describe(report, ckpt).c_str(), stderr);
            } catch (const std::runtime_error& e) {
              throw UserError(e.what());
            }
          }
        }
        train::TrainContext ctx;
        ctx.seed = seed;
        ctx.device = device;
        ctx.seed_dir = seed_dir;
        ctx.metrics = &metrics;
        ctx.progress = bar ? train::TrainContext::Progress::Bar : train::TrainContext::Progress::Lines;
        ctx.resume_file = resume_file;
        ctx.resume_every = resumeInterval(plan.train);
        ctx.plan_hash = options.plan_hash;
        ctx.evaluate = [&](int step) {
          std::string line = fmt::format("seed {} step {} accuracy:", seed, step);
          std::string json = fmt::format(R"({{"seed":{},"step":{},"eval":{{)", seed, step);
          bool first = true;
          for (const auto& r : eval::evaluateLengths(model, plan, seed)) {
            line += fmt::format(" {}d {:.1f}%", r.digits, 100.0 * r.accuracy());
            json += fmt::format(R"({}"{}":{})", first ? "" : ",", r.digits, r.accuracy());
            first = false;
          }
          metrics.append(json + "}}");
          std::fprintf(stderr, "%s\n", line.c_str());
        };
        const train::TrainStats stats = train::trainModel(model, plan, ctx);
        if (stats.resumed_from > 0)
          std::fprintf(stderr, "seed %llu: continued from step %d\n", static_cast<unsigned long long>(seed),
                       stats.resumed_from);
        tokens += stats.tokens_per_s * stats.seconds;
        seconds += stats.seconds;
        if (stats.final_error.empty()) {
          std::error_code ec;
          fs::remove(resume_file, ec);
        } else {
          std::fprintf(stderr, "posc: error: %s; evaluating the model in memory, keeping the resume point\n",
                       stats.final_error.c_str());
          final_errors.push_back(stats.final_error);
        }
      }
      stopIfAsked(seed, plan.train.steps);

      const auto t0 = std::chrono::steady_clock::now();
      std::vector<results::LengthAccuracy> seed_records = eval::evaluateLengths(model, plan, seed);
      const double eval_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string line = fmt::format("seed {} evaluated in {:.1f}s:", seed, eval_s);
      for (const auto& r : seed_records) line += fmt::format(" {}d {:.1f}%", r.digits, 100.0 * r.accuracy());
      std::fprintf(stderr, "%s\n", line.c_str());
      records.insert(records.end(), seed_records.begin(), seed_records.end());

      writeOrFail(out_dir / "accuracy.csv", results::accuracyCsv(records));
      writeOrFail(out_dir / "summary.md", results::summaryMarkdown(plan.name, records, plan.eval));
      if (!plan.probes.empty()) trained.push_back({seed, model});
      if (fs::exists(final_file)) {
        status.seeds_done.push_back(seed);
        status.metrics_lines = metrics.lines().size();
      }
      status.seed.reset();
      status.step = 0;
      train::writeStatus(out_dir, status);
      stopIfAsked(seed, plan.train.steps);
    }
    if (seconds > 0) std::fprintf(stderr, "training throughput: %.0f tokens/s\n", tokens / seconds);
    std::fputs(results::renderMarkdown(results::accuracySummaryTable(records, plan.eval.published)).c_str(), stdout);
    std::fflush(stdout);
    if (!plan.probes.empty()) {
      try {
        probe::runAndWriteProbes(plan, trained, out_dir);
      } catch (const std::runtime_error& e) {
        throw UserError(fmt::format("probes: {}", e.what()));
      }
    }
    if (!final_errors.empty())
      throw UserError(fmt::format("{} (the evaluation above ran from memory and is written; run the same "
                                  "command again once the disk has room: it continues from the resume point)",
                                  final_errors.front()));
  } catch (const Interrupted& e) {
    status.state = "interrupted";
    status.message = train::signalName(e.signal);
    status.step = e.step;
    train::writeStatus(out_dir, status);
    throw Interrupted(fmt::format("{}; continue with: {}", e.what(),
                                  options.continue_command.empty() ? "the same posc run command"
                                                                   : options.continue_command),
                      e.signal, e.step);
  } catch (const std::exception& e) {
    status.state = "failed";
    status.message = e.what();
    try {
      train::writeStatus(out_dir, status);
    } catch (const std::exception&) {
      // The original error matters more than the status file.
    }
    throw;
  }
  status.state = "finished";
  status.seed.reset();
  train::writeStatus(out_dir, status);
  std::fprintf(stderr, "results in %s (plan.txt, metrics.jsonl, accuracy.csv, summary.md, seed*/final.pt%s)\n",
               out_dir.string().c_str(), plan.probes.empty() ? "" : ", probes/");
  return 0;
}

}  // namespace

}  // namespace posc::runtime
