// Batches: right padding with <pad>, next-token targets, the loss mask over
// answer tokens and <eos>, channels of padding, and sampled training batches.
#include <gtest/gtest.h>

#include <set>

#include "tests/task/task_test_util.h"

namespace posc::task {
namespace {

using plan::Channel;
using plan::DigitOrder;
using testing::makeTask;
using testing::problemOf;
using V = std::vector<int64_t>;

template <typename T>
std::vector<T> rowOf(const std::vector<T>& cells, const Batch& b, int r) {
  return std::vector<T>(cells.begin() + r * b.length, cells.begin() + (r + 1) * b.length);
}

V channelRow(const Batch& b, Channel c, int r) { return rowOf(b.channels[static_cast<int>(c)], b, r); }

TEST(MakeBatch, PadsTargetsAndMasks) {
  const Tokenizer tok(makeTask(2, 1, DigitOrder::Reversed));
  const Batch b = makeBatch({tok.encode(problemOf({"12345", "678"})), tok.encode(problemOf({"1", "2"}))},
                            tok.vocabulary());
  ASSERT_EQ(b.batch, 2);
  ASSERT_EQ(b.length, 16);
  ASSERT_EQ(b.tokens.size(), 32u);
  ASSERT_EQ(b.targets.size(), 32u);
  ASSERT_EQ(b.loss_mask.size(), 32u);
  for (const auto& c : b.channels) ASSERT_EQ(c.size(), 32u);

  // Row 0: "5 4 3 2 1 + 8 7 6 = 3 2 0 3 1 <eos>", exactly the batch length.
  EXPECT_EQ(rowOf(b.tokens, b, 0), (V{5, 4, 3, 2, 1, 10, 8, 7, 6, 11, 3, 2, 0, 3, 1, 12}));
  EXPECT_EQ(rowOf(b.targets, b, 0), (V{4, 3, 2, 1, 10, 8, 7, 6, 11, 3, 2, 0, 3, 1, 12, 13}));
  EXPECT_EQ(rowOf(b.loss_mask, b, 0),
            (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0}));

  // Row 1: "1 + 2 = 3 <eos>" then ten <pad>.
  EXPECT_EQ(rowOf(b.tokens, b, 1), (V{1, 10, 2, 11, 3, 12, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13}));
  EXPECT_EQ(rowOf(b.targets, b, 1), (V{10, 2, 11, 3, 12, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13}));
  EXPECT_EQ(rowOf(b.loss_mask, b, 1),
            (std::vector<uint8_t>{0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(MakeBatch, ChannelsOfPadding) {
  const Tokenizer tok(makeTask(2, 1, DigitOrder::Reversed));
  const Batch b = makeBatch({tok.encode(problemOf({"12345", "678"})), tok.encode(problemOf({"1", "2"}))},
                            tok.vocabulary());
  V positions(16);
  for (int t = 0; t < 16; ++t) positions[t] = t;
  EXPECT_EQ(channelRow(b, Channel::Position, 1), positions);
  EXPECT_EQ(channelRow(b, Channel::Column, 1), (V{1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(channelRow(b, Channel::Row, 1), (V{0, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(channelRow(b, Channel::Kind, 1), (V{0, 1, 0, 1, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(channelRow(b, Channel::Column, 0), (V{1, 2, 3, 4, 5, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 0}));
}

TEST(MakeBatch, MaskedTargetsAreExactlyTheAnswerAndEos) {
  const plan::TaskPlan task = makeTask(3, 2, DigitOrder::Padded, 1, 9);
  const Tokenizer tok(task);
  std::mt19937_64 rng(4);
  std::vector<Sequence> sequences;
  for (int i = 0; i < 8; ++i) sequences.push_back(tok.encode(sampleProblem(task, rng)));
  const Batch b = makeBatch(sequences, tok.vocabulary());
  for (int r = 0; r < b.batch; ++r) {
    const Sequence& s = sequences[r];
    V masked;
    for (int t = 0; t < b.length; ++t)
      if (b.loss_mask[r * b.length + t]) masked.push_back(b.targets[r * b.length + t]);
    EXPECT_EQ(masked, V(s.tokens.begin() + s.prompt_length, s.tokens.end()));
  }
}

TEST(MakeBatch, EmptyInputGivesAnEmptyBatch) {
  const Batch b = makeBatch({}, Vocabulary{1});
  EXPECT_EQ(b.batch, 0);
  EXPECT_EQ(b.length, 0);
  EXPECT_TRUE(b.tokens.empty());
}

// Rebuilds the operands of a reversed k = 1 row from its prompt tokens.
std::vector<Number> operandsOfRow(const V& tokens, const Vocabulary& v) {
  std::vector<Number> operands(1);
  for (int64_t token : tokens) {
    if (token == v.equals()) break;
    if (token == v.plus()) operands.emplace_back();
    else operands.back().digits.push_back(static_cast<uint8_t>(token));
  }
  return operands;
}

TEST(SampleTrainingBatch, RowsAreCorrectAdditionProblems) {
  const plan::TaskPlan task = makeTask(2, 1, DigitOrder::Reversed, 1, 16);
  const Tokenizer tok(task);
  std::mt19937_64 rng(8);
  const Batch b = sampleTrainingBatch(task, tok, 64, rng);
  ASSERT_EQ(b.batch, 64);
  ASSERT_EQ(b.tokens.size(), static_cast<size_t>(64 * b.length));
  std::set<int64_t> lengths;
  for (int r = 0; r < b.batch; ++r) {
    const V tokens = rowOf(b.tokens, b, r);
    V generated;
    for (int t = 0; t < b.length; ++t)
      if (b.loss_mask[r * b.length + t]) generated.push_back(b.targets[r * b.length + t]);
    Number answer;
    ASSERT_TRUE(tok.decodeAnswer(generated, answer));
    const std::vector<Number> operands = operandsOfRow(tokens, tok.vocabulary());
    ASSERT_EQ(operands.size(), 2u);
    for (const Number& n : operands) {
      EXPECT_GE(n.length(), 1);
      EXPECT_LE(n.length(), 16);
    }
    EXPECT_EQ(answer, sum(operands));
    lengths.insert(std::count(tokens.begin(), tokens.end(), tok.vocabulary().pad()));
  }
  EXPECT_GT(lengths.size(), 1u);  // rows of different lengths were padded
  EXPECT_TRUE(lengths.count(0));  // and the longest row fills the batch
}

TEST(SampleTrainingBatch, SameSeedSameBatch) {
  const plan::TaskPlan task = makeTask(3, 2, DigitOrder::Padded, 2, 12);
  const Tokenizer tok(task);
  std::mt19937_64 a(31), c(31);
  const Batch first = sampleTrainingBatch(task, tok, 16, a);
  const Batch second = sampleTrainingBatch(task, tok, 16, c);
  EXPECT_EQ(first.tokens, second.tokens);
  EXPECT_EQ(first.loss_mask, second.loss_mask);
  EXPECT_EQ(first.channels, second.channels);
  // Padded training problems all share one shape: no <pad> anywhere.
  EXPECT_EQ(std::count(first.tokens.begin(), first.tokens.end(), tok.vocabulary().pad()), 0);
}

}  // namespace
}  // namespace posc::task
