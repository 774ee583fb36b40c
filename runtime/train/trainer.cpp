// The training loop of one seed; see trainer.h for what one step does.
#include "runtime/train/trainer.h"

#include <torch/optim/adamw.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "runtime/longctx/sequence.h"
#include "runtime/model/fused_attention.h"
#include "runtime/model/precision.h"
#include "runtime/results/errors.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/fused_adamw.h"
#include "runtime/train/interrupt.h"
#include "runtime/train/progress.h"
#include "runtime/train/resume.h"
#include "runtime/train/safetensors.h"
#include "runtime/train/sampling.h"
#include "runtime/train/schedule.h"

namespace posc::train {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// JSON has no NaN or infinity.
std::string jsonNumber(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }


// A write of the training record (TrainContext::dump_dir); a failure is the
// user's (the folder they named), reported as such.
template <typename Write>
void dumpOrFail(Write&& write) {
  try {
    write();
  } catch (const std::exception& e) {
    throw runtime::UserError(fmt::format("--dump-training: {}", e.what()));
  }
}

// <stem>.safetensors, then <stem>.pt: the LibTorch archive last, since
// final.pt marks a seed as trained.
void saveWeights(const torch::nn::Module& model, const plan::ExperimentPlan& plan, const std::filesystem::path& stem) {
  saveSafetensorsCheckpoint(model, plan, stem.string() + ".safetensors");
  saveCheckpoint(model, stem.string() + ".pt");
}

}  // namespace

torch::Tensor maskedCrossEntropy(const torch::Tensor& logits, const torch::Tensor& targets,
                                 const torch::Tensor& mask) {
  torch::Tensor x = logits;
  if (x.scalar_type() != torch::kFloat64) x = x.to(torch::kFloat32);
  torch::Tensor nll = -torch::log_softmax(x, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
  torch::Tensor m = mask.to(nll.scalar_type());
  return (nll * m).sum() / m.sum().clamp_min(1.0);
}

torch::Tensor trainingLoss(model::Gpt& model, const model::BatchTensors& batch, const torch::Tensor& stretch,
                           bool bf16, const torch::Tensor& embed_offsets, int64_t answer_tokens) {
  torch::Tensor logits;
  {
    model::AutocastGuard autocast(bf16, batch.tokens.device().type());
    logits = model->forwardMasked(batch.tokens, batch.channels, stretch, batch.loss_mask, embed_offsets);  // (M, V)
  }
  if (logits.scalar_type() != torch::kFloat64) logits = logits.to(torch::kFloat32);
  auto wanted = batch.loss_mask.reshape({-1}).nonzero().reshape({-1});
  auto targets = batch.targets.reshape({-1}).index_select(0, wanted);
  auto nll = -torch::log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
  const int64_t count = answer_tokens > 0 ? answer_tokens : wanted.size(0);
  return nll.sum() / static_cast<double>(std::max<int64_t>(1, count));
}

int64_t vocabularySize(const plan::TaskPlan& task) {
  if (task.kind == plan::TaskKind::Documents) return longctx::kModelVocabulary;
  return task::Tokenizer(task).vocabulary().size();
}

model::Gpt buildModel(const plan::ExperimentPlan& plan, uint64_t seed, torch::Device device) {
  torch::manual_seed(seed);
  model::Gpt gpt(plan, vocabularySize(plan.task));
  gpt->to(device);
  return gpt;
}

TrainStats trainModel(model::Gpt& model, const plan::ExperimentPlan& plan, const TrainContext& ctx) {
  const plan::TrainPlan& tp = plan.train;
  const bool bf16 = plan.model.precision == plan::Precision::Bf16Mixed;
  const torch::ScalarType float_type = model::parameterDtype(plan.model.precision);
  task::Tokenizer tokenizer(plan.task);
  std::mt19937_64 rng = dataRng(ctx.seed);

  // Two parameter groups: decay on matrices, none on vectors and scalars
  // (train.weight_decay_on = all: decay on every tensor).
  const bool decay_all = tp.decay_scope == plan::DecayScope::All;
  std::vector<torch::Tensor> decay, no_decay, all;
  for (auto& p : model->parameters()) {
    if (!p.requires_grad()) continue;
    (decay_all || p.dim() >= 2 ? decay : no_decay).push_back(p);
    all.push_back(p);
  }
  auto options = [&](double wd) {
    return torch::optim::AdamWOptions(tp.lr)
        .betas(std::make_tuple(tp.beta1, tp.beta2))
        .eps(tp.eps)
        .weight_decay(wd);
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty())
    groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(options(tp.weight_decay)));
  if (!no_decay.empty()) groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(options(0.0)));

  TrainStats stats;
  stats.steps = tp.steps;
  ProgressReporter progress(ctx.progress, ctx.seed, tp.steps);
  dist::ProcessGroup* const group = ctx.group;
  const int ranks = group ? group->size() : 1;
  if (tp.batch % ranks != 0)
    throw runtime::UserError(fmt::format("train.batch = {} does not split evenly across {} ranks; make it a multiple "
                                         "of the world size",
                                         tp.batch, ranks));
  const int64_t share = tp.batch / ranks;  // rows per rank
  const int64_t first_row = group ? group->rank() * share : 0;
  // A collective's failure, named with the step it happened in.
  auto collective = [&](int step, auto&& f) {
    try {
      f();
    } catch (const dist::CollectiveError& e) {
      throw dist::CollectiveError(fmt::format("step {} of seed {}: {}", step, ctx.seed, e.what()));
    }
  };
  // A file that cannot be written is the user's to fix (a full disk, a
  // read-only folder), named in the message, never an internal error.
  auto checkpoint = [&](const std::string& name) {
    if (ctx.seed_dir.empty()) return;
    try {
      saveWeights(*model, plan, ctx.seed_dir / name);
    } catch (const std::runtime_error& e) {
      throw runtime::UserError(e.what());
    }
  };

  if (tp.steps > 0 && !all.empty()) {
    FusedAdamW optimizer(std::move(groups), options(tp.weight_decay));
    optimizer.setBiasCorrection(tp.bias_correction);
    model->train();
    double train_seconds = 0, interval_seconds = 0;
    int64_t total_tokens = 0, interval_tokens = 0;
    int interval_steps = 0;
    torch::Tensor interval_loss = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(ctx.device));
    double lr = tp.lr;
    int first_step = 0;
    const bool resumable = !ctx.resume_file.empty();
    if (resumable && std::filesystem::exists(ctx.resume_file)) {
      TrainingState state;
      try {
        state = loadTrainingState(ctx.resume_file, *model, optimizer, {ctx.training_hash, ctx.plan_hash});
      } catch (const std::runtime_error& e) {
        throw runtime::UserError(fmt::format("{}; start over with --fresh", e.what()));
      }
      first_step = state.step;
      rng = state.data_rng;
      interval_loss.fill_(state.interval_loss);
      interval_steps = state.interval_steps;
      if (ctx.metrics) ctx.metrics->truncate(state.metrics_lines);
      stats.resumed_from = first_step;
    }
    auto saveResumePoint = [&](int done) {
      TrainingState state;
      state.step = done;
      state.data_rng = rng;
      state.interval_loss = interval_loss.item<double>();
      state.interval_steps = interval_steps;
      state.metrics_lines = ctx.metrics ? ctx.metrics->lines().size() : 0;
      state.plan_hash = ctx.training_hash.empty() ? ctx.plan_hash : ctx.training_hash;
      try {
        saveTrainingState(ctx.resume_file, *model, optimizer, state);
      } catch (const std::runtime_error& e) {
        throw runtime::UserError(e.what());
      }
      if (ctx.resume_point_written) ctx.resume_point_written(done);
    };
    if (!ctx.dump_dir.empty())
      dumpOrFail([&] {
        std::filesystem::create_directories(ctx.dump_dir);
        if (first_step == 0) saveSafetensorsCheckpoint(*model, plan, ctx.dump_dir / "init.safetensors");
      });
    for (int step = first_step; step < tp.steps; ++step) {
      const auto t0 = Clock::now();
      lr = learningRateAt(tp, step);
      for (auto& group : optimizer.param_groups())
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);

      task::Batch batch = plan.task.kind == plan::TaskKind::Documents
                              ? longctx::sampleTrainingBatch(plan.task.documents, tp.batch, rng)
                              : task::sampleTrainingBatch(plan.task, tokenizer, tp.batch, rng);
      task::randomizeChannels(plan.attention.sampled_channels, batch, rng);
      model::BatchTensors bt = model::toTensors(batch, ctx.device);
      if (!ctx.dump_dir.empty())
        dumpOrFail([&] {
          writeSafetensors({{"tokens", bt.tokens},
                            {"targets", bt.targets},
                            {"loss_mask", bt.loss_mask.to(torch::kInt64)},
                            {"channels", bt.channels}},
                           {}, ctx.dump_dir / fmt::format("step_{}.safetensors", step + 1));
        });
      torch::Tensor stretch = sampleStretch(plan.attention, batch.batch, rng, float_type, ctx.device);
      torch::Tensor offsets = sampleEmbedOffsets(plan.attention, batch.batch, rng);
      int64_t answer_tokens = 0;  // the global batch's, when this rank trains on a slice
      if (group) {
        answer_tokens = std::max<int64_t>(1, bt.loss_mask.sum().item<int64_t>());
        bt = model::sliceRows(bt, first_row, share);
        if (stretch.defined()) stretch = stretch.narrow(0, first_row, share);
        if (offsets.defined()) offsets = offsets.narrow(1, first_row, share).contiguous();
      }

      optimizer.zero_grad();
      torch::Tensor loss;
      try {
        loss = trainingLoss(model, bt, stretch, bf16, offsets, answer_tokens);
        // The fused kernels name a non-finite score's term; on the tensor-op
        // path the loss is checked here, before a NaN reaches the weights.
        if (!model->scoreJit()) {
          const double value = loss.item<double>();
          if (!std::isfinite(value))
            throw model::NonFiniteScores(fmt::format(
                "the loss is {} (the tensor-op path cannot name the score term; a run with --jit on, on a "
                "CPU, does)", std::isnan(value) ? "NaN" : "infinite"));
        }
        loss.backward();
      } catch (const model::NonFiniteScores& e) {
        // Non-finite weights make every score non-finite: name the weights,
        // not the score terms that met them.
        for (const auto& p : model->named_parameters())
          if (auto bad = nonFiniteValues(p.value()))
            throw model::NonFiniteScores(fmt::format(
                "step {}, the weights are not finite: '{}' holds {} NaN or infinite value(s) (an update before this "
                "step diverged, or the weights it started from were damaged)",
                step + 1, p.key(), *bad));
        throw model::NonFiniteScores(fmt::format("step {}, {}", step + 1, e.what()));
      }
      if (group) {
        // Every rank reduces every parameter, so the buckets line up.
        std::vector<torch::Tensor> grads;
        for (auto& p : all) {
          if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
          grads.push_back(p.grad());
        }
        collective(step + 1, [&] { group->allReduceSum(grads); });
      }
      if (tp.grad_clip > 0)
        clipAndStep(optimizer, tp.grad_clip);  // clip_grad_norm_ then step, in one pass
      else
        optimizer.step();
      interval_loss += loss.detach().to(torch::kFloat64);

      const int done = step + 1;
      const int64_t tokens = static_cast<int64_t>(batch.batch) * batch.length;
      const bool log_now = (tp.log_every > 0 && done % tp.log_every == 0) || done == tp.steps;
      double mean_loss = 0;
      if (log_now && group)  // the ranks' shares of each step's loss
        collective(step + 1, [&] { group->allReduceSum({interval_loss}); });
      if (log_now) mean_loss = interval_loss.item<double>() / std::max(1, interval_steps + 1);  // syncs
      const double dt = secondsSince(t0);
      train_seconds += dt;
      interval_seconds += dt;
      total_tokens += tokens;
      interval_tokens += tokens;
      ++interval_steps;
      const double eta = train_seconds / (done - first_step) * (tp.steps - done);  // this process's pace

      if (log_now) {
        const double rate = interval_seconds > 0 ? interval_tokens / interval_seconds : 0.0;
        if (ctx.metrics)
          ctx.metrics->append(fmt::format(R"({{"seed":{},"step":{},"loss":{},"lr":{},"tokens_per_s":{}}})",
                                          ctx.seed, done, jsonNumber(mean_loss), jsonNumber(lr),
                                          jsonNumber(std::round(rate * 10) / 10)));
        if (ctx.events) {
          const std::string seed = fmt::format("seed{}/", ctx.seed);
          try {
            ctx.events->scalars(done, {{seed + "loss", static_cast<float>(mean_loss)},
                                       {seed + "lr", static_cast<float>(lr)},
                                       {seed + "tokens_per_s", static_cast<float>(rate)}});
          } catch (const std::runtime_error& e) {
            throw runtime::UserError(e.what());
          }
        }
        progress.log(done, mean_loss, lr, rate, eta);
        stats.final_loss = mean_loss;
        interval_loss.zero_();
        interval_seconds = 0;
        interval_tokens = 0;
        interval_steps = 0;
      } else {
        progress.tick(done, lr, eta);
      }
      if (tp.checkpoint_every > 0 && done % tp.checkpoint_every == 0) checkpoint(fmt::format("checkpoint_{}", done));
      if (plan.eval.every > 0 && done % plan.eval.every == 0 && done < tp.steps && ctx.evaluate) {
        progress.breakLine();
        ctx.evaluate(done);
        model->train();
      }
      // The resume point comes after everything this step logs, so a resumed
      // run writes every metrics line exactly once.
      const int stop = stopRequested();
      if (resumable && done < tp.steps &&
          (stop != 0 || (ctx.resume_every > 0 && done % ctx.resume_every == 0)))
        saveResumePoint(done);
      if (stop != 0 && done < tp.steps) {
        progress.breakLine();
        throw runtime::Interrupted(fmt::format("stopped by {} after step {} of seed {}", signalName(stop), done,
                                               ctx.seed),
                                   stop, done);
      }
    }
    progress.breakLine();
    stats.seconds = train_seconds;
    stats.tokens_per_s = train_seconds > 0 ? total_tokens / train_seconds : 0.0;
  }
  if (!ctx.seed_dir.empty()) {
    try {
      saveWeights(*model, plan, ctx.seed_dir / "final");
    } catch (const std::runtime_error& e) {
      stats.final_error = e.what();  // the resume point stays; evaluation runs from memory
    }
  }
  return stats;
}

}  // namespace posc::train
