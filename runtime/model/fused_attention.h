// Fused score terms + causal mask + softmax on CPU, through JIT-compiled kernels.
//
// fusedAttentionWeights(...) computes exactly what
//   attentionWeights(applyScoreTerms(scores, ...), softmax, null_slot)
// computes (score_formula.h, attention.h), but in one generated function per
// (batch, head) block (compiler/jit/compiled.h) instead of one LibTorch
// operation per formula node, with a generated backward pass into the raw
// scores and the score parameters. Blocks run in parallel over LibTorch's
// intra-op threads.
//
// Only for CPU tensors of float32 or float64 and a build with LLVM; the
// tensor-op lowering stays the path elsewhere (`--jit off`, CUDA).
#pragma once

#include <torch/types.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"

namespace posc::jit {
class CompiledAttention;
}

namespace posc::model {

// A score became NaN or infinite inside a fused kernel. The message names the
// attention's score terms and their formulas; callers add the layer and step.
struct NonFiniteScores : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// True when the fused path can take these scores: JIT built in, CPU, f32/f64.
bool fusedAttentionSupported(const torch::Tensor& scores);

// scores (B, H, Lq, Lk) raw (scaled, before terms); channels as for
// applyScoreTerms; params one tensor per attention param (0-d or (H)).
// Returns (B, H, Lq, Lk [+1 with a null slot]). Differentiable in scores and
// in params that require grad. Throws NonFiniteScores when a row's scores are
// not finite.
torch::Tensor fusedAttentionWeights(const torch::Tensor& scores, const torch::Tensor& q_channels,
                                    const torch::Tensor& k_channels,
                                    const plan::AttentionPlan& attention,
                                    plan::SoftmaxKind softmax,
                                    const std::vector<torch::Tensor>& params);

// What both fused paths (these weights and the attention core,
// attention_core.h) hand the generated kernels: the compiled kernel for an
// attention in `dtype`; its (H, P) table of parameter values, built from the
// parameter tensors with differentiable operations (a value per head, or a
// table's entries per head, one after another), so that autograd routes the
// table's gradient back to each parameter; the channels as (B, C, L) in
// `dtype`; and the score terms' names for error messages.
struct FusedKernel {
  const jit::CompiledAttention* kernel = nullptr;
  torch::Tensor table, q_channels, k_channels;
  const std::string* term_names = nullptr;  // lives as long as the kernel
};
FusedKernel prepareFusedKernel(torch::ScalarType dtype, int64_t heads, const torch::Tensor& q_channels,
                               const torch::Tensor& k_channels, const plan::AttentionPlan& attention,
                               plan::SoftmaxKind softmax, const std::vector<torch::Tensor>& params);

// Compiles, ahead of the first forward pass, the kernel that forward passes
// in `dtype` will take for this attention (compiled kernels are cached for the
// process, so this is the JIT's one cost, paid where a run can name it).
void compileFusedKernel(torch::ScalarType dtype, const plan::AttentionPlan& attention, plan::SoftmaxKind softmax,
                        const std::vector<torch::Tensor>& params);

}  // namespace posc::model
