// The document protocol's greedy answerer: the KV-cache decoder emits the
// tokens a full forward pass per token emits, stops at <eos> or the longest
// answer, times prefill and generation separately and reports its cache;
// the protocol's factors come from the plan; a document batch trains.
#include "runtime/eval/documents.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runtime/longctx/sequence.h"
#include "runtime/model/batch.h"
#include "runtime/train/sampling.h"
#include "runtime/train/trainer.h"
#include "tests/runtime/train_test_plans.h"

namespace posc {
namespace {

plan::ExperimentPlan documentPlan() {
  plan::ExperimentPlan p = testing::tinyAdditionPlan();
  p.name = "documents";
  p.task.kind = plan::TaskKind::Documents;
  p.task.documents.tasks = {plan::DocumentTask::Retrieval, plan::DocumentTask::Composition};
  p.task.documents.train_min_length = 40;
  p.task.documents.train_max_length = 64;
  p.task.documents.train_distractors = {0, 2};
  p.attention.rotations.resize(1);
  p.attention.rotations[0].channel = plan::Channel::Position;
  p.attention.rotations[0].pair_end = 8;
  p.eval.documents.tasks = p.task.documents.tasks;
  p.eval.documents.lengths = {64, 100};
  p.eval.documents.depths = {0.25, 1};
  p.eval.documents.distractors = {1};
  p.eval.documents.problems = 5;
  p.eval.batch = 3;
  return p;
}

// Greedy tokens from one full forward pass per emitted token.
std::vector<int32_t> referenceAnswer(model::Gpt& model, const longctx::Document& doc, int question) {
  task::Sequence s = longctx::encode(doc, question, false);
  std::vector<int32_t> out;
  for (int i = 0; i < longctx::kMaxAnswerTokens; ++i) {
    const int64_t L = static_cast<int64_t>(s.tokens.size());
    torch::Tensor tokens = torch::tensor(s.tokens).view({1, L});
    torch::Tensor channels = torch::empty({plan::kChannelCount, 1, L}, torch::kInt64);
    for (int c = 0; c < plan::kChannelCount; ++c) channels[c][0].copy_(torch::tensor(s.channels[static_cast<size_t>(c)]));
    const int32_t next = static_cast<int32_t>(model->forward(tokens, channels).select(1, -1).argmax(-1).item<int64_t>());
    out.push_back(next);
    if (next == longctx::token::kEos) break;
    const auto ch = longctx::answerChannels(doc, question, i, next);
    s.tokens.push_back(next);
    for (int c = 0; c < plan::kChannelCount; ++c) s.channels[static_cast<size_t>(c)].push_back(ch[static_cast<size_t>(c)]);
  }
  return out;
}

TEST(DocumentAnswerer, MatchesAFullForwardPassPerToken) {
  const plan::ExperimentPlan p = documentPlan();
  model::Gpt model = train::buildModel(p, 3, torch::kCPU);
  model->eval();
  // Documents of two lengths, and composition's shorter control questions.
  std::vector<longctx::Document> docs;
  for (int length : {64, 100}) {
    longctx::DocumentSpec spec;
    spec.task = longctx::TaskType::Composition;
    spec.length = length;
    spec.distractors = 2;
    spec.seed = static_cast<uint64_t>(length);
    docs.push_back(longctx::generate(spec));
  }
  std::vector<longctx::Prompt> prompts;
  for (const auto& d : docs)
    for (int q = 0; q < static_cast<int>(d.questions.size()); ++q) prompts.push_back({&d, q});
  ASSERT_EQ(prompts.size(), 6u);
  torch::NoGradGuard no_grad;
  const longctx::Answers answers = eval::greedyAnswerer(model, eval::decodeOptionsFor(p))(prompts);
  ASSERT_EQ(answers.generated.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& got = answers.generated[i];
    EXPECT_EQ(got, referenceAnswer(model, *prompts[i].document, prompts[i].question)) << "prompt " << i;
    EXPECT_GE(got.size(), 1u);
    EXPECT_LE(got.size(), static_cast<size_t>(longctx::kMaxAnswerTokens));
  }
  EXPECT_GT(answers.prefill_seconds, 0.0);
  EXPECT_GT(answers.generation_seconds, 0.0);
  // The largest group is the two control questions of the 100-token
  // document (99-token prompts): keys and values of 2 layers, 2 rows, 4 heads
  // of 16, room for 99 + 3 tokens, float32.
  EXPECT_EQ(answers.peak_cache_bytes, int64_t{2} * 2 * 2 * 4 * (99 + longctx::kMaxAnswerTokens) * 16 * 4);
  EXPECT_FALSE(model->is_training());
}

TEST(DocumentAnswerer, ProtocolFactorsComeFromThePlan) {
  const plan::ExperimentPlan p = documentPlan();
  const longctx::Factors f = eval::protocolFactors(p);
  EXPECT_EQ(f.lengths, (std::vector<int>{64, 100}));
  EXPECT_EQ(f.depths, (std::vector<double>{0.25, 1}));
  EXPECT_EQ(f.distractors, (std::vector<int>{1}));
  EXPECT_EQ(f.problems, 5);
  EXPECT_EQ(f.train_max_length, 64);
  EXPECT_EQ(f.seed, p.task.test_seed);
  EXPECT_EQ(eval::protocolFactors(p, true).lengths, (std::vector<int>{64}));

  model::Gpt model = train::buildModel(p, 0, torch::kCPU);
  const auto cells = eval::evaluateDocuments(model, p);
  ASSERT_EQ(cells.size(), 2u * 2 * 2 * 1);
  for (const auto& c : cells) {
    EXPECT_EQ(c.documents, 5);
    EXPECT_EQ(c.correct + c.abstained + c.unsupported + c.wrong, 5);
    EXPECT_EQ(c.regression, c.cell.length == 64);
  }
}

TEST(DocumentTraining, TheLossFallsOnDocuments) {
  plan::ExperimentPlan p = documentPlan();
  p.task.documents.tasks = {plan::DocumentTask::Retrieval};
  p.train.steps = 60;
  p.train.batch = 16;
  p.train.log_every = 10;
  model::Gpt model = train::buildModel(p, 0, torch::kCPU);
  EXPECT_EQ(model->named_parameters()["tok_emb.weight"].size(0), longctx::kModelVocabulary);
  std::mt19937_64 rng = train::dataRng(0);
  const task::Batch probe = longctx::sampleTrainingBatch(p.task.documents, 64, rng);
  auto loss = [&] {
    torch::NoGradGuard no_grad;
    return train::trainingLoss(model, model::toTensors(probe, torch::kCPU), torch::Tensor(), false).item<double>();
  };
  const double before = loss();
  train::TrainContext ctx;
  ctx.progress = train::TrainContext::Progress::None;
  train::trainModel(model, p, ctx);
  const double after = loss();
  // The answer is one of 64 values or <none>: log(310) = 5.7 at initialisation;
  // 60 steps learn at least the answer's form (a value, then <eos>).
  EXPECT_LT(after, before - 1.0) << "before " << before << " after " << after;
}

}  // namespace
}  // namespace posc
