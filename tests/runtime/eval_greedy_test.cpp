// Tests of greedy decoding: the KV-cache decoder emits exactly the tokens of
// the reference decoder (a full forward pass per token) on random models with
// various positional components, mixed prompt lengths and odd batch sizes;
// scoring accepts exactly the right answers.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "runtime/eval/greedy.h"
#include "runtime/probe/problems.h"
#include "runtime/train/trainer.h"
#include "tests/runtime/train_test_plans.h"

namespace posc {
namespace {

// A random model with large weights, so that its greedy outputs vary from
// token to token (the default small init makes nearly constant predictions).
model::Gpt randomModel(const plan::ExperimentPlan& p, uint64_t seed) {
  model::Gpt m = train::buildModel(p, seed, torch::kCPU);
  torch::NoGradGuard no_grad;
  for (auto& param : m->parameters())
    if (param.dim() >= 2) param.normal_(0.0, 0.3);
  return m;
}

std::vector<task::Problem> mixedProblems(const plan::TaskPlan& task, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<task::Problem> out;
  for (int i = 0; i < count; ++i) out.push_back(task::sampleProblem(task, rng));
  return out;
}

void expectSameTokens(model::Gpt& m, const plan::ExperimentPlan& p, const std::vector<task::Problem>& problems,
                      int batch) {
  task::Tokenizer tok(p.task);
  eval::DecodeOptions o = eval::decodeOptionsFor(p);
  o.batch = batch;
  const auto fast = eval::greedyDecode(m, tok, problems, o);
  const auto slow = eval::greedyDecodeReference(m, tok, problems, o);
  ASSERT_EQ(fast.size(), problems.size());
  ASSERT_EQ(slow.size(), problems.size());
  std::set<int64_t> seen;
  for (size_t i = 0; i < problems.size(); ++i) {
    EXPECT_EQ(fast[i], slow[i]) << "problem " << i;
    ASSERT_FALSE(fast[i].empty());
    EXPECT_LE(static_cast<int>(fast[i].size()), tok.maxAnswerTokens(problems[i]));
    seen.insert(fast[i].begin(), fast[i].end());
  }
  EXPECT_GE(seen.size(), 3u) << "the random model should not be constant";
  // Every problem ends at <eos> or at its token budget.
  for (size_t i = 0; i < problems.size(); ++i) {
    if (fast[i].back() != tok.vocabulary().eos()) {
      EXPECT_EQ(static_cast<int>(fast[i].size()), tok.maxAnswerTokens(problems[i]));
    }
  }
}

TEST(EvalGreedy, CacheMatchesReferenceWith2dRotations) {
  plan::ExperimentPlan p = testing::tinyAdditionPlan();
  p.task.train_max_digits = 6;
  model::Gpt m = randomModel(p, 11);
  expectSameTokens(m, p, mixedProblems(p.task, 40, 1), 7);
}

TEST(EvalGreedy, CacheMatchesReferenceWithScoreTermsStretchAndSinks) {
  plan::ExperimentPlan p = testing::tinyAdditionPlan();
  p.model.precision = plan::Precision::F64;
  p.task.train_max_digits = 6;
  p.task.operands = 3;
  testing::addLearnedDecay(p, 0.1);
  plan::Distribution d;
  d.kind = plan::Distribution::Kind::Uniform;
  d.a = 0.5;
  d.b = 2.0;
  d.eval_value = 1.5;
  p.attention.rotations[1].stretch = d;
  plan::KeyZeroing sink;
  sink.kinds.insert(plan::TokenKind::Separator);
  sink.pair_begin = 0;
  sink.pair_end = 4;
  p.attention.key_zeroing.push_back(sink);
  model::Gpt m = randomModel(p, 12);
  expectSameTokens(m, p, mixedProblems(p.task, 30, 2), 30);
}

TEST(EvalGreedy, CacheMatchesReferenceOnOneTestLength) {
  plan::ExperimentPlan p = testing::tinyAdditionPlan();
  model::Gpt m = randomModel(p, 13);
  expectSameTokens(m, p, task::testProblems(p.task, 8), 90);
}

TEST(EvalGreedy, RandomisedChannelsGetOneMapPerProblemInBothDecoders) {
  // Both decoders read each problem's evaluation labels (prompt and emitted
  // tokens alike), and a problem's answer does not depend on its batch.
  plan::ExperimentPlan p = testing::tinyAdditionPlan();
  p.task.train_max_digits = 6;
  p.attention.sampled_channels = {{plan::Channel::Column, 64, ""}, {plan::Channel::Position, 200, ""}};
  model::Gpt m = randomModel(p, 14);
  const auto problems = mixedProblems(p.task, 24, 3);
  expectSameTokens(m, p, problems, 5);
  task::Tokenizer tok(p.task);
  eval::DecodeOptions o = eval::decodeOptionsFor(p);
  ASSERT_EQ(o.sampled_channels.size(), 2u);
  o.batch = 24;
  const auto together = eval::greedyDecode(m, tok, problems, o);
  o.batch = 1;
  EXPECT_EQ(eval::greedyDecode(m, tok, problems, o), together);
  // Without the labels the same model answers otherwise: they do reach it.
  o.sampled_channels.clear();
  EXPECT_NE(eval::greedyDecode(m, tok, problems, o), together);

  // The labels themselves: sorted, distinct, in range, one per value of the
  // full sequence; the same for the same problem, others for another.
  const task::ChannelLabels a = task::evaluationLabels(p.attention.sampled_channels, tok, problems[0]);
  const task::ChannelLabels again = task::evaluationLabels(p.attention.sampled_channels, tok, problems[0]);
  const task::ChannelLabels b = task::evaluationLabels(p.attention.sampled_channels, tok, problems[1]);
  ASSERT_EQ(a.maps.size(), 2u);
  EXPECT_EQ(a.maps, again.maps);
  EXPECT_NE(a.maps, b.maps);
  const task::Sequence full = tok.encode(problems[0]);
  const auto& positions = a.maps[1].second;
  EXPECT_EQ(positions.size(), full.tokens.size());
  for (size_t i = 1; i < positions.size(); ++i) EXPECT_LT(positions[i - 1], positions[i]);
  EXPECT_LT(positions.back(), 200);
  std::array<int64_t, plan::kChannelCount> token{1000, 2, 0, 0};  // a position past the sequence: last label
  a.apply(token);
  EXPECT_EQ(token[0], positions.back());
  EXPECT_EQ(token[1], a.maps[0].second[2]);

  // The teacher-forced probes feed the model the same labels and keep the
  // ordered values in their sequences (which they use to find digits).
  const probe::ForcedBatch fb = probe::forcedBatch(tok, problems, p.attention.sampled_channels);
  auto ch = fb.channels.accessor<int64_t, 3>();
  for (size_t b = 0; b < problems.size(); ++b) {
    const task::Sequence& seq = fb.sequences[b];
    EXPECT_EQ(seq.channels, tok.encode(problems[b]).channels);
    auto expected = seq.channels;
    task::evaluationLabels(p.attention.sampled_channels, tok, problems[b]).apply(expected);
    for (int c = 0; c < plan::kChannelCount; ++c)
      for (size_t t = 0; t < seq.tokens.size(); ++t)
        ASSERT_EQ(ch[c][static_cast<int64_t>(b)][static_cast<int64_t>(t)], expected[static_cast<size_t>(c)][t])
            << "problem " << b << " channel " << c << " token " << t;
  }
}

TEST(EvalGreedy, ScoringAcceptsExactlyTheRightAnswer) {
  const plan::ExperimentPlan p = testing::tinyAdditionPlan();
  task::Tokenizer tok(p.task);
  const task::Problem problem = task::testProblems(p.task, 4).front();
  const task::Sequence s = tok.encode(problem);
  eval::Generated right(s.tokens.begin() + s.prompt_length, s.tokens.end());
  ASSERT_EQ(right.back(), tok.vocabulary().eos());
  EXPECT_TRUE(eval::isCorrect(tok, problem, right));
  eval::Generated wrong = right;
  wrong[0] = (wrong[0] + 1) % 10;
  EXPECT_FALSE(eval::isCorrect(tok, problem, wrong));
  eval::Generated unfinished(right.begin(), right.end() - 1);
  EXPECT_FALSE(eval::isCorrect(tok, problem, unfinished));
}

TEST(EvalGreedy, EvaluateLengthsCountsEveryProblem) {
  plan::ExperimentPlan p = testing::tinyAdditionPlan();
  p.task.test_digits = {2, 5};
  p.task.problems_per_length = 20;
  p.eval.batch = 8;
  model::Gpt m = train::buildModel(p, 0, torch::kCPU);
  m->train();
  const auto r = eval::evaluateLengths(m, p, 4);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].digits, 2);
  EXPECT_EQ(r[1].digits, 5);
  for (const auto& x : r) {
    EXPECT_EQ(x.seed, 4u);
    EXPECT_EQ(x.total, 20);
    EXPECT_GE(x.correct, 0);
  }
  EXPECT_TRUE(m->is_training());  // restored
}

}  // namespace
}  // namespace posc
