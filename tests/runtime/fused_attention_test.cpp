// The fused JIT kernels against the tensor-op lowering, for every score
// formula the examples use (which covers every formula in stdlib/): equal
// probabilities and equal gradients into the raw scores and into every
// parameter (all made learnable here), at L = 600 with every token kind
// present, in f32 (1e-5 relative) and f64 (1e-12 relative), for both softmax
// kinds with and without a null slot.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <set>

#include "compiler/driver/compile.h"
#include "compiler/jit/compiled.h"
#include "runtime/model/attention.h"
#include "runtime/model/fused_attention.h"
#include "runtime/model/score_formula.h"
#include "tests/common/attention_cases.h"

namespace fs = std::filesystem;
using namespace posc;

namespace {

using posc::testing::examplePlans;
using posc::testing::expectClose;
using posc::testing::Inputs;
using posc::testing::randomInputs;

struct Result {
  torch::Tensor probs, gscores;
  std::vector<torch::Tensor> gparams;
};

Result run(const plan::AttentionPlan& att, plan::SoftmaxKind softmax, const Inputs& base, bool fused) {
  Inputs in = base;
  auto scores = base.scores.clone().set_requires_grad(true);
  std::vector<torch::Tensor> params;
  for (const auto& t : base.params) params.push_back(t.detach().clone().set_requires_grad(true));
  torch::Tensor probs =
      fused ? model::fusedAttentionWeights(scores, in.qch, in.kch, att, softmax, params)
            : model::attentionWeights(model::applyScoreTerms(scores, in.qch, in.kch, att, params),
                                      softmax, att.null_slot);
  (probs * in.weight).sum().backward();
  Result r{probs.detach(), scores.grad(), {}};
  for (auto& t : params) r.gparams.push_back(t.grad());
  return r;
}

}  // namespace

TEST(FusedAttention, EveryExampleFormulaMatchesTheTensorLowering) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  auto plans = examplePlans();
  // The examples cover the stdlib's score formulas: decay and ALiBi.
  std::set<std::string> names;
  for (const auto& [key, p] : plans)
    for (const auto& t : p.attention.score_terms) names.insert(t.name);
  ASSERT_TRUE(names.count("decay")) << "no example uses decay";
  ASSERT_TRUE(names.count("alibi")) << "no example uses alibi";
  for (const auto& [key, p] : plans) {
    for (auto dtype : {torch::kFloat, torch::kDouble}) {
      const double rtol = dtype == torch::kFloat ? 1e-5 : 1e-12;
      for (auto softmax : {plan::SoftmaxKind::Standard, plan::SoftmaxKind::Softmax1}) {
        for (bool null_slot : {false, true}) {
          plan::AttentionPlan att = p.attention;
          att.null_slot = null_slot;
          // L = 600 in both; one sequence in f64 keeps the suite's time down.
          Inputs in = randomInputs(p, dtype == torch::kFloat ? 2 : 1, 600, null_slot, dtype);
          Result ref = run(att, softmax, in, false);
          Result got = run(att, softmax, in, true);
          std::string what = key + (dtype == torch::kFloat ? " f32" : " f64") +
                             (softmax == plan::SoftmaxKind::Softmax1 ? " softmax1" : " softmax") +
                             (null_slot ? " null" : "");
          expectClose(got.probs, ref.probs, rtol, what + " probs");
          expectClose(got.gscores, ref.gscores, rtol, what + " d/dscores");
          for (size_t i = 0; i < ref.gparams.size(); ++i)
            expectClose(got.gparams[i], ref.gparams[i], rtol * 10, what + " d/d" + att.params[i].name);
        }
      }
    }
  }
}

TEST(FusedAttention, F64GradientsMatchFiniteDifferences) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  auto plans = examplePlans();
  for (const auto& [key, p] : plans) {
    plan::AttentionPlan att = p.attention;
    att.null_slot = false;  // the inputs have no null key (the test above covers it)
    Inputs in = randomInputs(p, 1, 12, false, torch::kDouble);
    auto f = [&](const torch::Tensor& scores, const std::vector<torch::Tensor>& params) {
      return (model::fusedAttentionWeights(scores, in.qch, in.kch, att, p.model.softmax, params) *
              in.weight).sum();
    };
    std::vector<torch::Tensor> params;
    for (auto& t : in.params) params.push_back(t.detach().clone().set_requires_grad(true));
    auto scores = in.scores.clone().set_requires_grad(true);
    f(scores, params).backward();
    const double h = 1e-6;
    auto s0 = in.scores.clone();
    for (int64_t idx : {0L, 17L, 100L, 143L, 300L, 575L}) {
      auto sp = s0.clone(), sm = s0.clone();
      sp.view(-1)[idx] += h;
      sm.view(-1)[idx] -= h;
      double fd = (f(sp, params).item<double>() - f(sm, params).item<double>()) / (2 * h);
      EXPECT_NEAR(scores.grad().view(-1)[idx].item<double>(), fd, 1e-8) << key << " score " << idx;
    }
    for (size_t i = 0; i < params.size(); ++i) {
      for (int64_t k = 0; k < params[i].numel(); ++k) {
        auto pp = params, pm = params;
        pp[i] = params[i].detach().clone();
        pm[i] = params[i].detach().clone();
        pp[i].view(-1)[k] += h;
        pm[i].view(-1)[k] -= h;
        double fd = (f(s0, pp).item<double>() - f(s0, pm).item<double>()) / (2 * h);
        EXPECT_NEAR(params[i].grad().view(-1)[k].item<double>(), fd, 1e-7)
            << key << " " << att.params[i].name << "[" << k << "]";
      }
    }
  }
}

TEST(FusedAttention, NonFiniteScoresAreReportedWithTheFormula) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  auto plans = examplePlans();
  ASSERT_FALSE(plans.empty());
  const auto& p = plans.begin()->second;
  Inputs in = randomInputs(p, 1, 8, false, torch::kFloat);
  in.scores[0][0][5][2] = std::numeric_limits<float>::quiet_NaN();
  try {
    model::fusedAttentionWeights(in.scores, in.qch, in.kch, p.attention, p.model.softmax, in.params);
    FAIL() << "no error for a NaN score";
  } catch (const model::NonFiniteScores& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("1 of 48 rows"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + p.attention.score_terms[0].name + "'"), std::string::npos) << msg;
  }
}
