// Documents as model input and the training stream; see sequence.h.
#include "runtime/longctx/sequence.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "runtime/longctx/statements.h"

namespace posc::longctx {
namespace {

constexpr size_t index(plan::Channel c) { return static_cast<size_t>(c); }

int uniform(std::mt19937_64& rng, int lo, int hi) {  // [lo, hi]
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// The review questions of a document (sequence.h), in document order: for
// every statement that holds one value under a key no other statement has,
// its key question and answer.
std::vector<Question> reviewQuestions(const Document& doc) {
  std::map<std::pair<int, int>, int> stated;
  for (const Statement& st : doc.statements) ++stated[{st.key.first, st.key.second}];
  std::vector<Question> out;
  for (const Statement& st : doc.statements) {
    if (stated[{st.key.first, st.key.second}] != 1) continue;
    int values = 0;
    int32_t value = 0;
    for (int i = st.begin; i < st.end; ++i)
      if (tokenClass(doc.context[static_cast<size_t>(i)]) == TokenClass::Value) {
        ++values;
        value = doc.context[static_cast<size_t>(i)];
      }
    if (values != 1) continue;
    out.push_back({keyQuestion(doc.spec.template_index, st.key), {value, token::kEos}, "review"});
  }
  return out;
}

}  // namespace

plan::TokenKind tokenKind(int32_t token) {
  switch (tokenClass(token)) {
    case TokenClass::Marker: return plan::TokenKind::Separator;
    case TokenClass::Special: return plan::TokenKind::Special;
    case TokenClass::Filler:
    case TokenClass::Key:
    case TokenClass::Value: return plan::TokenKind::Digit;
  }
  return plan::TokenKind::Special;
}

task::Sequence encode(const Document& doc, int question, bool with_answer) {
  const std::vector<int32_t> prompt = doc.prompt(question);
  const std::vector<int32_t> segments = doc.segments(question);
  task::Sequence s;
  s.prompt_length = static_cast<int>(prompt.size());
  std::vector<int32_t> tokens = prompt;
  if (with_answer) {
    const auto& answer = doc.questions.at(static_cast<size_t>(question)).answer;
    tokens.insert(tokens.end(), answer.begin(), answer.end());
  }
  const size_t n = tokens.size();
  s.tokens.assign(tokens.begin(), tokens.end());
  for (auto& channel : s.channels) channel.assign(n, 0);
  const int32_t answer_segment = segments.empty() ? 0 : segments.back();
  for (size_t t = 0; t < n; ++t) {
    s.channels[index(plan::Channel::Position)][t] = static_cast<int64_t>(t);
    s.channels[index(plan::Channel::Kind)][t] = static_cast<int64_t>(tokenKind(tokens[t]));
    s.channels[index(plan::Channel::Segment)][t] = t < segments.size() ? segments[t] : answer_segment;
  }
  return s;
}

std::array<int64_t, plan::kChannelCount> answerChannels(const Document& doc, int question, int i, int32_t token) {
  const size_t prompt = doc.context.size() + doc.questions.at(static_cast<size_t>(question)).tokens.size();
  std::array<int64_t, plan::kChannelCount> c{};
  c[index(plan::Channel::Position)] = static_cast<int64_t>(prompt) + i;
  c[index(plan::Channel::Kind)] = static_cast<int64_t>(tokenKind(token));
  c[index(plan::Channel::Segment)] = static_cast<int64_t>(doc.statements.size()) + 1;
  return c;
}

DocumentSpec trainingSpec(const plan::DocumentTaskPlan& task, std::mt19937_64& rng) {
  DocumentSpec spec;
  spec.task = task.tasks.at(static_cast<size_t>(uniform(rng, 0, static_cast<int>(task.tasks.size()) - 1)));
  spec.length = uniform(rng, task.train_min_length, task.train_max_length);
  spec.depth = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  spec.distractors =
      task.train_distractors.at(static_cast<size_t>(uniform(rng, 0, static_cast<int>(task.train_distractors.size()) - 1)));
  spec.near_duplicates = task.near_duplicates;
  spec.template_index = uniform(rng, 0, task.templates - 1);
  spec.authority = task.authority;
  spec.filler = task.filler;
  const bool absent = std::uniform_real_distribution<double>(0.0, 1.0)(rng) < task.absent_share;
  spec.evidence_present = !(canLackEvidence(spec.task) && absent);
  spec.seed = rng();
  return spec;
}

task::Sequence trainingSequence(const Document& doc, int question, bool review, std::mt19937_64& rng,
                                std::vector<int>* answer_positions) {
  task::Sequence s = encode(doc, question, true);
  auto note = [&](int first, int count) {
    if (answer_positions)
      for (int t = first; t < first + count; ++t) answer_positions->push_back(t);
  };
  note(s.prompt_length, static_cast<int>(s.tokens.size()) - s.prompt_length);
  if (!review) return s;
  // As many reviews as there are statements to review, each drawn with
  // replacement (sequence.h says why).
  const std::vector<Question> reviewable = reviewQuestions(doc);
  std::vector<Question> extra;
  for (size_t i = 0; i < reviewable.size(); ++i)
    extra.push_back(reviewable[static_cast<size_t>(uniform(rng, 0, static_cast<int>(reviewable.size()) - 1))]);
  const int64_t segment = static_cast<int64_t>(doc.statements.size()) + 1;
  for (const Question& q : extra) {
    for (size_t i = 0; i < q.tokens.size() + q.answer.size(); ++i) {
      const int32_t t = i < q.tokens.size() ? q.tokens[i] : q.answer[i - q.tokens.size()];
      s.channels[index(plan::Channel::Position)].push_back(static_cast<int64_t>(s.tokens.size()));
      s.channels[index(plan::Channel::Column)].push_back(0);
      s.channels[index(plan::Channel::Row)].push_back(0);
      s.channels[index(plan::Channel::Kind)].push_back(static_cast<int64_t>(tokenKind(t)));
      s.channels[index(plan::Channel::Segment)].push_back(segment);
      s.tokens.push_back(t);
    }
    note(static_cast<int>(s.tokens.size() - q.answer.size()), static_cast<int>(q.answer.size()));
  }
  return s;
}

task::Batch sampleTrainingBatch(const plan::DocumentTaskPlan& task, int batch, std::mt19937_64& rng) {
  std::vector<task::Sequence> sequences;
  std::vector<std::vector<int>> answers(static_cast<size_t>(batch));
  sequences.reserve(static_cast<size_t>(batch));
  for (int i = 0; i < batch; ++i) {
    const Document doc = generate(trainingSpec(task, rng));
    const int question = uniform(rng, 0, static_cast<int>(doc.questions.size()) - 1);
    sequences.push_back(trainingSequence(doc, question, true, rng, &answers[static_cast<size_t>(i)]));
  }
  task::Batch b = task::makeBatch(sequences, token::kPad);
  // The loss: the positions before each answer token (targets are the next token).
  std::fill(b.loss_mask.begin(), b.loss_mask.end(), 0);
  for (int r = 0; r < b.batch; ++r)
    for (int t : answers[static_cast<size_t>(r)])
      b.loss_mask[static_cast<size_t>(r) * static_cast<size_t>(b.length) + static_cast<size_t>(t - 1)] = 1;
  return b;
}

std::string checkTrainingSpecs(const plan::DocumentTaskPlan& task) {
  const int most = *std::max_element(task.train_distractors.begin(), task.train_distractors.end());
  for (TaskType t : task.tasks)
    for (int templ = 0; templ < task.templates; ++templ)
      for (bool present : {true, false}) {
        if (!present && !(canLackEvidence(t) && task.absent_share > 0)) continue;
        DocumentSpec spec;
        spec.task = t;
        spec.length = task.train_min_length;
        spec.distractors = most;
        spec.near_duplicates = task.near_duplicates;
        spec.template_index = templ;
        spec.evidence_present = present;
        spec.authority = task.authority;
        spec.filler = task.filler;
        if (spec.filler && minimumLength(spec) > spec.length)
          return fmt::format("{} {} document with {} distractors needs at least {} tokens; task.train_min_length is {}",
                             t == TaskType::Order ? "an" : "a", taskTypeName(t), most, minimumLength(spec), spec.length);
        try {
          generate(spec);
        } catch (const std::invalid_argument& e) {
          return fmt::format("training documents cannot be laid out: {}", e.what());
        }
      }
  return "";
}

}  // namespace posc::longctx
