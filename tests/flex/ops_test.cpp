// Every operation of the table (compiler/expr/ops.def) as `posc emit flex`
// writes it, run under PyTorch: the `python` column of each row, emitted by
// flex::emitModule for the one-term formula op(s, b[h], c[h]) of a model with
// one head per case, is applied by tests/flex/check_ops.py to operands that
// include NaN, both infinities, both zeros, negatives, half-integers and
// ties, and differentiated. Its values must be the definition's (the `fold`
// column; exact, except transcendental functions within a relative 1e-13,
// NaN meeting NaN), and its gradients into the score and both parameters the
// tensor path's (the `tensor` column under LibTorch's autograd), the same
// numbers, NaN included: in particular min and max give a tie's gradient to
// their first operand, as the tensor column does (FIRE's max(L, i) meets such
// a tie whenever its learned threshold equals a position). Under PyTorch 2.x
// the finite values also come back through flex_attention itself. Runs
// under every interpreter of interpreters.h; skipped where none imports torch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/expr/ops.h"
#include "compiler/flex/flex.h"
#include "runtime/model/score_formula.h"
#include "runtime/train/safetensors.h"
#include "tests/common/files.h"
#include "tests/common/op_cases.h"
#include "tests/common/transcendental_ops.h"
#include "tests/flex/interpreters.h"

namespace {

using namespace posc;
using expr::Op;
namespace fs = std::filesystem;

using posc::testing::f64;
using posc::testing::OpCases;
using posc::testing::tensorPathGradients;

using posc::testing::transcendental;

// A plan whose only score term is opFormula(op), with a head per case and
// the cases' b and c as learned per-head parameters.
plan::ExperimentPlan planOf(Op op, const OpCases& k) {
  plan::ExperimentPlan p;
  p.name = expr::opName(op);
  p.source_path = "tests/flex/ops_test.cpp";
  p.model.heads = static_cast<int>(k.a.size());
  p.model.head_dim = 2;
  for (auto [name, init] : {std::pair{"b", &k.b}, std::pair{"c", &k.c}}) {
    plan::Param param;
    param.name = name;
    param.per_head = true;
    param.learned = true;
    param.init = *init;
    p.attention.params.push_back(param);
  }
  plan::ScoreTerm term;
  term.name = expr::opName(op);
  term.formula = posc::testing::opFormula(op);
  term.origin = "tests/flex/ops_test.cpp";
  p.attention.score_terms.push_back(term);
  return p;
}

// `got` is `want`: NaN meets NaN; transcendental functions, which PyTorch
// computes with its own vector code, within a relative 1e-13.
bool same(Op op, double want, double got) {
  if (std::isnan(want)) return std::isnan(got);
  if (transcendental(op) && std::isfinite(want)) return std::fabs(got - want) <= 1e-13 * std::fabs(want) + 1e-300;
  return got == want;
}

TEST(FlexOps, EveryRowsPythonColumnComputesTheDefinitionWithTheTensorPathsGradients) {
  if (posc::testing::pythonInterpreters().empty()) GTEST_SKIP() << posc::testing::kNoTorch;
  const fs::path dir = fs::path(::testing::TempDir()) / "flex_ops";
  fs::remove_all(dir);
  fs::create_directories(dir);
  train::NamedTensors cases;
  for (Op op : posc::testing::elementwiseOps()) {
    const OpCases k = posc::testing::opCasesOf(op);
    std::string why;
    const auto module = flex::emitModule(planOf(op, k), why);
    ASSERT_TRUE(module) << expr::opName(op) << ": " << why;
    posc::testing::writeFile(dir / (std::string(expr::opName(op)) + ".py"), *module);
    for (auto [x, v] : {std::pair{"a", &k.a}, std::pair{"b", &k.b}, std::pair{"c", &k.c}})
      cases.emplace_back(fmt::format("{}.{}", expr::opName(op), x), f64(*v));
  }
  train::writeSafetensors(cases, {}, dir / "cases.safetensors");

  for (const posc::testing::Interpreter& python : posc::testing::pythonInterpreters()) {
    SCOPED_TRACE(python.path);
    fs::remove(dir / "results.safetensors");
    posc::testing::expectCheckPasses(python, "check_ops.py' '" + dir.string() + "'", dir / "check_ops.log");
    std::fprintf(stderr, "%s", posc::testing::readFile(dir / "check_ops.log").c_str());
    ASSERT_TRUE(fs::exists(dir / "results.safetensors"));
    std::map<std::string, torch::Tensor> results;
    for (auto& [name, t] : train::readSafetensors(dir / "results.safetensors").tensors) results[name] = t;
    int checked = 0, ties = 0;
    for (Op op : posc::testing::elementwiseOps()) {
      const OpCases k = posc::testing::opCasesOf(op);
      const std::string name = expr::opName(op);
      const torch::Tensor value = results.at(name + ".value");
      const std::vector<torch::Tensor> want = tensorPathGradients(op, k);
      for (size_t i = 0; i < k.a.size(); ++i) {
        const int64_t j = static_cast<int64_t>(i);
        const double expected = expr::fold(op, k.a[i], k.b[i], k.c[i]), got = value[j].item<double>();
        EXPECT_TRUE(same(op, expected, got)) << posc::testing::opCaseText(op, k, i) << " = " << got << " in Python, " << expected
                                             << " by definition";
        for (int x = 0; x < 3; ++x) {
          const double g = results.at(fmt::format("{}.grad_{}", name, "abc"[x]))[j].item<double>();
          const double w = want[static_cast<size_t>(x)][j].item<double>();
          EXPECT_TRUE(same(op, w, g)) << "d/d" << "abc"[x] << " " << posc::testing::opCaseText(op, k, i) << " = " << g
                                      << " in Python, " << w << " on the tensor path";
        }
        // A tie of min or max: its gradient goes to the first operand.
        if ((op == Op::Min || op == Op::Max) && k.a[i] == k.b[i]) {
          EXPECT_EQ(results.at(name + ".grad_a")[j].item<double>(), 1.0) << posc::testing::opCaseText(op, k, i);
          EXPECT_EQ(results.at(name + ".grad_b")[j].item<double>(), 0.0) << posc::testing::opCaseText(op, k, i);
          ++ties;
        }
        ++checked;
      }
    }
    EXPECT_GE(checked, 16 * 12 + 16 * 144 + 2 * 720);  // today's unary, binary and ternary operations
    EXPECT_EQ(ties, 2 * 13);  // min and max: each operand but NaN with itself, and -0 with 0 both ways
  }
}

}  // namespace
