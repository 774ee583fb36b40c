// Rotary tables and key zeroing: see positional.h. Angles are computed in
// float64 and the tables cast to the compute dtype afterwards, so that long
// positions keep their precision in float32 models.
#include "runtime/model/positional.h"

#include <torch/torch.h>

#include <cmath>
#include <vector>

namespace posc::model {

namespace {

bool anyHeadSelection(const plan::AttentionPlan& attention, bool for_rotations) {
  if (for_rotations) {
    for (const auto& r : attention.rotations)
      if (!r.heads.empty()) return true;
  } else {
    for (const auto& z : attention.key_zeroing)
      if (!z.heads.empty()) return true;
  }
  return false;
}

torch::Tensor channelOf(const torch::Tensor& channels, plan::Channel c) {
  return channels.select(0, static_cast<int64_t>(c));
}

}  // namespace

torch::Tensor kindMask(const torch::Tensor& kind_channel, plan::KindSet kinds) {
  auto mask = torch::zeros(kind_channel.sizes(), kind_channel.options().dtype(torch::kBool));
  for (int k = 0; k < 8; ++k) {
    if (kinds.bits & (1u << k)) mask = mask.logical_or(kind_channel == k);
  }
  return mask;
}

torch::Tensor headMask(const std::vector<int>& heads, int64_t num_heads) {
  auto mask = torch::zeros({num_heads}, torch::kBool);
  if (heads.empty()) return mask.fill_(true);
  for (int h : heads) mask[h] = true;
  return mask;
}

torch::Tensor rotaryAngles(const plan::AttentionPlan& attention, const plan::ModelPlan& model,
                           const torch::Tensor& channels, const torch::Tensor& stretch, torch::Tensor* log_scale) {
  const int64_t B = channels.size(1), L = channels.size(2);
  const int64_t P = model.head_dim / 2;
  const int64_t Hr = anyHeadSelection(attention, true) ? model.heads : 1;
  auto f64 = torch::TensorOptions().dtype(torch::kDouble).device(channels.device());
  auto angle = torch::zeros({B, Hr, L, P}, f64);
  for (const auto& r : attention.rotations) {
    if (log_scale && r.xpos_scale_base > 0 && !log_scale->defined()) *log_scale = torch::zeros({B, Hr, L, P}, f64);
    const int64_t n = r.pair_end - r.pair_begin;
    if (n <= 0) continue;
    // inv_freq over the component's own pairs, zero outside them.
    std::vector<double> ladder(P, 0.0);
    const std::vector<double> theta = plan::inverseFrequencies(r);
    for (int64_t i = 0; i < n; ++i) ladder[r.pair_begin + i] = theta[static_cast<size_t>(i)];
    auto freq = torch::tensor(ladder, torch::kDouble).to(f64.device());
    auto value = channelOf(channels, r.channel).to(torch::kDouble);  // (B, L)
    if (r.stretch) {
      if (stretch.defined())
        value = value * stretch.to(f64).reshape({B, 1});
      else
        value = value * r.stretch->eval_value;
    }
    auto a = value.reshape({B, 1, L, 1}) * freq.reshape({1, 1, 1, P});  // (B, 1, L, P)
    torch::Tensor heads;
    if (!r.heads.empty()) {
      heads = headMask(r.heads, model.heads).to(f64).reshape({1, Hr, 1, 1});
      a = a * heads;
    }
    angle = angle + a;
    if (log_scale && r.xpos_scale_base > 0) {
      // log zeta_i over the component's own pairs, zero outside them.
      std::vector<double> log_zeta(P, 0.0);
      for (int64_t i = 0; i < n; ++i)
        log_zeta[r.pair_begin + i] = std::log((static_cast<double>(i) / static_cast<double>(n) + 0.4) / 1.4);
      auto z = torch::tensor(log_zeta, torch::kDouble).to(f64.device()).reshape({1, 1, 1, P});
      auto s = value.reshape({B, 1, L, 1}) / r.xpos_scale_base * z;
      if (heads.defined()) s = s * heads;
      *log_scale = *log_scale + s;
    }
  }
  return angle;
}

PositionalContext buildPositionalContext(const plan::AttentionPlan& attention,
                                         const plan::ModelPlan& model,
                                         const torch::Tensor& channels,
                                         const torch::Tensor& stretch,
                                         torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  PositionalContext ctx;
  if (!attention.rotations.empty()) {
    torch::Tensor log_scale;
    auto angle = rotaryAngles(attention, model, channels, stretch, &log_scale);
    ctx.cos = angle.cos().to(dtype);
    ctx.sin = angle.sin().to(dtype);
    ctx.sin_pairs = torch::stack({-ctx.sin, ctx.sin}, -1);
    if (log_scale.defined()) ctx.query_scale = log_scale.exp().to(dtype);
  }
  if (!attention.key_zeroing.empty()) {
    const int64_t B = channels.size(1), L = channels.size(2), D = model.head_dim;
    const int64_t Hz = anyHeadSelection(attention, false) ? model.heads : 1;
    auto kind = channelOf(channels, plan::Channel::Kind);
    auto zero = torch::zeros({B, Hz, L, D}, torch::TensorOptions().dtype(torch::kBool).device(channels.device()));
    for (const auto& z : attention.key_zeroing) {
      auto dims = torch::zeros({D}, torch::kBool);
      dims.slice(0, 2 * z.pair_begin, 2 * z.pair_end).fill_(true);
      auto heads = z.heads.empty() ? torch::ones({Hz}, torch::kBool) : headMask(z.heads, model.heads);
      auto sel = heads.reshape({1, Hz, 1, 1}).logical_and(dims.reshape({1, 1, 1, D}));
      auto keys = kindMask(kind, z.kinds).reshape({B, 1, L, 1});
      zero = zero.logical_or(keys.logical_and(sel.to(channels.device())));
    }
    ctx.key_zero = zero;
  }
  return ctx;
}

torch::Tensor applyRotary(const torch::Tensor& x, const PositionalContext& ctx, Side side) {
  if (!ctx.cos.defined()) return x;
  auto sizes = x.sizes().vec();
  const int64_t P = sizes.back() / 2;
  // y0 = x0 cos - x1 sin, y1 = x1 cos + x0 sin, as two products and a sum.
  auto pairs = x.reshape({sizes[0], sizes[1], sizes[2], P, 2});
  auto y = pairs * ctx.cos.unsqueeze(-1) + pairs.flip(-1) * ctx.sin_pairs;
  if (ctx.query_scale.defined())
    y = side == Side::Query ? y * ctx.query_scale.unsqueeze(-1) : y / ctx.query_scale.unsqueeze(-1);
  return y.reshape(sizes);
}

torch::Tensor applyKeyZeroing(const torch::Tensor& k, const PositionalContext& ctx) {
  if (!ctx.key_zero.defined()) return k;
  return k.masked_fill(ctx.key_zero, 0.0);
}

}  // namespace posc::model
