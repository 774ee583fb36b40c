// runExperiment: the whole run of a compiled plan, seed by seed, into a
// results folder (layout documented in runtime/run.h).
//
// The folder is filled as the run goes: plan.txt and source.pos first,
// metrics.jsonl at every log point, checkpoints during training, and
// accuracy.csv / summary.md rewritten after every seed, so a run stopped
// part-way still leaves complete results for the seeds it finished.
#include <unistd.h>

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "runtime/eval/greedy.h"
#include "runtime/probe/probe.h"
#include "runtime/results/atomic_file.h"
#include "runtime/results/tables.h"
#include "compiler/jit/kernels.h"
#include "runtime/model/fused_attention.h"
#include "runtime/run.h"
#include "runtime/train/checkpoint.h"
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
  writeOrFail(out_dir / "plan.txt", options.plan_text);
  writeOrFail(out_dir / "source.pos", options.source_text);

  results::JsonLinesLog metrics(out_dir / "metrics.jsonl");
  std::vector<results::LengthAccuracy> records;
  double tokens = 0, seconds = 0;
  std::vector<probe::SeedModel> trained;  // for the declared probes
  for (uint64_t seed : plan.train.seeds) {
    const fs::path seed_dir = out_dir / fmt::format("seed{}", seed);
    createFolder(seed_dir);
    model::Gpt model = train::buildModel(plan, seed, device);
    model->setScoreJit(options.score_jit);
    if (seed == plan.train.seeds.front())
      std::fprintf(stderr, "%s: %lld parameters, %zu seed(s), %d steps each, device %s\n", plan.name.c_str(),
                   static_cast<long long>(model->parameterCount()), plan.train.seeds.size(), plan.train.steps,
                   device.str().c_str());
    if (plan.train.init_from) {
      const fs::path ckpt = warmStartCheckpoint(seed);
      try {
        const train::WarmStartReport report = train::warmStart(*model, ckpt);
        std::fputs(train::describe(report, ckpt).c_str(), stderr);
      } catch (const std::runtime_error& e) {
        throw UserError(e.what());
      }
    }

    train::TrainContext ctx;
    ctx.seed = seed;
    ctx.device = device;
    ctx.seed_dir = seed_dir;
    ctx.metrics = &metrics;
    ctx.progress = bar ? train::TrainContext::Progress::Bar : train::TrainContext::Progress::Lines;
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
    tokens += stats.tokens_per_s * stats.seconds;
    seconds += stats.seconds;

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
  std::fprintf(stderr, "results in %s (plan.txt, metrics.jsonl, accuracy.csv, summary.md, seed*/final.pt%s)\n",
               out_dir.string().c_str(), plan.probes.empty() ? "" : ", probes/");
  return 0;
}

}  // namespace

}  // namespace posc::runtime
