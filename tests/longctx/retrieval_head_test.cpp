// The analytic retrieval head on generated documents: its measured evidence
// mass equals the distractor law 1 / (1 + N e^(-m)) to 1e-9, the fit
// recovers m, and the Wilson bound matches hand-computed values.
#include "runtime/longctx/retrieval_head.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

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
      EXPECT_NEAR(head.evidence_mass, evidenceProbability(n, margin), 1e-9) << "N " << n << " m " << margin;
      double total = 0.0;
      for (double w : head.weights) total += w;
      EXPECT_NEAR(total, 1.0, 1e-12);
    }
  }
  EXPECT_NEAR(evidenceProbability(4, 2.0), 1.0 / (1.0 + 4.0 * 0.1353352832366127), 1e-15);
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
