// Feed-forward block and pre-norm transformer block: see block.h.
#include "runtime/model/block.h"

#include <torch/torch.h>

#include "runtime/model/affine.h"

namespace posc::model {

MlpImpl::MlpImpl(plan::MlpKind kind, int64_t width, int64_t hidden, bool bias) : kind_(kind) {
  const int64_t in_hidden = kind_ == plan::MlpKind::Gelu ? hidden : 2 * hidden;
  fc1 = register_module("fc1", torch::nn::Linear(torch::nn::LinearOptions(width, in_hidden).bias(bias)));
  fc2 = register_module("fc2", torch::nn::Linear(torch::nn::LinearOptions(hidden, width).bias(bias)));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  auto h = affine(fc1, x);
  if (kind_ == plan::MlpKind::Gelu) {
    h = torch::gelu(h);
  } else {  // gated: act(gate) * up
    auto gate_up = h.chunk(2, -1);
    h = (kind_ == plan::MlpKind::Reglu ? torch::relu(gate_up[0]) : torch::silu(gate_up[0])) * gate_up[1];
  }
  return affine(fc2, h);
}

BlockImpl::BlockImpl(const plan::ModelPlan& model, const plan::AttentionPlan& attention)
    : dropout_(model.dropout) {
  norm1 = register_module("norm1", Norm(model.norm, model.width, model.bias));
  attn = register_module("attn", Attention(model, attention));
  norm2 = register_module("norm2", Norm(model.norm, model.width, model.bias));
  mlp = register_module("mlp", Mlp(model.mlp, model.width, model.mlp_hidden, model.bias));
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
