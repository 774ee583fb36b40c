// Fused attention weights: see fused_attention.h. The custom autograd function
// takes the raw scores and a (H, P) table of parameter values (built from the
// parameter tensors with differentiable stack/expand, so autograd routes the
// table's gradient back to each parameter) and returns the probabilities.
#include "runtime/model/fused_attention.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include "compiler/jit/compiled.h"

namespace posc::model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::string termNames(const plan::AttentionPlan& attention) {
  std::string out;
  for (const auto& t : attention.score_terms) {
    if (!out.empty()) out += ", ";
    out += fmt::format("'{}' ({})", t.name, plan::renderFormula(t.formula, attention));
  }
  return out;
}

template <typename T>
int64_t runForward(const jit::CompiledAttention& k, const torch::Tensor& s, torch::Tensor& probs,
                   const torch::Tensor& qch, const torch::Tensor& kch, const torch::Tensor& table) {
  const int64_t B = s.size(0), H = s.size(1), Lq = s.size(2), Lk = s.size(3), W = probs.size(3);
  const int64_t P = table.size(1), C = qch.size(1);
  auto fn = reinterpret_cast<jit::ForwardFn<T>>(k.forward());
  const T* sp = s.data_ptr<T>();
  T* pp = probs.data_ptr<T>();
  const T* qp = qch.data_ptr<T>();
  const T* kp = kch.data_ptr<T>();
  const T* tp = table.data_ptr<T>();
  std::atomic<int64_t> bad{0};
  at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    int64_t local = 0;
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      local += fn(sp + bh * Lq * Lk, pp + bh * Lq * W, qp + b * C * Lq, kp + b * C * Lk,
                  tp + h * P, Lq, Lk, h);
    }
    bad += local;
  });
  return bad.load();
}

template <typename T>
void runBackward(const jit::CompiledAttention& k, const torch::Tensor& s, const torch::Tensor& probs,
                 const torch::Tensor& gprobs, torch::Tensor& gscores, torch::Tensor& gblocks,
                 const torch::Tensor& qch, const torch::Tensor& kch, const torch::Tensor& table) {
  const int64_t B = s.size(0), H = s.size(1), Lq = s.size(2), Lk = s.size(3), W = probs.size(3);
  const int64_t P = table.size(1), C = qch.size(1);
  auto fn = reinterpret_cast<jit::BackwardFn<T>>(k.backward());  // compiled on first use
  const T* sp = s.data_ptr<T>();
  const T* pp = probs.data_ptr<T>();
  const T* gp = gprobs.data_ptr<T>();
  T* gs = gscores.data_ptr<T>();
  T* gb = gblocks.data_ptr<T>();
  const T* qp = qch.data_ptr<T>();
  const T* kp = kch.data_ptr<T>();
  const T* tp = table.data_ptr<T>();
  at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      fn(sp + bh * Lq * Lk, pp + bh * Lq * W, gp + bh * Lq * W, gs + bh * Lq * Lk, gb + bh * P,
         qp + b * C * Lq, kp + b * C * Lk, tp + h * P, Lq, Lk, h);
    }
  });
}

struct FusedAttention : torch::autograd::Function<FusedAttention> {
  // qch (B, C, Lq), kch (B, C, Lk) in the scores' dtype; table (H, P).
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& scores,
                               const torch::Tensor& table, const torch::Tensor& qch,
                               const torch::Tensor& kch, const jit::CompiledAttention* kernel,
                               bool null_slot, const std::string* names) {
    auto s = scores.contiguous();
    auto t = table.contiguous();
    const int64_t W = s.size(3) + (null_slot ? 1 : 0);
    auto probs = torch::empty({s.size(0), s.size(1), s.size(2), W}, s.options());
    int64_t bad = s.scalar_type() == torch::kDouble
                      ? runForward<double>(*kernel, s, probs, qch, kch, t)
                      : runForward<float>(*kernel, s, probs, qch, kch, t);
    if (bad > 0)
      throw NonFiniteScores(fmt::format(
          "non-finite attention scores in {} of {} rows after score terms {}", bad,
          s.size(0) * s.size(1) * s.size(2), *names));
    ctx->save_for_backward({s, probs, qch, kch, t});
    ctx->saved_data["kernel"] = reinterpret_cast<int64_t>(kernel);
    return probs;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto& s = saved[0];
    const auto& probs = saved[1];
    const auto& qch = saved[2];
    const auto& kch = saved[3];
    const auto& t = saved[4];
    auto* kernel = reinterpret_cast<const jit::CompiledAttention*>(ctx->saved_data["kernel"].toInt());
    auto g = grads[0].contiguous();
    auto gscores = torch::empty_like(s);
    const int64_t B = s.size(0), H = s.size(1), P = t.size(1);
    auto gblocks = torch::zeros({B, H, P}, s.options());
    if (s.scalar_type() == torch::kDouble)
      runBackward<double>(*kernel, s, probs, g, gscores, gblocks, qch, kch, t);
    else
      runBackward<float>(*kernel, s, probs, g, gscores, gblocks, qch, kch, t);
    return {gscores, gblocks.sum(0), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor()};
  }
};

// The kernel's key: the dtype, the softmax, the score terms, and per
// parameter whether it learns and how many values a head sees.
jit::AttentionSpec attentionSpec(torch::ScalarType dtype, const plan::AttentionPlan& attention,
                                 plan::SoftmaxKind softmax, const std::vector<torch::Tensor>& params) {
  jit::AttentionSpec spec;
  spec.dtype = dtype == torch::kDouble ? jit::DType::F64 : jit::DType::F32;
  spec.softmax = softmax;
  spec.null_slot = attention.null_slot;
  spec.terms = attention.score_terms;
  for (size_t i = 0; i < params.size(); ++i) {
    spec.learned.push_back(params[i].requires_grad());
    spec.widths.push_back(attention.params.at(i).width());
  }
  return spec;
}

}  // namespace

bool fusedAttentionSupported(const torch::Tensor& scores) {
  return jit::available() && scores.device().is_cpu() &&
         (scores.scalar_type() == torch::kFloat || scores.scalar_type() == torch::kDouble);
}

void compileFusedKernel(torch::ScalarType dtype, const plan::AttentionPlan& attention, plan::SoftmaxKind softmax,
                        const std::vector<torch::Tensor>& params) {
  jit::compileAttention(attentionSpec(dtype, attention, softmax, params));
}

FusedKernel prepareFusedKernel(torch::ScalarType dtype, int64_t heads, const torch::Tensor& q_channels,
                               const torch::Tensor& k_channels, const plan::AttentionPlan& attention,
                               plan::SoftmaxKind softmax, const std::vector<torch::Tensor>& params) {
  const int64_t H = heads;
  const jit::AttentionSpec spec = attentionSpec(dtype, attention, softmax, params);
  std::vector<torch::Tensor> columns;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    const plan::Param& declared = attention.params.at(i);
    // (H, width): a value per head, or a table's entries per head.
    torch::Tensor c = !declared.table() ? (p.dim() == 0 ? p.expand({H}) : p.reshape({H})).unsqueeze(1)
                      : p.dim() == 1    ? p.unsqueeze(0).expand({H, declared.size})
                                        : p.reshape({H, declared.size});
    columns.push_back(c.to(dtype));
  }
  FusedKernel fk;
  fk.table = columns.empty() ? torch::zeros({H, 0}, q_channels.options().dtype(dtype))
                             : torch::cat(columns, 1);  // (H, P), P = sum of widths
  fk.kernel = &jit::compileAttention(spec);
  // One name string per kernel, alive as long as the kernel (the process).
  static std::mutex names_mutex;
  static std::map<const jit::CompiledAttention*, std::string> names;
  {
    std::lock_guard<std::mutex> lock(names_mutex);
    auto it = names.find(fk.kernel);
    if (it == names.end()) it = names.emplace(fk.kernel, termNames(attention)).first;
    fk.term_names = &it->second;
  }
  fk.q_channels = q_channels.permute({1, 0, 2}).to(dtype).contiguous();  // (B, C, Lq)
  fk.k_channels = k_channels.permute({1, 0, 2}).to(dtype).contiguous();  // (B, C, Lk)
  return fk;
}

torch::Tensor fusedAttentionWeights(const torch::Tensor& scores, const torch::Tensor& q_channels,
                                    const torch::Tensor& k_channels,
                                    const plan::AttentionPlan& attention,
                                    plan::SoftmaxKind softmax,
                                    const std::vector<torch::Tensor>& params) {
  FusedKernel fk = prepareFusedKernel(scores.scalar_type(), scores.size(1), q_channels, k_channels, attention,
                                      softmax, params);
  return FusedAttention::apply(scores, fk.table, fk.q_channels, fk.k_channels, fk.kernel,
                               attention.null_slot, fk.term_names);
}

}  // namespace posc::model
