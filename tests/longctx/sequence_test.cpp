// Documents as model input: the channels of every token, the answers (the
// drawn question's and the reviews') as the only trained positions, each the
// one the text determines, the answer channels a decoder feeds back, a
// reproducible training stream, and the evidence share a probe reads.
#include "runtime/longctx/sequence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <map>
#include <random>

#include "runtime/longctx/retrieval_head.h"
#include "runtime/longctx/statements.h"
#include "tests/longctx/text_checker.h"

namespace posc::longctx {
namespace {

constexpr size_t at(plan::Channel c) { return static_cast<size_t>(c); }

Document compositionDocument() {
  DocumentSpec spec;
  spec.task = TaskType::Composition;
  spec.length = 96;
  spec.distractors = 3;
  spec.depth = 0.4;
  spec.template_index = 1;
  spec.seed = 11;
  return generate(spec);
}

TEST(DocumentSequence, ChannelsFollowTheDocument) {
  const Document doc = compositionDocument();
  for (int q = 0; q < static_cast<int>(doc.questions.size()); ++q) {
    const task::Sequence s = encode(doc, q, true);
    const std::vector<int32_t> prompt = doc.prompt(q);
    const std::vector<int32_t> segments = doc.segments(q);
    const auto& answer = doc.questions[static_cast<size_t>(q)].answer;
    ASSERT_EQ(s.prompt_length, static_cast<int>(prompt.size()));
    ASSERT_EQ(s.tokens.size(), prompt.size() + answer.size());
    EXPECT_EQ(s.tokens.back(), token::kEos);
    const int64_t question_segment = static_cast<int64_t>(doc.statements.size()) + 1;
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      EXPECT_EQ(s.channels[at(plan::Channel::Position)][t], static_cast<int64_t>(t));
      EXPECT_EQ(s.channels[at(plan::Channel::Column)][t], 0);
      EXPECT_EQ(s.channels[at(plan::Channel::Row)][t], 0);
      const int64_t segment = t < prompt.size() ? segments[t] : question_segment;
      EXPECT_EQ(s.channels[at(plan::Channel::Segment)][t], segment) << "token " << t;
      const TokenClass c = tokenClass(static_cast<int32_t>(s.tokens[t]));
      const plan::TokenKind want = c == TokenClass::Marker    ? plan::TokenKind::Separator
                                   : c == TokenClass::Special ? plan::TokenKind::Special
                                                              : plan::TokenKind::Digit;
      EXPECT_EQ(s.channels[at(plan::Channel::Kind)][t], static_cast<int64_t>(want));
    }
    // The statements are numbered 1, 2, ... in order; filler is segment 0.
    for (size_t i = 0; i < doc.statements.size(); ++i)
      EXPECT_EQ(s.channels[at(plan::Channel::Segment)][static_cast<size_t>(doc.statements[i].begin)],
                static_cast<int64_t>(i + 1));
    // A decoder's channels for the answer tokens are the training sequence's.
    for (size_t i = 0; i < answer.size(); ++i) {
      const auto c = answerChannels(doc, q, static_cast<int>(i), answer[i]);
      for (int k = 0; k < plan::kChannelCount; ++k)
        EXPECT_EQ(c[static_cast<size_t>(k)], s.channels[static_cast<size_t>(k)][prompt.size() + i]) << "channel " << k;
    }
  }
  // Without the answer: the prompt alone.
  EXPECT_EQ(encode(doc, 0, false).tokens.size(), doc.prompt(0).size());
}

// Every question of a training row (the drawn one and the reviews) is
// answered as the independent reader derives it from the row's context, and
// the loss covers exactly those answers and their <eos>.
TEST(DocumentSequence, TheLossCoversEveryAnswerTheTextDetermines) {
  plan::DocumentTaskPlan task;
  task.tasks = {TaskType::Retrieval, TaskType::Composition, TaskType::Contradiction, TaskType::Order};
  task.train_min_length = 60;
  task.train_max_length = 90;
  task.train_distractors = {0, 2, 3};
  task.absent_share = 0.3;
  ASSERT_EQ(checkTrainingSpecs(task), "");
  std::mt19937_64 rng(5);
  const task::Batch b = sampleTrainingBatch(task, 24, rng);
  ASSERT_EQ(b.batch, 24);
  int reviews = 0, absent = 0;
  for (int r = 0; r < b.batch; ++r) {
    const size_t base = static_cast<size_t>(r) * static_cast<size_t>(b.length);
    std::vector<int32_t> row(b.tokens.begin() + static_cast<long>(base), b.tokens.begin() + static_cast<long>(base) + b.length);
    // The context: everything before the first Q:.
    const size_t q0 = static_cast<size_t>(std::find(row.begin(), row.end(), token::kQuery) - row.begin());
    ASSERT_LT(q0, row.size());
    EXPECT_LE(static_cast<int>(q0) + 4, task.train_max_length);
    const std::vector<int32_t> context(row.begin(), row.begin() + static_cast<long>(q0));
    int questions = 0;
    std::vector<uint8_t> want(static_cast<size_t>(b.length), 0);
    for (size_t q = q0; q < row.size() && row[q] == token::kQuery;) {
      // A question is Q:, its words, then its keys (two for order, which
      // asks `first`, one otherwise); the answer follows the last key, whose
      // offset is a.
      size_t a = q + 1;
      while (a < row.size() && tokenClass(row[a]) != TokenClass::Key) ++a;
      const bool order = std::find(row.begin() + static_cast<long>(q), row.begin() + static_cast<long>(a),
                                   token::kFirst) != row.begin() + static_cast<long>(a);
      a += order ? 3 : 1;
      ASSERT_LT(a, row.size());
      std::vector<int32_t> prompt = context;
      prompt.insert(prompt.end(), row.begin() + static_cast<long>(q), row.begin() + static_cast<long>(a) + 1);
      const size_t eos = static_cast<size_t>(std::find(row.begin() + static_cast<long>(a), row.end(), token::kEos) - row.begin());
      ASSERT_LT(eos, row.size());
      const std::vector<int32_t> answer(row.begin() + static_cast<long>(a) + 1, row.begin() + static_cast<long>(eos) + 1);
      EXPECT_EQ(render(answer), testing::deriveAnswer(testing::readDocument(render(prompt)))) << render(prompt);
      for (size_t t = a; t < eos; ++t) want[t] = 1;  // position t predicts token t + 1
      absent += answer.front() == token::kNone ? 1 : 0;
      ++questions;
      q = eos + 1;
    }
    reviews += questions - 1;
    const std::vector<uint8_t> mask(b.loss_mask.begin() + static_cast<long>(base),
                                    b.loss_mask.begin() + static_cast<long>(base) + b.length);
    EXPECT_EQ(mask, want) << "row " << r;
  }
  EXPECT_GT(reviews, 24);  // most statements are reviewed
  EXPECT_GT(absent, 0);    // about 0.3 of the retrieval and composition rows

  // The same generator state gives the same batch.
  std::mt19937_64 again(5);
  const task::Batch c = sampleTrainingBatch(task, 24, again);
  EXPECT_EQ(b.tokens, c.tokens);
  EXPECT_EQ(b.channels, c.channels);
  EXPECT_EQ(b.loss_mask, c.loss_mask);
}

TEST(DocumentSequence, ReviewsAskStatementsWithAValueDrawnWithReplacement) {
  DocumentSpec spec;
  spec.length = 120;
  spec.distractors = 4;
  spec.template_index = 2;
  spec.seed = 8;
  const Document doc = generate(spec);
  std::mt19937_64 rng(1);
  std::vector<int> answers;
  const task::Sequence s = trainingSequence(doc, 0, true, rng, &answers);
  // The drawn question's value and <eos>, then one review (a value and <eos>)
  // per statement (all five hold a value under their own key).
  ASSERT_EQ(doc.statements.size(), 5u);
  EXPECT_EQ(answers.size(), 2u * (1 + doc.statements.size()));
  // Each review asks about a statement of the document; drawn with
  // replacement, over 200 rows every statement is asked and some twice in a row.
  std::map<std::vector<int32_t>, int> asked;
  int repeats = 0;
  for (int row = 0; row < 200; ++row) {
    std::vector<int> at_answers;
    const task::Sequence r = trainingSequence(doc, 0, true, rng, &at_answers);
    std::vector<int32_t> previous;
    for (size_t i = 2; i < at_answers.size(); i += 2) {
      const size_t value = static_cast<size_t>(at_answers[i]);
      // The review's key: the two tokens before its answer.
      const std::vector<int32_t> key(r.tokens.begin() + static_cast<long>(value) - 2,
                                     r.tokens.begin() + static_cast<long>(value));
      ++asked[key];
      repeats += key == previous ? 1 : 0;
      previous = key;
      bool stated = false;
      for (const Statement& st : doc.statements)
        stated |= keyTokens(st.key) == key && std::find(doc.context.begin() + st.begin, doc.context.begin() + st.end,
                                                        r.tokens[value]) != doc.context.begin() + st.end;
      EXPECT_TRUE(stated) << render(key) << " " << renderToken(r.tokens[value]);
    }
  }
  EXPECT_EQ(asked.size(), doc.statements.size());
  EXPECT_GT(repeats, 0);
  const task::Sequence lone = trainingSequence(doc, 0, false, rng);
  EXPECT_EQ(lone.tokens, encode(doc, 0, true).tokens);
  for (size_t t = lone.tokens.size(); t < s.tokens.size(); ++t)
    EXPECT_EQ(s.channels[at(plan::Channel::Segment)][t], static_cast<int64_t>(doc.statements.size()) + 1);
}

TEST(DocumentSequence, TrainingDrawsStayInTheDeclaredRanges) {
  plan::DocumentTaskPlan task;
  task.tasks = {TaskType::Order};
  task.train_min_length = 50;
  task.train_max_length = 60;
  task.train_distractors = {1, 3};
  task.templates = 2;
  std::mt19937_64 rng(9);
  for (int i = 0; i < 200; ++i) {
    const DocumentSpec spec = trainingSpec(task, rng);
    EXPECT_EQ(spec.task, TaskType::Order);
    EXPECT_GE(spec.length, 50);
    EXPECT_LE(spec.length, 60);
    EXPECT_TRUE(spec.distractors == 1 || spec.distractors == 3);
    EXPECT_LT(spec.template_index, 2);
    EXPECT_GE(spec.depth, 0.0);
    EXPECT_LE(spec.depth, 1.0);
    EXPECT_TRUE(spec.evidence_present);
  }
}

TEST(DocumentSequence, TrainingSpecsThatCannotBeLaidOutAreNamed) {
  plan::DocumentTaskPlan task;
  task.train_min_length = 40;
  task.train_max_length = 128;
  task.train_distractors = {0, 4};
  // The longest template: <bos>, 5 statements "set kx ky to v ;" of 6 tokens, "Q: get kx ky" (4),
  // and 5 tokens beside the evidence that may be too few for a distractor.
  EXPECT_EQ(checkTrainingSpecs(task), "");
  task.train_min_length = 39;
  const std::string message = checkTrainingSpecs(task);
  EXPECT_NE(message.find("a retrieval document with 4 distractors needs at least 40 tokens"), std::string::npos)
      << message;
  EXPECT_NE(message.find("task.train_min_length is 39"), std::string::npos) << message;
}

TEST(EvidenceShare, EqualsTheAnalyticHeadsEvidenceMass) {
  for (int n : {1, 4, 9}) {
    DocumentSpec spec;
    spec.length = 400;
    spec.distractors = n;
    spec.seed = 40 + static_cast<uint64_t>(n);
    const Document doc = generate(spec);
    const HeadAttention head = retrievalHeadAttention(doc, 1.5);
    EXPECT_NEAR(evidenceShare(doc, head.weights), head.evidence_mass, 1e-12);
  }
}

TEST(EvidenceShare, SetsAsideMassOutsideStatements) {
  DocumentSpec spec;
  spec.length = 120;
  spec.distractors = 2;
  spec.seed = 3;
  const Document doc = generate(spec);
  ASSERT_EQ(doc.statements.size(), 3u);
  std::vector<double> weights(doc.prompt(0).size(), 0.0);
  weights[0] = 0.5;  // <bos>: outside every statement
  for (const Statement& st : doc.statements) {
    // 0.3 on the evidence's last token (its value's neighbour), 0.1 on each distractor's first.
    if (st.role == StatementRole::Evidence) weights[static_cast<size_t>(st.end - 1)] += 0.3;
    else weights[static_cast<size_t>(st.begin)] += 0.1;
  }
  EXPECT_NEAR(evidenceShare(doc, weights), 0.3 / 0.5, 1e-15);
  std::vector<double> none(weights.size(), 0.0);
  none[0] = 1.0;
  EXPECT_TRUE(std::isnan(evidenceShare(doc, none)));
  EXPECT_THROW(evidenceShare(doc, std::vector<double>(3, 0.0)), std::invalid_argument);
}

}  // namespace
}  // namespace posc::longctx

namespace posc::longctx {
namespace {

// minimumLength is a promise: at exactly that length every task, template,
// evidence choice, distractor count and depth lays out.
TEST(DocumentLayout, EveryDepthFitsAtTheMinimumLength) {
  int documents = 0;
  for (int t = 0; t < kTaskTypeCount; ++t)
    for (int templ = 0; templ < kTemplates; ++templ)
      for (bool present : {true, false})
        for (int n : {1, 2, 3, 5, 8}) {
          DocumentSpec spec;
          spec.task = static_cast<TaskType>(t);
          if (!present && !canLackEvidence(spec.task)) continue;
          spec.template_index = templ;
          spec.evidence_present = present;
          spec.distractors = n;
          spec.length = minimumLength(spec);
          for (int d = 0; d <= 20; ++d)
            for (uint64_t seed = 0; seed < 5; ++seed) {
              spec.depth = d / 20.0;
              spec.seed = seed;
              ASSERT_NO_THROW(generate(spec)) << taskTypeName(spec.task) << " template " << templ << " N " << n
                                              << " depth " << spec.depth << " seed " << seed;
              ++documents;
            }
          spec.length -= 1;
          EXPECT_THROW(generate(spec), std::invalid_argument);
        }
  EXPECT_EQ(documents, 4 * 3 * 5 * 21 * 5 + 2 * 3 * 5 * 21 * 5);  // four tasks, two without evidence too
}

}  // namespace
}  // namespace posc::longctx
