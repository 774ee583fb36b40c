// Score-term lowering: see score_formula.h. Every node becomes one broadcasting
// tensor operation, so autograd differentiates the formula and gradients reach
// learned parameters (ALiBi slopes, decay rates).
#include "runtime/model/score_formula.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "runtime/model/positional.h"

namespace posc::model {

using Op = plan::FormulaNode::Op;

torch::Tensor evalFormula(const plan::Formula& formula, const torch::Tensor& scores,
                          const torch::Tensor& q_channels, const torch::Tensor& k_channels,
                          const std::vector<torch::Tensor>& params) {
  if (formula.nodes.empty()) return scores;
  const auto dtype = scores.scalar_type();
  const auto opts = scores.options();
  const int64_t batch = scores.size(0), heads = scores.size(1), lq = scores.size(2), lk = scores.size(3);
  std::vector<torch::Tensor> v;
  v.reserve(formula.nodes.size());
  for (const auto& n : formula.nodes) {
    torch::Tensor r;
    switch (n.op) {
      case Op::Const: r = torch::scalar_tensor(n.value, opts); break;
      case Op::Score: r = scores; break;
      case Op::QChannel:
        r = q_channels.select(0, static_cast<int64_t>(n.channel)).to(dtype).reshape({batch, 1, lq, 1});
        break;
      case Op::KChannel:
        r = k_channels.select(0, static_cast<int64_t>(n.channel)).to(dtype).reshape({batch, 1, 1, lk});
        break;
      case Op::Head: r = torch::arange(heads, opts).reshape({1, heads, 1, 1}); break;
      case Op::Param: {
        const auto& p = params.at(n.param);
        r = p.dim() == 0 ? p : p.reshape({1, heads, 1, 1});
        break;
      }
      case Op::Lookup: {
        // The entry expr::lookupEntry picks (floor, clamped; NaN reads NaN),
        // indexed from the head's row of an (H, N) table or from an (N)
        // table; autograd accumulates the gradient into the entries read.
        const auto& table = params.at(n.param).to(dtype);
        const torch::Tensor& x = v.at(static_cast<size_t>(n.a));
        const int64_t size = table.size(-1);
        auto nan = torch::isnan(x);
        auto entry = torch::where(nan, torch::zeros_like(x), x).floor().clamp(0, static_cast<double>(size - 1))
                         .to(torch::kLong);
        using torch::indexing::TensorIndex;
        if (table.dim() == 2) {
          auto head = torch::arange(heads, entry.options()).reshape({1, heads, 1, 1});
          r = table.index({TensorIndex(head), TensorIndex(entry)});
        } else {
          r = table.index({TensorIndex(entry)});
        }
        r = torch::where(nan, torch::full_like(r, std::nan("")), r);
        break;
      }
      default: {
        // Every operation as its `tensor` column in ops.def says.
        const torch::Tensor& A = v.at(static_cast<size_t>(n.a));
        const torch::Tensor& B = n.b >= 0 ? v.at(static_cast<size_t>(n.b)) : A;
        const torch::Tensor& C = n.c >= 0 ? v.at(static_cast<size_t>(n.c)) : A;
        (void)B, (void)C;
        auto ind = [&](const torch::Tensor& t) { return t.to(dtype); };
        auto truth = [](const torch::Tensor& t) { return t != 0; };
        (void)ind, (void)truth;
        switch (n.op) {
#define POSC_OP_UNARY(Name, name, symbol, function, precedence, type, fold, grad, tensor, ...) \
  case Op::Name:                                                                               \
    r = tensor;                                                                                \
    break;
#define POSC_OP_BINARY(Name, name, symbol, function, precedence, commutative, type, fold, grad, tensor, ...) \
  case Op::Name:                                                                                             \
    r = tensor;                                                                                              \
    break;
#define POSC_OP_TERNARY(Name, name, symbol, function, precedence, type, fold, grad, tensor, ...) \
  case Op::Name:                                                                                 \
    r = tensor;                                                                                  \
    break;
#include "compiler/expr/ops.def"
          default: break;
        }
      }
    }
    if (!r.defined())
      throw std::logic_error("score formula node with unknown op " +
                             std::to_string(static_cast<int>(n.op)));
    v.push_back(std::move(r));
  }
  return v.back();
}

torch::Tensor applyScoreTerms(const torch::Tensor& scores, const torch::Tensor& q_channels,
                              const torch::Tensor& k_channels,
                              const plan::AttentionPlan& attention,
                              const std::vector<torch::Tensor>& params) {
  const int64_t B = scores.size(0), H = scores.size(1), Lq = scores.size(2), Lk = scores.size(3);
  const auto kind = static_cast<int64_t>(plan::Channel::Kind);
  torch::Tensor s = scores;
  for (const auto& term : attention.score_terms) {
    auto updated = evalFormula(term.formula, s, q_channels, k_channels, params).to(s.scalar_type());
    torch::Tensor keep;  // true where the old score passes through
    if (!term.exempt_keys.empty())
      keep = kindMask(k_channels.select(0, kind), term.exempt_keys).reshape({B, 1, 1, Lk});
    if (!term.exempt_queries.empty()) {
      auto q = kindMask(q_channels.select(0, kind), term.exempt_queries).reshape({B, 1, Lq, 1});
      keep = keep.defined() ? keep.logical_or(q) : q;
    }
    if (!term.heads.empty()) {
      auto h = headMask(term.heads, H).logical_not().to(s.device()).reshape({1, H, 1, 1});
      keep = keep.defined() ? keep.logical_or(h) : h;
    }
    s = keep.defined() ? torch::where(keep, s, updated) : updated.expand(s.sizes());
  }
  return s;
}

}  // namespace posc::model
