// The attention cases shared by the equivalence tests of the fused JIT
// kernels (CPU) and of the CUDA path: every score formula the examples use,
// random inputs with every token kind present, and a scale-aware comparison.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/plan/plan.h"

namespace posc::testing {

// Every distinct attention plan with score terms in examples/, keyed by the
// rendering of its terms.
inline std::map<std::string, plan::ExperimentPlan> examplePlans() {
  std::map<std::string, plan::ExperimentPlan> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::filesystem::path(POSC_SOURCE_DIR) / "examples")) {
    if (entry.path().extension() != ".pos") continue;
    driver::Compilation loader;
    driver::CompileRequest req;
    req.path = entry.path().string();
    if (!loader.load(req)) continue;
    for (const auto& e : loader.program->main().file.experiments) {
      driver::Compilation c;
      driver::CompileRequest r = req;
      r.experiment.experiment = e.name.text;
      if (!c.compile(r)) continue;
      const auto& att = c.plan->attention;
      if (att.score_terms.empty()) continue;
      std::string key;
      for (const auto& t : att.score_terms)
        key += t.name + ": " + plan::renderFormula(t.formula, att) + "; ";
      out.emplace(key, *c.plan);
    }
  }
  return out;
}

struct Inputs {
  torch::Tensor scores, qch, kch;
  std::vector<torch::Tensor> params;
  torch::Tensor weight;  // random weights of the loss sum(weight * probs)
};

inline Inputs randomInputs(const plan::ExperimentPlan& p, int64_t B, int64_t L, bool null_slot,
                    torch::ScalarType dtype) {
  torch::manual_seed(17);
  const int64_t H = p.model.heads;
  Inputs in;
  in.scores = (torch::randn({B, H, L, L}, torch::kDouble) * 3).to(dtype);
  auto ch = torch::zeros({plan::kChannelCount, B, L}, torch::kLong);
  ch[0] = torch::arange(L).expand({B, L});
  ch[1] = torch::randint(0, 13, {B, L});
  ch[2] = torch::randint(0, 3, {B, L});
  ch[3] = torch::randint(0, 3, {B, L});
  in.qch = ch;
  in.kch = ch;
  for (const auto& prm : p.attention.params) {
    torch::Tensor t;
    if (prm.table()) {  // (H, N) or (N), drawn around the start so that every entry differs
      const std::vector<int64_t> shape = prm.per_head ? std::vector<int64_t>{H, prm.size} : std::vector<int64_t>{prm.size};
      t = torch::tensor(prm.init, torch::kDouble).reshape(shape) + torch::randn(shape, torch::kDouble);
    } else {
      t = prm.per_head ? torch::tensor(prm.init, torch::kDouble) : torch::tensor(prm.init[0], torch::kDouble);
    }
    in.params.push_back(t.to(dtype).set_requires_grad(true));
  }
  in.weight = torch::randn({B, H, L, L + (null_slot ? 1 : 0)}, torch::kDouble).to(dtype);
  return in;
}

// |a - b| <= rtol * (|b| + max|b|): relative to each value and to the
// tensor's scale, so tiny probabilities are compared at the scale that matters.
inline void expectClose(const torch::Tensor& a, const torch::Tensor& b, double rtol, const std::string& what) {
  ASSERT_TRUE(a.defined() && b.defined()) << what;
  auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
  const double scale = bd.abs().max().item<double>();
  auto excess = (ad - bd).abs() - rtol * (bd.abs() + scale);
  const double worst = excess.max().item<double>();
  EXPECT_LE(worst, 0.0) << what << ": max |a - b| = " << (ad - bd).abs().max().item<double>()
                        << ", scale " << scale;
}


}  // namespace posc::testing
