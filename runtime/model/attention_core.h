// A whole causal self-attention in one custom autograd function: from the
// projected queries, keys and values to the heads' outputs.
//
// The tensor path runs attention as LibTorch operations: a reshape and
// permute of the projection, the rotation (two products, a flip and a sum),
// key zeroing, q k^T as a batched product, the 1/sqrt(d) scale, the fused
// score kernel (fused_attention.h), p v as a second batched product, and a
// transpose back; each with its own backward. On a CPU with the small blocks
// of the quick start (2 x 64, sequences of ~35 tokens) those operations and
// their per-block dispatch cost more than the arithmetic. Here one loop over
// (batch, head) blocks does all of it: gather and rotate the block's rows,
// product, the JIT score kernel (terms, mask, softmax), product, write the
// rows; its backward is written out by hand the same way, with the kernel's
// generated backward in the middle.
//
// Same values as the tensor path (tests/runtime/attention_core_test.cpp:
// outputs and every gradient at 1e-12 in float64, 1e-5 in float32). Taken
// only where it applies: CPU, float32/float64, the JIT built in, no KV cache,
// no null slot, nothing traced (AttentionImpl::forward decides).
#pragma once

#include <torch/types.h>

#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/model/positional.h"

namespace posc::model {

// Where each sequence's positions sit among the rows of the projected input:
// positions 0 .. count[b]-1 of sequence b are rows first[b] .. first[b] +
// count[b] - 1; its later positions are padding, which no listed query sees
// (causal masking), so they are never stored.
struct RowLayout {
  int64_t batch = 0, length = 0;
  std::vector<int64_t> first, count;

  // Every position present: row b * length + t.
  static RowLayout dense(int64_t batch, int64_t length);
  // Packed rows (flat indices b * length + t, ascending), as the training
  // pass lists them. False when some sequence's rows are not a prefix of it.
  static bool fromPackedRows(const torch::Tensor& rows, int64_t batch, int64_t length, RowLayout* out);
};

// The projection's dtype and device allow the fused core (CPU, float32 or
// float64, JIT available) and the positional tables share its dtype.
bool attentionCoreSupported(const torch::Tensor& projected, const PositionalContext& positional);

// projected (R, 3 * heads * head_dim): per row the query, key and value, each
// head's head_dim entries one after another (the layout of AttentionImpl's
// qkv projection). Channels (kChannelCount, B, L) and tables as for the
// tensor path; params one tensor per attention param. Returns (R, heads *
// head_dim), the heads' outputs side by side, row for row. Differentiable in
// `projected` and in params that require grad. Throws NonFiniteScores
// (fused_attention.h) when a row's scores are not finite.
torch::Tensor attentionCore(const torch::Tensor& projected, const RowLayout& rows,
                            const PositionalContext& positional, const torch::Tensor& q_channels,
                            const torch::Tensor& k_channels, const plan::AttentionPlan& attention,
                            plan::SoftmaxKind softmax, const std::vector<torch::Tensor>& params, int64_t heads,
                            int64_t head_dim);

}  // namespace posc::model
