// Explicit causal self-attention with the plan's positional components.
//
// Queries and keys are optionally RMS-normalised per head (qk_norm); key and
// value heads are shared by groups of query heads (kv_heads < heads); q, k
// are rotated by the shared rotary tables, keys zeroed for sinks, scores
// scaled by 1/sqrt(head_dim), score terms applied, the causal mask set, then
// softmax or softmax1 (optionally with a null slot) weights the values. The
// same code path serves the full forward pass and cached decoding, which is
// what makes the two agree.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/model/attention_core.h"
#include "runtime/model/norm.h"
#include "runtime/model/positional.h"

namespace posc::model {

// exp(x_i) / (1 + sum_j exp(x_j)) along `dim`, computed with the maximum
// (clamped at 0, the implicit extra term) subtracted. -inf entries give 0.
torch::Tensor softmax1(const torch::Tensor& x, int64_t dim);

// Attention weights from post-term scores (B, H, Lq, Lk). Query i (0-based
// among the Lq new tokens) sees keys j <= past + i, where `past` = Lk - Lq is
// the number of cached tokens before the new block. With `null_slot`, a key of
// score 0 that every query sees is appended: the result is (B, H, Lq, Lk + 1).
// Reduced-precision scores are promoted to float32 first.
torch::Tensor attentionWeights(const torch::Tensor& scores, plan::SoftmaxKind kind, bool null_slot);

// Writes x after the first `used` entries of `store` along `dim` and returns
// the view of the used and new entries. A store too short is replaced by one
// of at least `reserve` entries, or twice its length, whichever is more.
torch::Tensor appendAlong(torch::Tensor& store, int64_t used, const torch::Tensor& x, int64_t dim,
                          int64_t reserve = 0);

// Per-call view of the shared positional state. Channel tensors are
// (kChannelCount, B, L) int64.
struct AttentionInputs {
  const PositionalContext* positional = nullptr;  // tables of the new tokens
  torch::Tensor q_channels;  // channels of the new (query) tokens
  torch::Tensor k_channels;  // channels of all keys: cached then new
  const std::vector<torch::Tensor>* params = nullptr;  // score-term params
  // When non-null: the layer's key and value stores of a KvCache (the first
  // cache_length tokens cached), extended in place with the new tokens.
  torch::Tensor* cache_keys = nullptr;
  torch::Tensor* cache_values = nullptr;
  int64_t cache_length = 0, cache_reserve = 0;
  // When non-null: receive weights (B, H, Lq, Lk) and post-term scores.
  torch::Tensor* trace_weights = nullptr;
  torch::Tensor* trace_scores = nullptr;
  // Fused JIT kernels for score terms + mask + softmax (fused_attention.h)
  // when the scores allow it (CPU, f32/f64) and no post-term scores are
  // traced; otherwise the tensor-op lowering.
  bool score_jit = false;
  int layer = 0;  // for error messages
  // When non-null: receive q and k (B, H, L, head_dim) before rotation.
  torch::Tensor* trace_queries = nullptr;
  torch::Tensor* trace_keys = nullptr;
  // Packed rows (training): when defined, x holds only the rows of the (B, L)
  // positions listed in `rows_in` (flat indices b * L + t, ascending), the
  // others are never computed, and forward returns the rows listed in
  // `rows_out` (flat indices too). Attention itself runs on the (B, L) layout
  // with zero q, k, v at the missing positions: causal masking keeps them
  // from every listed query as long as no listed position follows a missing
  // one in its row (GptImpl::forwardLoss guarantees this).
  torch::Tensor rows_in, rows_out;
  // Where each of rows_out sits in rows_in (for the block's residual
  // stream); undefined when rows_out is rows_in.
  torch::Tensor keep;
  // Where each sequence's rows sit in x, for the fused attention core
  // (attention_core.h); set once per forward pass, null where the core is
  // not used (no JIT, a KV cache).
  const RowLayout* row_layout = nullptr;
  int64_t batch = 0, length = 0;  // B and L of the packed layout
};

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const plan::ModelPlan& model, const plan::AttentionPlan& attention);
  // x (B, L, width) -> (B, L, width); with packed rows (R_in, width) ->
  // (R_out, width).
  torch::Tensor forward(const torch::Tensor& x, const AttentionInputs& in);

  // qkv: width -> (heads + 2 kv_heads) x head_dim, queries then keys then
  // values, head by head.
  torch::nn::Linear qkv{nullptr}, out{nullptr};
  torch::Tensor null_value;  // (H, head_dim), only with a null slot
  Norm q_norm{nullptr}, k_norm{nullptr};  // RMSNorm over head_dim, only with qk_norm

 private:
  // The projection as (rows, 3 x heads x head_dim), the layout both
  // attention paths read: queries and keys normalised (qk_norm), and each
  // key/value head repeated for the query heads of its group.
  torch::Tensor headsOf(const torch::Tensor& projected);

  plan::AttentionPlan attention_;
  int64_t heads_, kv_heads_, head_dim_;
  plan::SoftmaxKind softmax_;
  bool null_slot_;
};
TORCH_MODULE(Attention);

}  // namespace posc::model
