// The analytic retrieval head on generated documents: its measured evidence
// mass equals the distractor law 1 / (1 + N e^(-m)) to 1e-9, the fit
// recovers m, and the Wilson bound matches hand-computed values.
#include "runtime/longctx/retrieval_head.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "runtime/analysis/controls.h"
#include "runtime/longctx/protocol.h"
#include "runtime/longctx/retrieval_control.h"

namespace posc::longctx {
namespace {

Document retrievalDocument(int distractors, uint64_t seed, int length = 2048) {
  DocumentSpec spec;
  spec.length = length;
  spec.distractors = distractors;
  spec.depth = 0.3;
  spec.seed = seed;
  return generate(spec);
}

TEST(RetrievalHead, MeasuredMassFollowsTheDistractorLaw) {
  for (double margin : {0.5, 2.0, 4.0}) {
    for (int n : {1, 2, 4, 16, 64, 200}) {
      Document doc = retrievalDocument(n, 17 + static_cast<uint64_t>(n));
      HeadAttention head = retrievalHeadAttention(doc, margin);
      EXPECT_EQ(head.competitors, n);
      // For N = 4, m = 2: 1 / (1 + 4 e^-2) = 0.648786...
      EXPECT_NEAR(head.evidence_mass, analysis::targetProbability(margin, n), 1e-9) << "N " << n << " m " << margin;
      double total = 0.0;
      for (double w : head.weights) total += w;
      EXPECT_NEAR(total, 1.0, 1e-12);
    }
  }
  EXPECT_NEAR(analysis::targetProbability(2.0, 4), 1.0 / (1.0 + 4.0 * 0.1353352832366127), 1e-15);
}

TEST(RetrievalHead, AttentionStaysOnStatementKeys) {
  Document doc = retrievalDocument(5, 3, 300);
  HeadAttention head = retrievalHeadAttention(doc, 1.0);
  double on_keys = 0.0;
  for (const Statement& st : doc.statements) on_keys += head.weights[static_cast<size_t>(st.key_token)];
  EXPECT_NEAR(on_keys, 1.0, 1e-12);
}

TEST(RetrievalHead, FitRecoversTheMargin) {
  std::vector<std::pair<int, double>> samples;
  for (int n : {1, 4, 16, 64}) {
    Document doc = retrievalDocument(n, 100 + static_cast<uint64_t>(n));
    samples.emplace_back(n, retrievalHeadAttention(doc, 3.25).evidence_mass);
  }
  samples.emplace_back(0, 1.0);  // no distractors: no information, skipped
  MarginFit fit = fitMargin(samples);
  EXPECT_EQ(fit.points, 4);
  EXPECT_NEAR(fit.margin, 3.25, 1e-9);
  EXPECT_LT(fit.rms_residual, 1e-9);
  // Masses off the law leave a residual: logit(0.5) + log 1 = 0 and
  // logit(0.5) + log 4 = log 4 give m = log 2, residual log 2.
  MarginFit off = fitMargin({{1, 0.5}, {4, 0.5}});
  EXPECT_NEAR(off.margin, std::log(2.0), 1e-12);
  EXPECT_NEAR(off.rms_residual, std::log(2.0), 1e-12);
}

TEST(RetrievalHead, NoEvidenceMeansNoMassOnTheAskedKey) {
  DocumentSpec spec;
  spec.length = 200;
  spec.distractors = 8;
  spec.evidence_present = false;
  HeadAttention head = retrievalHeadAttention(generate(spec), 5.0);
  EXPECT_EQ(head.evidence_mass, 0.0);
  EXPECT_EQ(head.competitors, 8);
}

TEST(RetrievalHead, RefusesOrderDocuments) {
  DocumentSpec spec;
  spec.task = TaskType::Order;
  spec.length = 100;
  EXPECT_THROW(retrievalHeadAttention(generate(spec), 1.0), std::invalid_argument);
}

TEST(WilsonBound, HandComputedValues) {
  // 45 of 50 at z = 1.96: p = 0.9, centre = 0.9 + 3.8416 / 100 = 0.938416,
  // spread = 1.96 sqrt(0.09 / 50 + 3.8416 / 10000) = 0.0916006,
  // lower = (0.938416 - 0.0916006) / 1.076832 = 0.786395
  EXPECT_NEAR(wilsonLowerBound(45, 50), 0.7864, 1e-4);
  // 50 of 50: lower = 1 / (1 + z^2 / n) = 50 / 53.8416 = 0.928650...
  EXPECT_NEAR(wilsonLowerBound(50, 50), 50.0 / 53.8416, 1e-12);
  EXPECT_EQ(wilsonLowerBound(0, 20), 0.0);
  EXPECT_EQ(wilsonLowerBound(0, 0), 0.0);
}

}  // namespace
}  // namespace posc::longctx

namespace posc::longctx {
namespace {

// b(d) = -slope d, evaluated directly (no JIT, no formula IR).
class LinearBias final : public analysis::KernelEvaluator {
 public:
  explicit LinearBias(double slope) : slope_(slope) {}
  void evaluate(const double* d, double* out, size_t n) const override {
    for (size_t i = 0; i < n; ++i) out[i] = -slope_ * d[i];
  }
  std::string name() const override { return "linear bias"; }

 private:
  double slope_;
};

TEST(RetrievalHead, APositionalBiasWeighsEachKeyByItsDistance) {
  DocumentSpec spec;
  spec.length = 400;
  spec.distractors = 6;
  spec.depth = 0.2;
  spec.seed = 21;
  Document doc = generate(spec);
  LinearBias bias(0.01);
  const double m = 3.0;
  HeadAttention head = retrievalHeadAttention(doc, m, &bias);
  // By hand: each statement's key token at distance d = 399 - position from
  // the question's last token scores m [evidence] - 0.01 d.
  double evidence = 0.0, total = 0.0;
  for (const Statement& st : doc.statements) {
    double d = 399.0 - st.key_token;
    double w = std::exp((st.role == StatementRole::Evidence ? m : 0.0) - 0.01 * d);
    total += w;
    if (st.role == StatementRole::Evidence) evidence += w;
  }
  EXPECT_NEAR(head.evidence_mass, evidence / total, 1e-12);
  // Deep evidence among nearer distractors falls below the bias-free law.
  EXPECT_LT(head.evidence_mass, analysis::targetProbability(m, 6));
}

TEST(RetrievalControl, WithoutBiasEveryCellFollowsTheLaw) {
  Factors f;
  f.lengths = {128, 512};
  f.depths = {0.0, 0.5, 1.0};
  f.distractors = {0, 3, 12};
  f.problems = 4;
  auto cells = retrievalControl(f, 2.5, nullptr);
  ASSERT_EQ(cells.size(), 18u);
  for (const PooledValue& v : cells)
    EXPECT_NEAR(v.sum / v.documents, analysis::targetProbability(2.5, v.cell.distractors), 1e-12);
  auto margins = effectiveMargins(cells);
  ASSERT_EQ(margins.size(), 6u);  // two lengths x three depths
  for (const EffectiveMargin& e : margins) {
    EXPECT_EQ(e.fit.points, 2);  // N = 3 and 12
    EXPECT_NEAR(e.fit.margin, 2.5, 1e-9);
    EXPECT_LT(e.fit.rms_residual, 1e-9);
  }
}

TEST(RetrievalControl, ARecencyBiasStarvesDeepEvidence) {
  Factors f;
  f.lengths = {1024};
  f.depths = {0.0, 1.0};
  f.distractors = {8};
  f.problems = 6;
  LinearBias bias(0.05);
  auto cells = retrievalControl(f, 4.0, &bias);
  ASSERT_EQ(cells.size(), 2u);
  double deep = cells[0].sum / cells[0].documents, recent = cells[1].sum / cells[1].documents;
  // At depth 0 the evidence is ~1000 tokens back: e^(4 - 50) against
  // distractors nearer by hundreds of tokens, so almost no mass.
  EXPECT_LT(deep, 1e-6);
  // At depth 1 it is the nearest key: more than the bias-free law gives.
  EXPECT_GT(recent, analysis::targetProbability(4.0, 8));
}

}  // namespace
}  // namespace posc::longctx
