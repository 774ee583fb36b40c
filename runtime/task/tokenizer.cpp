// Tokenisation of addition problems and the index channels of every token
// (position, column, row, kind), following the layout documented in
// addition.h. The decoder side (answerChannels, maxAnswerTokens) derives the
// answer's shape from the operands alone, never from the answer itself.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/task/addition.h"

namespace posc::task {
namespace {

using plan::Channel;
using plan::DigitOrder;
using plan::TokenKind;

int ceilDiv(int a, int b) { return (a + b - 1) / b; }
int roundUp(int a, int multiple) { return ceilDiv(a, multiple) * multiple; }

// Smallest e >= 1 with 10^e >= operands: the sum of m numbers below 10^L is
// below m * 10^L <= 10^(L + e), so it has at most L + e digits.
int carryDigits(int operands) {
  int e = 1;
  for (long long power = 10; power < operands; power *= 10) ++e;
  return e;
}

int longestOperand(const Problem& p) {
  int longest = 1;
  for (const Number& n : p.operands) longest = std::max(longest, n.length());
  return longest;
}

// Padded order: every operand is W digits, W = max(padded width, longest
// operand) rounded up to a multiple of k.
int paddedOperandTokens(const plan::TaskPlan& task, const Problem& p) {
  const int k = task.digits_per_token;
  return roundUp(plan::operandWidth(task, longestOperand(p)), k) / k;
}

// Padded order: the answer is W + k digits (one extra token), which holds any
// sum of up to 10^k operands. With more operands (e.g. 11+ operands at k = 1)
// the answer gets as many extra tokens as the carry digits need, so it is
// never truncated and the shape still depends on the operand count alone.
int paddedAnswerTokens(const plan::TaskPlan& task, const Problem& p) {
  const int k = task.digits_per_token;
  return paddedOperandTokens(task, p) + ceilDiv(carryDigits(task.operands), k);
}

int operandTokens(const plan::TaskPlan& task, const Problem& p, const Number& n) {
  if (plan::isPadded(task.order)) return paddedOperandTokens(task, p);
  return ceilDiv(n.length(), task.digits_per_token);
}

int answerTokens(const plan::TaskPlan& task, const Problem& p) {
  if (plan::isPadded(task.order)) return paddedAnswerTokens(task, p);
  return ceilDiv(p.answer.length(), task.digits_per_token);
}

// <bos> if the task has one, operand tokens, one separator per operand ('+' or '=').
int promptLength(const plan::TaskPlan& task, const Problem& p) {
  int length = task.bos ? 1 : 0;
  for (const Number& n : p.operands) length += operandTokens(task, p, n) + 1;
  return length;
}

// Value of chunk j of n (digits [j k, j k + k)), zero beyond its length.
int64_t chunkValue(const Number& n, int k, int j) {
  int64_t value = 0;
  for (int t = k - 1; t >= 0; --t) {
    const int index = j * k + t;
    value = value * 10 + (index < n.length() ? n.digits[index] : 0);
  }
  return value;
}

// Appends tokens with their channels; position is the token's index.
class SequenceWriter {
 public:
  SequenceWriter(Sequence& s, int capacity) : s_(s) {
    s_.tokens.reserve(static_cast<size_t>(capacity));
    for (auto& channel : s_.channels) channel.reserve(static_cast<size_t>(capacity));
  }
  void push(int64_t token, int64_t column, int64_t row, TokenKind kind) {
    channel(Channel::Position).push_back(static_cast<int64_t>(s_.tokens.size()));
    channel(Channel::Column).push_back(column);
    channel(Channel::Row).push_back(row);
    channel(Channel::Kind).push_back(static_cast<int64_t>(kind));
    channel(Channel::Segment).push_back(0);  // addition has no statements
    s_.tokens.push_back(token);
  }
  // `tokens` chunks of n: units first (reversed, padded_reversed) or most
  // significant first (padded); the column is always the chunk's place
  // value, 1 for units.
  void pushNumber(const Number& n, int tokens, int row, int k, DigitOrder order) {
    if (n.length() > tokens * k)
      throw std::logic_error(fmt::format("tokenizer: {} does not fit in {} tokens of {} digits",
                                         n.toString(), tokens, k));
    for (int i = 0; i < tokens; ++i) {
      const int chunk = plan::unitsFirst(order) ? i : tokens - 1 - i;
      push(chunkValue(n, k, chunk), chunk + 1, row, TokenKind::Digit);
    }
  }

 private:
  std::vector<int64_t>& channel(Channel c) { return s_.channels[static_cast<int>(c)]; }
  Sequence& s_;
};

Sequence encodeProblem(const plan::TaskPlan& task, const Vocabulary& vocab, const Problem& p,
                       bool with_answer) {
  if (static_cast<int>(p.operands.size()) != task.operands)
    throw std::invalid_argument(fmt::format("tokenizer: problem has {} operands, task has {}",
                                            p.operands.size(), task.operands));
  const int k = task.digits_per_token;
  const int prompt = promptLength(task, p);
  const int answer = with_answer ? answerTokens(task, p) : 0;
  Sequence s;
  SequenceWriter writer(s, prompt + answer + (with_answer ? 1 : 0));
  if (task.bos) writer.push(vocab.bos(), 0, 0, TokenKind::Special);
  for (int row = 0; row < task.operands; ++row) {
    if (row > 0) writer.push(vocab.plus(), 0, row, TokenKind::Separator);
    writer.pushNumber(p.operands[row], operandTokens(task, p, p.operands[row]), row, k,
                      task.order);
  }
  writer.push(vocab.equals(), 0, task.operands, TokenKind::Separator);
  s.prompt_length = prompt;
  if (with_answer) {
    writer.pushNumber(p.answer, answer, task.operands, k, task.order);
    writer.push(vocab.eos(), 0, task.operands, TokenKind::Special);
  }
  return s;
}

}  // namespace

Tokenizer::Tokenizer(const plan::TaskPlan& task) : task_(task) {
  if (task.operands < 2) throw std::invalid_argument("tokenizer: addition needs 2+ operands");
  vocab_.digits_per_token = task.digits_per_token;
  vocab_.has_bos = task.bos;
  vocab_.digit_tokens();  // validates k
}

Sequence Tokenizer::encode(const Problem& p) const { return encodeProblem(task_, vocab_, p, true); }

Sequence Tokenizer::encodePrompt(const Problem& p) const {
  return encodeProblem(task_, vocab_, p, false);
}

// Reversed order: answer token i is chunk i, column i + 1, for as long as
// the answer runs; at the <eos> position this still says i + 1 (the answer's
// length is not known here), where encode() gives <eos> column 0. Padded
// order: columns count down from the answer width and the <eos> position
// (i = answer tokens) gets column 0, as in encode(). Padded units first:
// columns count up, and the <eos> position gets column 0.
std::array<int64_t, plan::kChannelCount> Tokenizer::answerChannels(const Problem& p,
                                                                   int i) const {
  std::array<int64_t, plan::kChannelCount> c{};
  c[static_cast<int>(Channel::Position)] = promptLength(task_, p) + i;
  int64_t column = i + 1;
  if (task_.order == DigitOrder::Padded) column = std::max(0, paddedAnswerTokens(task_, p) - i);
  if (task_.order == DigitOrder::PaddedReversed) column = i < paddedAnswerTokens(task_, p) ? i + 1 : 0;
  c[static_cast<int>(Channel::Column)] = column;
  c[static_cast<int>(Channel::Row)] = task_.operands;
  c[static_cast<int>(Channel::Kind)] = static_cast<int64_t>(TokenKind::Digit);
  return c;
}

int Tokenizer::maxAnswerTokens(const Problem& p) const {
  if (plan::isPadded(task_.order)) return paddedAnswerTokens(task_, p) + 1;
  const int most_digits = longestOperand(p) + carryDigits(task_.operands);
  return ceilDiv(most_digits, task_.digits_per_token) + 1;
}

// An empty answer (<eos> first) is rejected as well: it is no number.
bool Tokenizer::decodeAnswer(const std::vector<int64_t>& generated, Number& out) const {
  const auto eos = std::find(generated.begin(), generated.end(), vocab_.eos());
  if (eos == generated.end() || eos == generated.begin()) return false;
  const int digit_tokens = vocab_.digit_tokens();
  for (auto it = generated.begin(); it != eos; ++it)
    if (*it < 0 || *it >= digit_tokens) return false;

  const int k = task_.digits_per_token;
  Number n;
  n.digits.reserve(static_cast<size_t>(eos - generated.begin()) * k);
  auto appendChunk = [&](int64_t value) {
    for (int t = 0; t < k; ++t, value /= 10) n.digits.push_back(static_cast<uint8_t>(value % 10));
  };
  if (plan::unitsFirst(task_.order)) {
    for (auto it = generated.begin(); it != eos; ++it) appendChunk(*it);
  } else {
    for (auto it = eos; it != generated.begin();) appendChunk(*--it);
  }
  while (n.digits.size() > 1 && n.digits.back() == 0) n.digits.pop_back();
  out = std::move(n);
  return true;
}

std::string Tokenizer::render(const Sequence& s) const {
  std::string text;
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    if (i > 0) text.push_back(' ');
    text += vocab_.render(static_cast<int>(s.tokens[i]));
  }
  return text;
}

}  // namespace posc::task
