// Sink share: see sink_share.h.
#include "runtime/probe/sink_share.h"

#include <torch/torch.h>

#include "compiler/plan/plan.h"

namespace posc::probe {

torch::Tensor separatorShare(const torch::Tensor& weights, const torch::Tensor& key_kinds) {
  auto sep = (key_kinds == static_cast<int64_t>(plan::TokenKind::Separator)).to(weights.scalar_type());  // (B, Lk)
  return (weights * sep.unsqueeze(1).unsqueeze(1)).sum(-1);
}

}  // namespace posc::probe
