// Norms, feed-forward block and pre-norm transformer block: see block.h.
#include "runtime/model/block.h"

#include <torch/torch.h>

#include "runtime/model/affine.h"

namespace posc::model {

namespace {
constexpr double kNormEps = 1e-5;
}

NormImpl::NormImpl(plan::NormKind kind, int64_t width) : kind_(kind), width_(width) {
  weight = register_parameter("weight", torch::ones({width}));
  if (kind_ == plan::NormKind::LayerNorm) bias = register_parameter("bias", torch::zeros({width}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  if (kind_ == plan::NormKind::LayerNorm) return torch::layer_norm(x, {width_}, weight, bias, kNormEps);
  return x * (x.pow(2).mean(-1, /*keepdim=*/true) + kNormEps).rsqrt() * weight;
}

MlpImpl::MlpImpl(plan::MlpKind kind, int64_t width, int64_t hidden) : kind_(kind) {
  const int64_t in_hidden = kind_ == plan::MlpKind::Reglu ? 2 * hidden : hidden;
  fc1 = register_module("fc1", torch::nn::Linear(width, in_hidden));
  fc2 = register_module("fc2", torch::nn::Linear(hidden, width));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  auto h = affine(fc1, x);
  if (kind_ == plan::MlpKind::Reglu) {
    auto ab = h.chunk(2, -1);
    h = torch::relu(ab[0]) * ab[1];
  } else {
    h = torch::gelu(h);
  }
  return affine(fc2, h);
}

BlockImpl::BlockImpl(const plan::ModelPlan& model, const plan::AttentionPlan& attention)
    : dropout_(model.dropout) {
  norm1 = register_module("norm1", Norm(model.norm, model.width));
  attn = register_module("attn", Attention(model, attention));
  norm2 = register_module("norm2", Norm(model.norm, model.width));
  mlp = register_module("mlp", Mlp(model.mlp, model.width, model.mlp_hidden));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const AttentionInputs& in) {
  const bool drop = dropout_ > 0 && is_training();
  auto a = attn->forward(norm1->forward(x), in);
  if (drop) a = torch::dropout(a, dropout_, true);
  auto h = (in.keep.defined() ? x.index_select(0, in.keep) : x) + a;
  auto m = mlp->forward(norm2->forward(h));
  if (drop) m = torch::dropout(m, dropout_, true);
  return h + m;
}

}  // namespace posc::model
