// The `grad` column of every elementwise operation (compiler/expr/ops.def),
// which formula::Graph differentiates with and the JIT's fused kernels
// compile, against the tensor path's gradients (the `tensor` column under
// LibTorch's autograd) on the cases of tests/common/op_cases.h with finite
// operands and a finite value: both zeros and ties included. The two backends train the same
// model only if they agree at the kinks as well: a learned threshold of
// min, max or clamp meets a tie whenever it equals a position (FIRE's
// max(L, i); KERPLE's clamp), and there the choice of operand that receives
// the gradient is the definition's (the first operand of min and max; of
// clamp(x, lo, hi) = min(max(x, lo), hi), x while lo <= x <= hi).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "compiler/formula/formula.h"
#include "tests/common/op_cases.h"
#include "tests/common/transcendental_ops.h"

namespace {

using namespace posc;
using expr::Op;
using formula::Wrt;

// NaN meets NaN; the derivatives of transcendental functions, which LibTorch
// computes with its own vector code, within a relative 1e-13; all else exact.
bool same(Op op, double want, double got) {
  if (std::isnan(want)) return std::isnan(got);
  if (posc::testing::transcendental(op) && std::isfinite(want))
    return std::fabs(got - want) <= 1e-13 * std::fabs(want) + 1e-300;
  return got == want;
}

TEST(OpGradients, GradColumnIsTheTensorPathsOnEveryCase) {
  int checked = 0, ties = 0;
  for (Op op : posc::testing::elementwiseOps()) {
    const posc::testing::OpCases k = posc::testing::opCasesOf(op);
    const std::vector<torch::Tensor> want = posc::testing::tensorPathGradients(op, k);
    formula::Graph g;
    const formula::NodeId root = g.import(posc::testing::opFormula(op));
    const formula::NodeId d[3] = {g.derivative(root, Wrt::score()), g.derivative(root, Wrt::param(0)),
                                  g.derivative(root, Wrt::param(1))};
    for (size_t i = 0; i < k.a.size(); ++i) {
      // Finite operands and a finite value only. Where the value is NaN the
      // softmax row and the loss are NaN whatever the gradient says; at an
      // infinite operand or value (a score divided by a parameter at 0) the
      // grad column's quotient and product rules give NaN where autograd's
      // own formulas give an infinity or a zero. Neither trains.
      const double value = expr::fold(op, k.a[i], k.b[i], k.c[i]);
      if (!std::isfinite(value) || !std::isfinite(k.a[i]) || !std::isfinite(k.b[i]) || !std::isfinite(k.c[i])) continue;
      formula::Env env;
      env.score = k.a[i];
      env.params = {k.b[i], k.c[i]};
      for (int x = 0; x < 3; ++x) {
        const double w = want[static_cast<size_t>(x)][static_cast<int64_t>(i)].item<double>();
        const double got = formula::evaluate(g, d[x], env);
        EXPECT_TRUE(same(op, w, got)) << "d/d" << "abc"[x] << " " << posc::testing::opCaseText(op, k, i) << " = "
                                      << got << " by the grad column, " << w << " on the tensor path";
      }
      const bool tie = ((op == Op::Min || op == Op::Max) && k.a[i] == k.b[i]) ||
                       (op == Op::Clamp && (k.a[i] == k.b[i] || k.a[i] == k.c[i] || k.b[i] == k.c[i]));
      ties += tie;
      ++checked;
    }
  }
  EXPECT_GE(checked, 1500);      // of 3,936 cases, those with finite operands and value
  EXPECT_GE(ties, 2 * 10 + 20);  // min and max, then clamp's ties among its operands
}

// Hand-computed: clamp's gradient at each of its ties goes where
// min(max(x, lo), hi) with first-operand ties sends it.
TEST(OpGradients, ClampTiesGoToTheChosenOperand) {
  // (x, lo, hi) and the operand that receives the gradient:
  //   (1, 1, 3): max(x, lo) ties and picks x, min(1, 3) keeps it: x.
  //   (2, 0, 2): max picks x, min(x, hi) ties and picks x: x.
  //   (2, 2, 2): both tie, each picks its first operand: x.
  //   (1, 2, 1): max picks lo = 2, min(2, hi = 1) picks hi, which equals x: hi.
  const posc::testing::OpCases k{{1.0, 2.0, 2.0, 1.0}, {1.0, 0.0, 2.0, 2.0}, {3.0, 2.0, 2.0, 1.0}};
  const int receiver[4] = {0, 0, 0, 2};
  const std::vector<torch::Tensor> g = posc::testing::tensorPathGradients(Op::Clamp, k);
  for (int64_t i = 0; i < 4; ++i)
    for (int x = 0; x < 3; ++x)
      EXPECT_EQ(g[static_cast<size_t>(x)][i].item<double>(), x == receiver[i] ? 1.0 : 0.0)
          << posc::testing::opCaseText(Op::Clamp, k, static_cast<size_t>(i)) << " d/d" << "abc"[x];
}

}  // namespace
