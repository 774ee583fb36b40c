// Lowering of a plan's score terms (flat FormulaNode lists) to tensor
// operations on attention scores.
//
// Kept apart from the attention module so that tests and probes can apply the
// exact terms the model applies to scores they build themselves.
#pragma once

#include <torch/types.h>

#include <vector>

#include "compiler/plan/plan.h"

namespace posc::model {

// Evaluates one formula. Leaves are broadcastable tensors:
//   Score    -> scores                          (B, H, Lq, Lk)
//   QChannel -> q_channels[c] as                (B, 1, Lq, 1)
//   KChannel -> k_channels[c] as                (B, 1, 1, Lk)
//   Head     -> arange(H) as                    (1, H, 1, 1)
//   Param    -> params[i]: 0-d when scalar, else (H) viewed (1, H, 1, 1)
//   Const    -> 0-d
// Comparisons give 1.0 / 0.0; Select(a, b, c) = where(a != 0, b, c).
// The result broadcasts to (B, H, Lq, Lk) but may have fewer dimensions.
torch::Tensor evalFormula(const plan::Formula& formula, const torch::Tensor& scores,
                          const torch::Tensor& q_channels, const torch::Tensor& k_channels,
                          const std::vector<torch::Tensor>& params);

// Applies every score term of `attention` in plan order.
//   scores     (B, H, Lq, Lk), floating point
//   q_channels (kChannelCount, B, Lq) int64: channels of the query tokens
//   k_channels (kChannelCount, B, Lk) int64: channels of the key tokens
//   params     one tensor per attention.params entry (0-d or (H)), in the
//              dtype of the model; learned ones carry gradients.
// Each term replaces the score except where the key's kind is in exempt_keys,
// the query's kind is in exempt_queries, or the head is not in term.heads
// (when non-empty); there the previous score passes through.
// Returns a tensor of the shape and dtype of `scores`.
torch::Tensor applyScoreTerms(const torch::Tensor& scores, const torch::Tensor& q_channels,
                              const torch::Tensor& k_channels,
                              const plan::AttentionPlan& attention,
                              const std::vector<torch::Tensor>& params);

}  // namespace posc::model
