// The operands every elementwise operation of the table (compiler/expr/ops.def)
// is checked on, and the tensor path's answer on them: NaN, both infinities,
// both zeros, negatives, half-integers and ties, the single formula
// op(s, b[h], c[h]) with a head per case, and its gradients under LibTorch's
// autograd. Shared by the flex test (the python column against the tensor
// path) and the gradient test (the grad column, which the JIT compiles,
// against the tensor path), so both read the same cases.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/expr/ops.h"
#include "compiler/plan/plan.h"
#include "runtime/model/score_formula.h"

namespace posc::testing {

struct OpCases {
  std::vector<double> a, b, c;
};

// Every combination of the operands the operation reads; the ternary ones
// take their third from fewer values (a tie of clamp's bound included).
inline OpCases opCasesOf(expr::Op op) {
  const std::vector<double> v = {NAN, -INFINITY, -2.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 3.0, INFINITY};
  const std::vector<double> third = {NAN, -1.0, 0.0, 2.5, INFINITY};
  const int n = expr::arity(op);
  OpCases out;
  for (double a : v)
    for (double b : n >= 2 ? v : std::vector<double>{0.0})
      for (double c : n >= 3 ? third : std::vector<double>{0.0}) {
        out.a.push_back(a);
        out.b.push_back(b);
        out.c.push_back(c);
      }
  return out;
}

// The table's elementwise operations (not the leaves and the table read).
inline std::vector<expr::Op> elementwiseOps() {
  std::vector<expr::Op> ops;
  for (int i = 0; i < expr::kOpCount; ++i)
    if (expr::isElementwise(static_cast<expr::Op>(i))) ops.push_back(static_cast<expr::Op>(i));
  return ops;
}

// The formula s <- op(s, b[h], c[h]), operands the operation does not read
// left unread.
inline plan::Formula opFormula(expr::Op op) {
  plan::Formula f;
  plan::FormulaNode s, b, c, r;
  s.op = expr::Op::Score;
  b.op = expr::Op::Param, b.param = 0;
  c.op = expr::Op::Param, c.param = 1;
  r.op = op;
  r.a = 0;
  r.b = expr::arity(op) >= 2 ? 1 : -1;
  r.c = expr::arity(op) >= 3 ? 2 : -1;
  f.nodes = {s, b, c, r};
  return f;
}

inline torch::Tensor f64(const std::vector<double>& v) {
  return torch::tensor(v, torch::TensorOptions().dtype(torch::kDouble));
}

// The tensor path's gradients of the values' sum into a, b and c (0 where an
// operand is unread).
inline std::vector<torch::Tensor> tensorPathGradients(expr::Op op, const OpCases& k) {
  const int64_t H = static_cast<int64_t>(k.a.size());
  torch::Tensor a = f64(k.a).reshape({1, H, 1, 1}).detach().requires_grad_(), b = f64(k.b).requires_grad_(),
                c = f64(k.c).requires_grad_();
  const torch::Tensor channels = torch::zeros({plan::kChannelCount, 1, 1}, torch::kLong);
  const torch::Tensor value = model::evalFormula(opFormula(op), a, channels, channels, {b, c});
  std::vector<torch::Tensor> grads(3);
  if (value.requires_grad())
    grads = torch::autograd::grad({value.sum()}, {a, b, c}, /*grad_outputs=*/{}, /*retain_graph=*/false,
                                  /*create_graph=*/false, /*allow_unused=*/true);
  for (torch::Tensor& g : grads) g = g.defined() ? g.reshape({H}).detach() : torch::zeros({H}, torch::kDouble);
  return grads;
}

inline std::string opCaseText(expr::Op op, const OpCases& k, size_t i) {
  const int n = expr::arity(op);
  return fmt::format("{}({}{}{})", expr::opName(op), k.a[i], n >= 2 ? fmt::format(", {}", k.b[i]) : "",
                     n >= 3 ? fmt::format(", {}", k.c[i]) : "");
}

}  // namespace posc::testing
