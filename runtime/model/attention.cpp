// Explicit causal self-attention: see attention.h.
#include "runtime/model/attention.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/model/affine.h"
#include "runtime/model/fused_attention.h"
#include "runtime/model/score_formula.h"

namespace posc::model {

torch::Tensor softmax1(const torch::Tensor& x, int64_t dim) {
  // The implicit extra term is exp(0), so the shift is max(max_j x_j, 0).
  auto m = std::get<0>(x.max(dim, /*keepdim=*/true)).clamp_min(0).detach();
  auto e = (x - m).exp();
  return e / ((-m).exp() + e.sum(dim, /*keepdim=*/true));
}

torch::Tensor attentionWeights(const torch::Tensor& scores, plan::SoftmaxKind kind, bool null_slot) {
  auto s = scores;
  if (s.scalar_type() == torch::kBFloat16 || s.scalar_type() == torch::kHalf) s = s.to(torch::kFloat);
  const int64_t Lq = s.size(2), Lk = s.size(3), past = Lk - Lq;
  auto opts = torch::TensorOptions().dtype(torch::kLong).device(s.device());
  auto qi = torch::arange(Lq, opts).reshape({Lq, 1});
  auto kj = torch::arange(Lk, opts).reshape({1, Lk});
  auto masked = kj > qi + past;  // (Lq, Lk)
  s = s.masked_fill(masked, -std::numeric_limits<double>::infinity());
  if (null_slot) s = torch::cat({s, torch::zeros({s.size(0), s.size(1), Lq, 1}, s.options())}, 3);
  return kind == plan::SoftmaxKind::Softmax1 ? softmax1(s, -1) : torch::softmax(s, -1);
}

torch::Tensor appendAlong(torch::Tensor& store, int64_t used, const torch::Tensor& x, int64_t dim,
                          int64_t reserve) {
  const int64_t need = used + x.size(dim);
  if (!store.defined() || store.size(dim) < need) {
    auto sizes = x.sizes().vec();
    sizes[static_cast<size_t>(dim)] = std::max({need, reserve, store.defined() ? 2 * store.size(dim) : int64_t{0}});
    auto grown = torch::empty(sizes, x.options());
    if (used > 0) grown.narrow(dim, 0, used).copy_(store.narrow(dim, 0, used));
    store = grown;
  }
  store.narrow(dim, used, x.size(dim)).copy_(x);
  return store.narrow(dim, 0, need);
}

AttentionImpl::AttentionImpl(const plan::ModelPlan& model, const plan::AttentionPlan& attention)
    : attention_(attention),
      heads_(model.heads),
      kv_heads_(model.kvHeads()),
      head_dim_(model.head_dim),
      softmax_(model.softmax),
      null_slot_(attention.null_slot) {
  if (kv_heads_ < 1 || heads_ % kv_heads_ != 0)
    throw std::invalid_argument(fmt::format("attention: {} key/value heads do not divide {} heads", kv_heads_, heads_));
  const int64_t projected = (heads_ + 2 * kv_heads_) * head_dim_;
  qkv = register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(model.width, projected).bias(model.bias)));
  out = register_module("out", torch::nn::Linear(torch::nn::LinearOptions(heads_ * head_dim_, model.width).bias(model.bias)));
  if (model.qk_norm) {
    q_norm = register_module("q_norm", Norm(plan::NormKind::RmsNorm, head_dim_));
    k_norm = register_module("k_norm", Norm(plan::NormKind::RmsNorm, head_dim_));
  }
  if (null_slot_) null_value = register_parameter("null_value", torch::zeros({heads_, head_dim_}));
}

torch::Tensor AttentionImpl::headsOf(const torch::Tensor& projected) {
  if (kv_heads_ == heads_ && !q_norm) return projected;
  const int64_t H = heads_, G = kv_heads_, D = head_dim_;
  auto q = projected.narrow(-1, 0, H * D).unflatten(-1, {H, D});
  auto k = projected.narrow(-1, H * D, G * D).unflatten(-1, {G, D});
  auto v = projected.narrow(-1, (H + G) * D, G * D).unflatten(-1, {G, D});
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  if (G != H) {  // key/value head g serves query heads g * H/G .. (g + 1) * H/G - 1
    k = k.repeat_interleave(H / G, -2);
    v = v.repeat_interleave(H / G, -2);
  }
  return torch::cat({q.flatten(-2), k.flatten(-2), v.flatten(-2)}, -1);
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const AttentionInputs& in) {
  const bool packed = in.rows_in.defined();
  const int64_t B = packed ? in.batch : x.size(0), L = packed ? in.length : x.size(1), H = heads_, D = head_dim_;
  auto projected = headsOf(affine(qkv, x));
  static const std::vector<torch::Tensor> kNoParams;
  const auto& params = in.params ? *in.params : kNoParams;
  // The whole attention in one fused function where it applies (see
  // attention_core.h): training and evaluation passes without a cache.
  const bool traced = in.trace_queries || in.trace_keys || in.trace_scores || in.trace_weights;
  if (in.score_jit && in.row_layout && !traced && !in.cache_keys && !null_slot_) {
    // Under bf16 autocast the projection is bf16; the core then runs in
    // float32, as the tensor path's scores and softmax do.
    const bool reduced = projected.scalar_type() == torch::kBFloat16 || projected.scalar_type() == torch::kHalf;
    const torch::Tensor core_in = reduced ? projected.to(torch::kFloat) : projected;
    if (attentionCoreSupported(core_in, *in.positional)) {
      torch::Tensor y;
      try {
        y = attentionCore(core_in.reshape({-1, 3 * H * D}), *in.row_layout, *in.positional, in.q_channels,
                          in.k_channels, attention_, softmax_, params, H, D);
      } catch (const NonFiniteScores& e) {
        throw NonFiniteScores(fmt::format("layer {}: {}", in.layer, e.what()));
      }
      if (packed) return affine(out, in.keep.defined() ? y.index_select(0, in.keep) : y);
      return affine(out, y.reshape({B, L, H * D}));
    }
  }
  if (packed)  // rows back to their (B, L) places, zeros elsewhere
    projected = torch::zeros({B * L, projected.size(1)}, projected.options()).index_copy(0, in.rows_in, projected);
  // unbind, not three selects: its backward is one stack, where each
  // select's would fill a zero tensor of the whole projection.
  auto parts = projected.reshape({B, L, 3, H, D}).permute({2, 0, 3, 1, 4}).unbind(0);  // 3 x (B, H, L, D)
  if (in.trace_queries) *in.trace_queries = parts[0].detach();
  if (in.trace_keys) *in.trace_keys = parts[1].detach();
  auto q = applyRotary(parts[0], *in.positional, Side::Query);
  auto k = applyKeyZeroing(applyRotary(parts[1], *in.positional, Side::Key), *in.positional);
  auto v = parts[2];
  if (in.cache_keys) {
    k = appendAlong(*in.cache_keys, in.cache_length, k, 2, in.cache_reserve);
    v = appendAlong(*in.cache_values, in.cache_length, v, 2, in.cache_reserve);
  }
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(D));
  if (scores.scalar_type() == torch::kBFloat16 || scores.scalar_type() == torch::kHalf)
    scores = scores.to(torch::kFloat);
  torch::Tensor w;
  if (in.score_jit && !in.trace_scores && fusedAttentionSupported(scores)) {
    try {
      w = fusedAttentionWeights(scores, in.q_channels, in.k_channels, attention_, softmax_, params);
    } catch (const NonFiniteScores& e) {
      throw NonFiniteScores(fmt::format("layer {}: {}", in.layer, e.what()));
    }
  } else {
    scores = applyScoreTerms(scores, in.q_channels, in.k_channels, attention_, params);
    if (in.trace_scores) *in.trace_scores = scores.detach();
    w = attentionWeights(scores, softmax_, null_slot_);
  }
  const int64_t Lk = k.size(2);
  auto token_w = null_slot_ ? w.narrow(3, 0, Lk) : w;
  if (in.trace_weights) *in.trace_weights = token_w.detach();
  auto y = torch::matmul(token_w.to(v.scalar_type()), v);  // (B, H, L, D)
  if (null_slot_) y = y + w.narrow(3, Lk, 1).to(v.scalar_type()) * null_value.to(v.scalar_type()).reshape({1, H, 1, D});
  if (packed) return affine(out, y.transpose(1, 2).reshape({B * L, H * D}).index_select(0, in.rows_out));
  return affine(out, y.transpose(1, 2).reshape({B, L, H * D}));
}

}  // namespace posc::model
