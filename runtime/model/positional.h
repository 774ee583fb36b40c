// Rotary tables and key zeroing built from a plan's Rotation and KeyZeroing
// components.
//
// Both depend only on the index channels (and the per-sequence stretch
// factors), never on activations, so they are computed once per forward pass
// and shared by every layer. Rotary pairs are the interleaved dimensions
// (2i, 2i+1) of a head. Rotations that cover the same pair compose (their
// angles add); pairs covered by no rotation keep angle 0, i.e. are not turned.
#pragma once

#include <torch/types.h>

#include "compiler/plan/plan.h"

namespace posc::model {

struct PositionalContext {
  // (B, Hr, L, head_dim/2) in the compute dtype, Hr = heads if any rotation
  // selects heads, else 1. Undefined when the plan has no rotations.
  torch::Tensor cos, sin;
  // (B, Hr, L, head_dim/2, 2): (-sin, sin) per pair, so that a rotation is
  // x * cos + swap(x) * sin_pairs with swap(x0, x1) = (x1, x0): no selects,
  // whose backward passes would fill whole zero tensors.
  torch::Tensor sin_pairs;
  // (B, Hr, L, head_dim/2) in the compute dtype: xPos's per-pair scale of a
  // query, zeta_i^(c / gamma); keys take its inverse. Undefined when no
  // rotation has an xPos scale.
  torch::Tensor query_scale;
  // bool (B, Hz, L, head_dim): true where a key component is zeroed. Hz as
  // for Hr. Undefined when the plan has no key zeroing.
  torch::Tensor key_zero;
};

// Angles (B, Hr, L, head_dim/2) in float64 for the plan's rotations.
// channels: (kChannelCount, B, L) integers. stretch: (B) factors, or undefined,
// in which case every stretched rotation uses its distribution's eval_value.
// log_scale, when given, receives xPos's log query scale (same shape), left
// undefined when no rotation has one.
torch::Tensor rotaryAngles(const plan::AttentionPlan& attention, const plan::ModelPlan& model,
                           const torch::Tensor& channels, const torch::Tensor& stretch,
                           torch::Tensor* log_scale = nullptr);

// Everything positional for one forward pass. `dtype` is the compute dtype.
PositionalContext buildPositionalContext(const plan::AttentionPlan& attention,
                                         const plan::ModelPlan& model,
                                         const torch::Tensor& channels,
                                         const torch::Tensor& stretch,
                                         torch::ScalarType dtype);

// Rotates x (B, H, L, head_dim) pairwise by the context's tables; returns x
// unchanged when the context has no tables. With xPos scales, queries are
// scaled by them and keys by their inverse, so `side` says which x is.
enum class Side : uint8_t { Query, Key };
torch::Tensor applyRotary(const torch::Tensor& x, const PositionalContext& ctx, Side side = Side::Query);

// Zeroes the selected components of keys k (B, H, L, head_dim); returns k
// unchanged when the context has no zeroing.
torch::Tensor applyKeyZeroing(const torch::Tensor& k, const PositionalContext& ctx);

// Kind channel (B, L) -> bool (B, L): the token's kind is in `kinds`.
torch::Tensor kindMask(const torch::Tensor& kind_channel, plan::KindSet kinds);

// Heads listed in `heads` (all when empty) as a bool (H) tensor.
torch::Tensor headMask(const std::vector<int>& heads, int64_t num_heads);

}  // namespace posc::model
