// Tokenisation: rendered token strings and the position/column/row/kind
// channels for reversed and padded order, k digits per token, several
// operands; the decoder-side helpers (answerChannels, maxAnswerTokens,
// decodeAnswer) are checked against encode().
#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/task/task_test_util.h"

namespace posc::task {
namespace {

using plan::Channel;
using plan::DigitOrder;
using testing::channel;
using testing::makeTask;
using testing::problemOf;
using V = std::vector<int64_t>;

V positions(int n) {
  V v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

V answerPart(const Sequence& s) { return V(s.tokens.begin() + s.prompt_length, s.tokens.end()); }

TEST(Vocabulary, LayoutAndRendering) {
  Vocabulary one{1};
  EXPECT_EQ(one.digit_tokens(), 10);
  EXPECT_EQ(one.plus(), 10);
  EXPECT_EQ(one.equals(), 11);
  EXPECT_EQ(one.eos(), 12);
  EXPECT_EQ(one.pad(), 13);
  EXPECT_EQ(one.size(), 14);
  EXPECT_EQ(one.render(7), "7");
  EXPECT_EQ(one.render(10), "+");
  EXPECT_EQ(one.render(11), "=");
  EXPECT_EQ(one.render(12), "<eos>");
  EXPECT_EQ(one.render(13), "<pad>");
  EXPECT_THROW(one.render(14), std::out_of_range);

  Vocabulary three{3};
  EXPECT_EQ(three.size(), 1004);
  EXPECT_EQ(three.render(42), "042");
  EXPECT_EQ(three.render(0), "000");
  EXPECT_EQ(three.render(999), "999");
  EXPECT_EQ(three.render(1000), "+");
}

TEST(Tokenizer, ReversedTwoOperandsMatchesTheDocumentedTable) {
  const Tokenizer tok(makeTask(2, 1, DigitOrder::Reversed));
  const Sequence s = tok.encode(problemOf({"12345", "678"}));
  EXPECT_EQ(tok.render(s), "5 4 3 2 1 + 8 7 6 = 3 2 0 3 1 <eos>");
  EXPECT_EQ(s.tokens, (V{5, 4, 3, 2, 1, 10, 8, 7, 6, 11, 3, 2, 0, 3, 1, 12}));
  EXPECT_EQ(s.prompt_length, 10);
  EXPECT_EQ(channel(s, Channel::Position), positions(16));
  EXPECT_EQ(channel(s, Channel::Column), (V{1, 2, 3, 4, 5, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 0}));
  EXPECT_EQ(channel(s, Channel::Row), (V{0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(channel(s, Channel::Kind), (V{0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2}));
}

TEST(Tokenizer, PromptIsThePrefixOfTheFullSequence) {
  const Tokenizer tok(makeTask(2, 1, DigitOrder::Reversed));
  const Problem p = problemOf({"12345", "678"});
  const Sequence full = tok.encode(p);
  const Sequence prompt = tok.encodePrompt(p);
  EXPECT_EQ(tok.render(prompt), "5 4 3 2 1 + 8 7 6 =");
  EXPECT_EQ(prompt.prompt_length, 10);
  for (int c = 0; c < plan::kChannelCount; ++c)
    EXPECT_EQ(prompt.channels[c], V(full.channels[c].begin(), full.channels[c].begin() + 10));
}

TEST(Tokenizer, ThreeOperands) {
  const Tokenizer tok(makeTask(3, 1, DigitOrder::Reversed));
  const Sequence s = tok.encode(problemOf({"12", "345", "6"}));  // = 363
  EXPECT_EQ(tok.render(s), "2 1 + 5 4 3 + 6 = 3 6 3 <eos>");
  EXPECT_EQ(s.prompt_length, 9);
  EXPECT_EQ(channel(s, Channel::Position), positions(13));
  EXPECT_EQ(channel(s, Channel::Column), (V{1, 2, 0, 1, 2, 3, 0, 1, 0, 1, 2, 3, 0}));
  EXPECT_EQ(channel(s, Channel::Row), (V{0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 3, 3}));
  EXPECT_EQ(channel(s, Channel::Kind), (V{0, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 2}));
}

TEST(Tokenizer, ThreeDigitsPerTokenReversed) {
  const Tokenizer tok(makeTask(2, 3, DigitOrder::Reversed));
  const Sequence s = tok.encode(problemOf({"12345", "678"}));  // = 13023
  EXPECT_EQ(tok.render(s), "345 012 + 678 = 023 013 <eos>");
  EXPECT_EQ(s.tokens, (V{345, 12, 1000, 678, 1001, 23, 13, 1002}));
  EXPECT_EQ(s.prompt_length, 5);
  EXPECT_EQ(channel(s, Channel::Column), (V{1, 2, 0, 1, 0, 1, 2, 0}));
  EXPECT_EQ(channel(s, Channel::Row), (V{0, 0, 1, 1, 2, 2, 2, 2}));
  EXPECT_EQ(channel(s, Channel::Kind), (V{0, 0, 1, 0, 1, 0, 0, 2}));
}

TEST(Tokenizer, PaddedOrderCountsColumnsDown) {
  const Tokenizer tok(makeTask(2, 1, DigitOrder::Padded, 1, 10));
  const Sequence s = tok.encode(problemOf({"7650676663", "0149460439"}));
  EXPECT_EQ(tok.render(s),
            "7 6 5 0 6 7 6 6 6 3 + 0 1 4 9 4 6 0 4 3 9 = 0 7 8 0 0 1 3 7 1 0 2 <eos>");
  ASSERT_EQ(s.tokens.size(), 34u);
  EXPECT_EQ(s.prompt_length, 22);
  EXPECT_EQ(answerPart(s).size(), 12u);  // 11 answer digits and <eos>
  EXPECT_EQ(channel(s, Channel::Position), positions(34));
  EXPECT_EQ(channel(s, Channel::Column),
            (V{10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
               11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  V rows(34, 2);
  std::fill(rows.begin(), rows.begin() + 10, 0);
  std::fill(rows.begin() + 10, rows.begin() + 21, 1);
  EXPECT_EQ(channel(s, Channel::Row), rows);
  V kinds(34, 0);
  kinds[10] = kinds[21] = 1;
  kinds[33] = 2;
  EXPECT_EQ(channel(s, Channel::Kind), kinds);
}

TEST(Tokenizer, PaddedReversedWritesUnitsFirstAtTheFixedWidth) {
  // 12345 + 678 = 13023 at width 6: operands of 6 digits and an answer of 7,
  // units first; columns count up from 1 and <eos> has column 0.
  const Tokenizer tok(makeTask(2, 1, DigitOrder::PaddedReversed, 1, 6));
  const Problem p = problemOf({"12345", "678"});
  const Sequence s = tok.encode(p);
  EXPECT_EQ(tok.render(s), "5 4 3 2 1 0 + 8 7 6 0 0 0 = 3 2 0 3 1 0 0 <eos>");
  EXPECT_EQ(s.prompt_length, 14);
  EXPECT_EQ(channel(s, Channel::Column),
            (V{1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 7, 0}));
  EXPECT_EQ(tok.maxAnswerTokens(p), 8);
  for (int i = 0; i <= 7; ++i)
    EXPECT_EQ(tok.answerChannels(p, i)[static_cast<int>(Channel::Column)], i < 7 ? i + 1 : 0) << i;
  Number decoded;
  ASSERT_TRUE(tok.decodeAnswer(answerPart(s), decoded));
  EXPECT_EQ(decoded.toString(), "13023");
}

TEST(Tokenizer, PaddedShortProblemsArePaddedToTheTrainingWidth) {
  const Tokenizer tok(makeTask(2, 1, DigitOrder::Padded, 1, 4));
  EXPECT_EQ(tok.render(tok.encode(problemOf({"5", "17"}))),
            "0 0 0 5 + 0 0 1 7 = 0 0 0 2 2 <eos>");
}

TEST(Tokenizer, PaddedLongerThanTrainingUsesTheLongestOperand) {
  const Tokenizer tok(makeTask(2, 1, DigitOrder::Padded, 1, 4));
  const Sequence s = tok.encode(problemOf({"123456", "9"}));
  EXPECT_EQ(tok.render(s), "1 2 3 4 5 6 + 0 0 0 0 0 9 = 0 1 2 3 4 6 5 <eos>");
  EXPECT_EQ(channel(s, Channel::Column)[0], 6);
  EXPECT_EQ(channel(s, Channel::Column)[14], 7);
}

TEST(Tokenizer, PaddedThreeDigitsPerToken) {
  // W = 10 rounded up to 12 digits (4 tokens); the answer has 15 digits (5 tokens).
  const Tokenizer tok(makeTask(2, 3, DigitOrder::Padded, 1, 10));
  const Sequence s = tok.encode(problemOf({"12345", "678"}));
  EXPECT_EQ(tok.render(s), "000 000 012 345 + 000 000 000 678 = 000 000 000 013 023 <eos>");
  EXPECT_EQ(channel(s, Channel::Column), (V{4, 3, 2, 1, 0, 4, 3, 2, 1, 0, 5, 4, 3, 2, 1, 0}));
}

TEST(Tokenizer, PaddedManyOperandsWidenTheAnswerForTheCarry) {
  // Eleven 2-digit operands can sum to 1089: the answer needs W + 2 digits at k = 1.
  const std::vector<std::string> elevens(11, "99");
  const Tokenizer one(makeTask(11, 1, DigitOrder::Padded, 1, 2));
  const Problem p = problemOf(elevens);
  const Sequence s = one.encode(p);
  EXPECT_EQ(one.vocabulary().render(static_cast<int>(s.tokens.back())), "<eos>");
  V answer = answerPart(s);
  EXPECT_EQ(answer, (V{1, 0, 8, 9, 12}));
  EXPECT_EQ(one.maxAnswerTokens(p), 5);
  // At k = 2 one extra token already holds the two carry digits.
  const Tokenizer two(makeTask(11, 2, DigitOrder::Padded, 1, 2));
  EXPECT_EQ(answerPart(two.encode(p)), (V{10, 89, 102}));
  EXPECT_EQ(two.maxAnswerTokens(p), 3);
}

TEST(Tokenizer, MaxAnswerTokensBoundsTheWorstCase) {
  for (int operands : {2, 3, 11}) {
    for (int k : {1, 2, 3}) {
      for (DigitOrder order : {DigitOrder::Reversed, DigitOrder::Padded}) {
        const Tokenizer tok(makeTask(operands, k, order, 1, 8));
        for (int digits : {1, 7, 8, 13}) {
          const Problem worst = problemOf(std::vector<std::string>(operands, std::string(digits, '9')));
          const int needed = static_cast<int>(answerPart(tok.encode(worst)).size());
          EXPECT_GE(tok.maxAnswerTokens(worst), needed);
          if (order == DigitOrder::Padded) {
            EXPECT_EQ(tok.maxAnswerTokens(worst), needed);
          }
        }
      }
    }
  }
}

TEST(Tokenizer, AnswerChannelsAgreeWithEncode) {
  std::mt19937_64 rng(17);
  for (int operands : {2, 3, 12}) {
    for (int k : {1, 2, 3}) {
      for (DigitOrder order : {DigitOrder::Reversed, DigitOrder::Padded}) {
        const plan::TaskPlan task = makeTask(operands, k, order, 1, 9);
        const Tokenizer tok(task);
        for (int trial = 0; trial < 30; ++trial) {
          const Problem p = trial % 2 == 0 ? sampleProblem(task, rng) : sampleProblem(task, 14, rng);
          const Sequence s = tok.encode(p);
          const int answer_tokens = static_cast<int>(s.tokens.size()) - s.prompt_length - 1;
          for (int i = 0; i < answer_tokens; ++i) {
            const auto c = tok.answerChannels(p, i);
            for (int ch = 0; ch < plan::kChannelCount; ++ch)
              ASSERT_EQ(c[ch], s.channels[ch][s.prompt_length + i])
                  << plan::channelName(static_cast<Channel>(ch)) << " of answer token " << i;
          }
          const auto eos = tok.answerChannels(p, answer_tokens);
          const size_t at = s.tokens.size() - 1;
          EXPECT_EQ(eos[static_cast<int>(Channel::Position)], channel(s, Channel::Position)[at]);
          EXPECT_EQ(eos[static_cast<int>(Channel::Row)], channel(s, Channel::Row)[at]);
          EXPECT_EQ(eos[static_cast<int>(Channel::Kind)], 0);
          if (order == DigitOrder::Padded) {
            EXPECT_EQ(eos[static_cast<int>(Channel::Column)], 0);
          }
        }
      }
    }
  }
}

TEST(Tokenizer, AnswerChannelsIgnoreTheAnswer) {
  const Tokenizer tok(makeTask(2, 1, DigitOrder::Reversed));
  Problem p = problemOf({"12345", "678"});
  const auto before = tok.answerChannels(p, 3);
  p.answer = Number::fromString("1");
  EXPECT_EQ(tok.answerChannels(p, 3), before);
  EXPECT_EQ(before, (std::array<int64_t, plan::kChannelCount>{13, 4, 2, 0}));
}

TEST(Tokenizer, DecodeAnswerRoundTrips) {
  std::mt19937_64 rng(23);
  for (int k : {1, 2, 3}) {
    for (DigitOrder order : {DigitOrder::Reversed, DigitOrder::Padded}) {
      const plan::TaskPlan task = makeTask(3, k, order, 1, 12);
      const Tokenizer tok(task);
      for (int trial = 0; trial < 40; ++trial) {
        const Problem p = sampleProblem(task, rng);
        V generated = answerPart(tok.encode(p));
        generated.push_back(tok.vocabulary().pad());  // anything after <eos> is ignored
        generated.push_back(tok.vocabulary().plus());
        Number decoded;
        ASSERT_TRUE(tok.decodeAnswer(generated, decoded));
        EXPECT_EQ(decoded, p.answer);
      }
    }
  }
}

TEST(Tokenizer, DecodeAnswerStripsPaddingZeros) {
  const Tokenizer tok(makeTask(2, 1, DigitOrder::Padded, 1, 10));
  Number decoded;
  ASSERT_TRUE(tok.decodeAnswer(V{0, 7, 8, 0, 0, 1, 3, 7, 1, 0, 2, 12}, decoded));
  EXPECT_EQ(decoded.toString(), "7800137102");
  ASSERT_TRUE(tok.decodeAnswer(V{0, 0, 12}, decoded));
  EXPECT_EQ(decoded.toString(), "0");
}

TEST(Tokenizer, DecodeAnswerRejectsMalformedOutput) {
  const Tokenizer tok(makeTask(2, 1, DigitOrder::Reversed));
  const Vocabulary& v = tok.vocabulary();
  Number decoded = Number::fromString("42");
  EXPECT_FALSE(tok.decodeAnswer(V{3, 2, 0, 3, 1}, decoded));              // no <eos>
  EXPECT_FALSE(tok.decodeAnswer(V{3, v.plus(), 0, v.eos()}, decoded));   // separator
  EXPECT_FALSE(tok.decodeAnswer(V{3, v.pad(), v.eos()}, decoded));       // padding
  EXPECT_FALSE(tok.decodeAnswer(V{3, 99, v.eos()}, decoded));            // out of vocabulary
  EXPECT_FALSE(tok.decodeAnswer(V{v.eos()}, decoded));                   // empty answer
  EXPECT_FALSE(tok.decodeAnswer(V{}, decoded));
  EXPECT_EQ(decoded.toString(), "42");  // untouched on failure
  ASSERT_TRUE(tok.decodeAnswer(V{3, 2, 0, 3, 1, v.eos()}, decoded));
  EXPECT_EQ(decoded.toString(), "13023");
}

TEST(Tokenizer, RejectsAProblemWithTheWrongOperandCount) {
  const Tokenizer tok(makeTask(3, 1, DigitOrder::Reversed));
  EXPECT_THROW(tok.encode(problemOf({"1", "2"})), std::invalid_argument);
}

TEST(Tokenizer, PaddedWidthPadsShortTrainingOperandsToTheFullWidth) {
  // A curriculum's first stage: operands of up to 3 digits written at the
  // final stage's width of 6, so every place keeps its position.
  plan::TaskPlan task = makeTask(2, 1, DigitOrder::PaddedReversed, 1, 3);
  task.padded_width = 6;
  const Tokenizer tok(task);
  const Sequence s = tok.encode(problemOf({"123", "45"}));
  EXPECT_EQ(tok.render(s), "3 2 1 0 0 0 + 5 4 0 0 0 0 = 8 6 1 0 0 0 0 <eos>");
  EXPECT_EQ(s.prompt_length, 14);
  // The same problem under the full width's own task is the same sequence.
  const Tokenizer full(makeTask(2, 1, DigitOrder::PaddedReversed, 1, 6));
  EXPECT_EQ(full.render(full.encode(problemOf({"123", "45"}))), tok.render(s));
}

}  // namespace
}  // namespace posc::task
