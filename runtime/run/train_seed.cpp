// Stages 3 and 4 of a run (runtime/run/run_state.h): a seed's model, its
// kernels and its weights: trained, continued from a resume point, warm
// started, or loaded from an earlier process's final.pt.
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <system_error>

#include <fmt/format.h>

#include "runtime/distributed/process_group.h"
#include "runtime/eval/documents.h"
#include "runtime/eval/greedy.h"
#include "runtime/run/run_state.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/safetensors.h"
#include "runtime/train/trainer.h"

namespace posc::runtime::stage {
namespace {

// Steps between resume points: the checkpoint interval when one is set,
// else a twentieth of training (each point costs one write of the model and
// both AdamW moments).
int resumeInterval(const plan::TrainPlan& train) {
  if (train.checkpoint_every > 0) return train.checkpoint_every;
  return std::max(1, (train.steps + 19) / 20);
}

// Refuses, before any training, a run whose checkpoints cannot fit on the
// disk: per seed final.pt and every checkpoint_<step>.pt, each with its
// .safetensors copy, and the resume point (the model and two AdamW moments)
// twice, as it is rewritten.
void checkDiskSpace(const plan::ExperimentPlan& plan, torch::nn::Module& model, const fs::path& out_dir) {
  int64_t bytes = 0;
  for (const auto& p : model.parameters()) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  for (const auto& b : model.buffers()) bytes += b.numel() * static_cast<int64_t>(b.element_size());
  const int64_t checkpoints = plan.train.checkpoint_every > 0 ? plan.train.steps / plan.train.checkpoint_every : 0;
  const double need = static_cast<double>(bytes) *
                      (static_cast<double>(plan.train.seeds.size()) * static_cast<double>(1 + checkpoints) * 2 + 2 * 3);
  struct statvfs fs_info {};
  if (::statvfs(out_dir.c_str(), &fs_info) != 0) return;  // unknown: the writes will say
  const double free_bytes = static_cast<double>(fs_info.f_bavail) * static_cast<double>(fs_info.f_frsize);
  if (need > free_bytes)
    throw UserError(fmt::format(
        "not enough disk space in '{}' for this run's checkpoints: about {:.1f} MB needed ({} seed(s) x {} "
        "checkpoint(s) of {:.1f} MB in two formats, and the resume point), {:.1f} MB free",
        out_dir.string(), need / 1e6, plan.train.seeds.size(), 1 + checkpoints, static_cast<double>(bytes) / 1e6,
        free_bytes / 1e6));
}

// Evaluation during training, on a document task: the protocol's cells at
// training lengths (the regression set), pooled per task.
// Accuracy during training, as TensorBoard scalars beside metrics.jsonl.
void writeEvents(Run& run, int step, const std::vector<std::pair<std::string, float>>& scalars) {
  try {
    run.events->scalars(step, scalars);
  } catch (const std::runtime_error& e) {
    throw UserError(e.what());
  }
}

void evaluateRegressionSet(Run& run, uint64_t seed, int step, model::Gpt& model) {
  const plot::Table table = results::lengthTable(eval::evaluateDocuments(model, run.plan, true));
  std::string line = fmt::format("seed {} step {} accuracy:", seed, step);
  std::string json = fmt::format(R"({{"seed":{},"step":{},"eval":{{)", seed, step);
  std::vector<std::pair<std::string, float>> scalars;
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const auto& row = table.rows[i];  // task, length, ..., accuracy (column 6)
    line += fmt::format(" {} {} {}", row[0], row[1], row[6]);
    json += fmt::format(R"({}"{} {}":{})", i ? "," : "", row[0], row[1], row[6]);
    scalars.emplace_back(fmt::format("seed{}/accuracy/{} {}", seed, row[0], row[1]), std::stof(row[6]));
  }
  run.metrics->append(json + "}}");
  writeEvents(run, step, scalars);
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

// Stage 3: the seed's model, freshly initialised from the seed.
model::Gpt buildSeedModel(Run& run, uint64_t seed) {
  const plan::ExperimentPlan& plan = run.plan;
  model::Gpt model = train::buildModel(plan, seed, run.device);
  model->setScoreJit(run.options.score_jit);
  if (seed == plan.train.seeds.front()) {
    std::fprintf(stderr, "%s: %lld parameters, %zu seed(s), %d steps each, device %s\n", plan.name.c_str(),
                 static_cast<long long>(model->parameterCount()), plan.train.seeds.size(), plan.train.steps,
                 run.device.str().c_str());
    checkDiskSpace(plan, *model, run.out_dir);
  }
  run.status.seed = seed;
  run.status.step = 0;
  return model;
}

// The JIT's stage: the fused score kernels are compiled here, before
// training, rather than inside the first forward pass (once per process: a
// later seed finds them in the cache).
void compileKernels(model::Gpt& model) { model->compileScoreKernels(); }

// Under a process group, rank 0 tells the other ranks whether a seed trains
// (1) or was trained by an earlier process (0), then hands them its starting
// weights (fresh, warm-started).
bool shareSeedDecision(dist::ProcessGroup* group, bool trains) {
  if (!group) return trains;
  torch::Tensor flag = torch::full({1}, trains ? 1 : 0, torch::kInt64);
  group->broadcast({flag});
  return flag.item<int64_t>() != 0;
}

void shareStartingWeights(dist::ProcessGroup* group, model::Gpt& model) {
  if (!group) return;
  std::vector<torch::Tensor> state;
  for (auto& p : model->parameters()) state.push_back(p);
  for (auto& b : model->buffers()) state.push_back(b);
  group->broadcast(state);
}

// Stage 4: the seed's weights: loaded from a final.pt an earlier process
// wrote, or trained (from a resume point or the warm start where there is
// one). Returns false when the seed was also evaluated earlier (nothing more
// to do for it).
bool trainSeed(Run& run, uint64_t seed, model::Gpt& model) {
  const plan::ExperimentPlan& plan = run.plan;
  const fs::path seed_dir = run.out_dir / fmt::format("seed{}", seed);
  const fs::path final_file = seed_dir / "final.pt", resume_file = seed_dir / "resume.pt";
  createFolder(seed_dir);
  dist::ProcessGroup* const group = run.options.group;
  // Trained in an earlier process: final.pt is complete (written atomically).
  if (run.resuming && fs::exists(final_file)) {
    shareSeedDecision(group, false);
    try {
      train::loadCheckpoint(*model, final_file);
    } catch (const std::runtime_error& e) {
      throw UserError(fmt::format("{}; start over with --fresh", e.what()));
    }
    if (run.status.seedDone(seed) && !run.documents) {
      std::fprintf(stderr, "seed %llu: trained and evaluated earlier\n", static_cast<unsigned long long>(seed));
      if (!plan.probes.empty()) run.trained.push_back({seed, model});
      return false;
    }
    std::fprintf(stderr, "seed %llu: trained earlier; evaluating %s\n", static_cast<unsigned long long>(seed),
                 final_file.string().c_str());
    return true;
  }
  results::JsonLinesLog& metrics = *run.metrics;
  if (group && fs::exists(resume_file))  // posc run refuses this before the ranks join; kept all the same
    throw UserError(fmt::format("seed {}: a data-parallel run cannot continue from one process's resume point {}; "
                                "continue it as one process, or start over with --fresh",
                                seed, resume_file.string()));
  if (!fs::exists(resume_file)) {
    metrics.truncate(run.status.metrics_lines);  // lines of a seed that had no resume point yet
    if (plan.train.init_from || plan.train.init_file) {
      const fs::path ckpt = plan.train.init_file ? fs::path(*plan.train.init_file) : warmStartCheckpoint(run, seed);
      try {
        const train::WarmStartReport report =
            plan.train.init_file ? train::warmStartSafetensors(*model, ckpt) : train::warmStart(*model, ckpt);
        std::fputs(train::describe(report, ckpt).c_str(), stderr);
      } catch (const std::runtime_error& e) {
        throw UserError(e.what());
      }
    }
  }
  shareSeedDecision(group, true);
  shareStartingWeights(group, model);
  train::TrainContext ctx;
  ctx.seed = seed;
  ctx.device = run.device;
  ctx.seed_dir = seed_dir;
  ctx.metrics = &metrics;
  ctx.events = &*run.events;
  ctx.progress = run.bar ? train::TrainContext::Progress::Bar : train::TrainContext::Progress::Lines;
  if (!group) {  // the other ranks' optimiser state is not in rank 0's resume point
    ctx.resume_file = resume_file;
    ctx.resume_every = resumeInterval(plan.train);
    ctx.resume_point_written = [&run](int step) {
      run.status.step = step;
      results::writeStatus(run.out_dir, run.status);
    };
  }
  ctx.group = group;
  ctx.training_hash = run.options.training_hash;
  ctx.plan_hash = run.options.plan_hash;
  if (!run.options.dump_dir.empty()) ctx.dump_dir = fs::path(run.options.dump_dir) / fmt::format("seed{}", seed);
  ctx.evaluate = [&](int step) {
    if (run.documents) {
      evaluateRegressionSet(run, seed, step, model);
      return;
    }
    std::string line = fmt::format("seed {} step {} accuracy:", seed, step);
    std::string json = fmt::format(R"({{"seed":{},"step":{},"eval":{{)", seed, step);
    bool first = true;
    std::vector<std::pair<std::string, float>> scalars;
    for (const auto& r : eval::evaluateLengths(model, plan, seed)) {
      line += fmt::format(" {}d {:.1f}%", r.digits, 100.0 * r.accuracy());
      json += fmt::format(R"({}"{}":{})", first ? "" : ",", r.digits, r.accuracy());
      scalars.emplace_back(fmt::format("seed{}/accuracy/{}d", seed, r.digits), static_cast<float>(r.accuracy()));
      first = false;
    }
    metrics.append(json + "}}");
    writeEvents(run, step, scalars);
    std::fprintf(stderr, "%s\n", line.c_str());
  };
  const train::TrainStats stats = train::trainModel(model, plan, ctx);
  if (stats.resumed_from > 0)
    std::fprintf(stderr, "seed %llu: continued from step %d\n", static_cast<unsigned long long>(seed),
                 stats.resumed_from);
  run.tokens += stats.tokens_per_s * stats.seconds;
  run.seconds += stats.seconds;
  if (stats.final_error.empty()) {
    std::error_code ec;
    fs::remove(resume_file, ec);
  } else {
    std::fprintf(stderr, "posc: error: %s; evaluating the model in memory, keeping the resume point\n",
                 stats.final_error.c_str());
    run.final_errors.push_back(stats.final_error);
  }
  return true;
}

}  // namespace posc::runtime::stage
