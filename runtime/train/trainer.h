// Training one seed of an experiment.
//
// Determinism: torch::manual_seed(seed) before the model is built fixes the
// initialisation; training problems and stretch factors come from a
// std::mt19937_64 seeded from the seed, so a seed's data stream does not
// depend on the device or the thread count.
//
// One optimiser step: sample a fresh batch of problems (addition problems or
// long-context documents, runtime/longctx/sequence.h), turn it into tensors
// (tokens (B, L), channels (C, B, L)), sample per-sequence stretch factors if a
// rotation declares a distribution, forward (under bf16 autocast for
// Bf16Mixed), cross-entropy on the answer positions, backward, clip, set the
// scheduled learning rate, AdamW step. Weight decay applies to matrices only
// (dim >= 2), never to biases, norm gains or 1-D score parameters.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>

#include "compiler/plan/plan.h"
#include "runtime/model/batch.h"
#include "runtime/model/gpt.h"
#include "runtime/distributed/process_group.h"
#include "runtime/formats/tensorboard_events.h"
#include "runtime/results/atomic_file.h"
#include "runtime/train/progress.h"

namespace posc::train {

// Mean cross-entropy over positions where mask is set. logits (B, L, V).
torch::Tensor maskedCrossEntropy(const torch::Tensor& logits, const torch::Tensor& targets,
                                 const torch::Tensor& mask);

// The training loss of a batch: maskedCrossEntropy of the model's logits,
// computed with GptImpl::forwardMasked, which leaves out every position the
// loss does not depend on (padding, the end token, most of the last layer).
// With `bf16`, the forward pass runs under bf16 autocast. embed_offsets as
// sampleEmbedOffsets gives them, or undefined. The summed loss is divided by
// `answer_tokens` when given (a rank's share of a global batch: the global
// count), else by the batch's own count of answer positions.
torch::Tensor trainingLoss(model::Gpt& model, const model::BatchTensors& batch, const torch::Tensor& stretch,
                           bool bf16, const torch::Tensor& embed_offsets = {}, int64_t answer_tokens = 0);

// Rows of the token embedding for a task: the addition vocabulary, or every
// document token.
int64_t vocabularySize(const plan::TaskPlan& task);

// torch::manual_seed(seed), build the model, move it to `device`.
model::Gpt buildModel(const plan::ExperimentPlan& plan, uint64_t seed, torch::Device device);

struct TrainContext {
  uint64_t seed = 0;
  torch::Device device = torch::kCPU;
  std::filesystem::path seed_dir;            // checkpoints go here; empty: none are written
  results::JsonLinesLog* metrics = nullptr;  // metrics.jsonl; may be null
  formats::EventWriter* events = nullptr;    // TensorBoard's scalars (seed<N>/loss, lr, tokens_per_s); may be null
  using Progress = ProgressMode;
  Progress progress = Progress::Lines;
  // Called every plan.eval.every steps (when > 0) except after the last step;
  // the model is back in training mode afterwards.
  std::function<void(int step)> evaluate;
  // Resume points (train/resume.h): written to resume_file every
  // resume_every steps and when a stop is requested (train/interrupt.h); when
  // the file exists as training starts, training continues from it (and the
  // metrics log is cut back to the lines it had then). Empty: none.
  std::filesystem::path resume_file;
  int resume_every = 0;
  // Called with the step of each resume point once it is written (may be
  // empty): the run keeps status.json's step at it, so that a run stopped at
  // once (a second signal, SIGKILL) still names the step it continues from.
  std::function<void(int step)> resume_point_written;
  // What a resume point records and requires: the run's training identity
  // (RunOptions::training_hash), and its plan hash, which resume points of
  // versions before 2026-12-07 recorded instead (accepted too).
  std::string training_hash;
  std::string plan_hash;
  // Data-parallel training with the other ranks of this group (null: one
  // process). Only rank 0 should be given a seed_dir, metrics, evaluate or a
  // resume file; the caller arranges that.
  dist::ProcessGroup* group = nullptr;
  // The training record for a differential test against an independent
  // implementation (tests/differential/): the weights before the first step
  // (init.safetensors, GPT names) and every step's batch as posc trains on it
  // (step_<k>.safetensors: tokens, targets, loss_mask, channels; int64).
  // Empty: none is written.
  std::filesystem::path dump_dir;
};

struct TrainStats {
  int steps = 0;
  double final_loss = 0;    // mean loss over the last logging interval
  double tokens_per_s = 0;  // over the whole run, checkpoints and evaluation excluded
  double seconds = 0;       // training time (same exclusions)
  int resumed_from = 0;     // the step training continued from (0: a fresh start)
  std::string final_error;  // final.pt could not be written (the model is still in memory)
};

// Trains `model` for plan.train.steps steps. Writes checkpoint_<step>.pt every
// plan.train.checkpoint_every steps and final.pt at the end (each with a
// .safetensors copy under GPT names, train/safetensors.h) when
// ctx.seed_dir is set (also when steps == 0); a failure to write final.pt is
// returned in TrainStats::final_error, not thrown, so evaluation can still
// run. Throws runtime::Interrupted after writing a resume point when a stop
// is requested, model::NonFiniteScores when a loss is not finite (before the
// step that would spread it), runtime::UserError when a file cannot be written
// or the batch does not split evenly across the group's ranks,
// dist::CollectiveError (its message naming the step) when a collective fails.
TrainStats trainModel(model::Gpt& model, const plan::ExperimentPlan& plan, const TrainContext& ctx);

}  // namespace posc::train
