// LayerNorm and RMSNorm: see norm.h.
#include "runtime/model/norm.h"

#include <torch/torch.h>

namespace posc::model {

namespace {
constexpr double kNormEps = 1e-5;
}

NormImpl::NormImpl(plan::NormKind kind, int64_t width, bool with_bias) : kind_(kind), width_(width) {
  weight = register_parameter("weight", torch::ones({width}));
  if (kind_ == plan::NormKind::LayerNorm && with_bias) bias = register_parameter("bias", torch::zeros({width}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  if (kind_ == plan::NormKind::LayerNorm) return torch::layer_norm(x, {width_}, weight, bias, kNormEps);
  return x * (x.pow(2).mean(-1, /*keepdim=*/true) + kNormEps).rsqrt() * weight;
}

}  // namespace posc::model
