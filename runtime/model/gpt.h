// The GPT-style decoder built from an ExperimentPlan.
//
// Attention is computed explicitly (q, k rotated by the plan's rotations, key
// zeroing for sinks, scores scaled by 1/sqrt(head_dim), the plan's score terms
// lowered to tensor operations, causal mask, softmax or softmax1, values), so
// every positional component of the plan applies and gradients flow into
// learned score parameters.
//
// Channels are passed as one int64 tensor of shape (kChannelCount, B, L),
// indexed by plan::Channel. `stretch` is a (B) tensor of per-sequence scale
// factors for rotations that declare one (ignored by the others).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <memory>
#include <vector>

#include "compiler/plan/plan.h"

namespace posc::model {

// Cached keys and values of every layer, for incremental greedy decoding.
// Keys are stored after rotation and key zeroing. The stores hold room for
// more tokens than are cached (they grow by doubling), so that a decoding
// step writes its token in place instead of copying the whole cache; only
// the first length() positions along the token dimension are meaningful.
struct KvCache {
  std::vector<torch::Tensor> keys;    // per layer: (B, H, capacity, head_dim)
  std::vector<torch::Tensor> values;  // per layer: (B, H, capacity, head_dim)
  torch::Tensor channels;             // (kChannelCount, B, capacity) of the cached tokens
  int64_t tokens = 0;                 // cached tokens
  int64_t reserve = 0;                // room to make on the first append (0: what it appends)
  int64_t length() const;
};

// A score-term parameter's tensor at initialisation, as a model holds it:
// (H, size) for a per-head table, (size) for a shared one, (H) for a per-head
// value, 0-d for a shared value; float32.
torch::Tensor initialScoreParam(const plan::Param& p, int heads);

class GptImpl;

// Attention weights of one forward pass, for probes: per layer (B, H, Lq, Lk).
struct AttentionTrace {
  std::vector<torch::Tensor> weights;
  std::vector<torch::Tensor> scores;   // after score terms, before mask
  std::vector<torch::Tensor> queries;  // (B, H, L, head_dim) before rotation
  std::vector<torch::Tensor> keys;     // (B, H, L, head_dim) before rotation and key zeroing
};

class GptImpl : public torch::nn::Module {
 public:
  GptImpl(const plan::ExperimentPlan& plan, int64_t vocab_size);

  // tokens (B, L) int64; channels (C, B, L) int64; stretch (B) or undefined.
  // embed_offsets (E, B) int64: each sequence's training offset for each of
  // the plan's E absolute embeddings (those with a train_offset use it on
  // nonzero indices), or undefined: none (evaluation).
  // Returns logits (B, L, vocab). With `trace`, records attention per layer.
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& channels,
                        const torch::Tensor& stretch = {}, AttentionTrace* trace = nullptr,
                        const torch::Tensor& embed_offsets = {});

  // Logits only where `mask` (B, L) is nonzero: (M, vocab), positions in
  // row-major order; equal to forward(...) there. The positions after a
  // row's last masked one are never computed, nor are the last layer's
  // queries, outputs and feed-forward at unmasked positions: with causal
  // attention nothing masked depends on them. This is the training path
  // (the loss is taken at the answer's positions only), which leaves out the
  // padding and about two thirds of the last layer.
  torch::Tensor forwardMasked(const torch::Tensor& tokens, const torch::Tensor& channels,
                              const torch::Tensor& stretch, const torch::Tensor& mask,
                              const torch::Tensor& embed_offsets = {});
  // Runs the new tokens (B, T) with their channels (C, B, T) against `cache`
  // (extending it) and returns logits (B, T, vocab) of the new tokens.
  // forward(x) and prefill+step-by-step decode give the same logits.
  torch::Tensor forwardCached(const torch::Tensor& tokens, const torch::Tensor& channels,
                              KvCache& cache);

  // Score terms, mask and softmax through fused JIT kernels on CPU (off by
  // default here; `posc run` turns it on unless --jit off).
  void setScoreJit(bool on);
  bool scoreJit() const;
  // Compiles the fused kernels the forward passes will take (the JIT's cost,
  // paid once per process and otherwise inside the first forward pass).
  // Returns false, doing nothing, when the model does not take the fused path
  // (score JIT off, no LLVM, not on the CPU).
  bool compileScoreKernels();

  const plan::ExperimentPlan& plan() const;
  // The score-term parameters (one per plan.attention.params entry), for
  // probes that apply the model's score terms to scores they build.
  const std::vector<torch::Tensor>& scoreParams() const;
  int64_t parameterCount() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};
TORCH_MODULE(Gpt);

}  // namespace posc::model
