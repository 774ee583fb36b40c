// The addition task: exact arithmetic, problem sampling, tokenisation and the
// index channels every token carries.
//
// Numbers are decimal digit strings of any length (200+ digits), so nothing
// here can overflow. Tokenisation follows a plan::TaskPlan: k digits per token,
// reversed (units first) or zero-padded most-significant-first order.
//
// Sequence layout for two operands, reversed, k = 1 (12345 + 678):
//
//   tokens   5 4 3 2 1 + 8 7 6 = 3 2 0 3 1 <eos>
//   position 0 1 2 3 4 5 6 7 8 9 ...
//   column   1 2 3 4 5 0 1 2 3 0 1 2 3 4 5 0
//   row      0 0 0 0 0 1 1 1 1 2 2 2 2 2 2 2
//   kind     D D D D D S D D D S D D D D D X     (D digit, S separator, X special)
//
// Column is the place value of a digit token (units token = 1, next = 2, ...);
// separators and specials have column 0. Row is the operand index for operand
// tokens, `operands` for answer tokens; a separator takes the row of the
// operand (or answer) that follows it; <eos> is in the answer row.
// In padded order digits come most significant first and operands are
// zero-padded to a width W = plan::operandWidth(task, longest operand),
// rounded up to a multiple of k; the answer is padded to W + k digits (one
// more token; with more than 10^k operands, as many more tokens as the carry
// needs), so every problem of a test length has the same shape and columns
// count down. With k > 1, a token holds the integer value of a
// k-digit chunk (chunks are cut from the units end; the token for 12 in
// 12345 with k = 3 is rendered "012").
//
// Deliberately free of LibTorch: the runtime turns Batch into tensors.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"

namespace posc::task {

// A non-negative integer as decimal digits, least significant first, no
// leading zeros (zero is {0}).
struct Number {
  std::vector<uint8_t> digits;  // digits[0] = units
  static Number fromString(const std::string& most_significant_first);
  std::string toString() const;  // most significant first
  int length() const { return static_cast<int>(digits.size()); }
  bool operator==(const Number&) const = default;
};
Number add(const Number& a, const Number& b);
Number sum(const std::vector<Number>& terms);

// Uniformly random number with exactly `length` digits (leading digit non-zero
// unless length == 1).
Number randomNumber(int length, std::mt19937_64& rng);
// Uniformly random over the values with min_length..max_length digits (zero
// included when min_length is 1): task.sampling = values.
Number randomValue(int min_length, int max_length, std::mt19937_64& rng);

struct Problem {
  std::vector<Number> operands;
  Number answer;
};
// A training problem drawn as task.sampling says: each operand's length
// uniform in [min_digits, max_digits] (Lengths), each operand's value uniform
// (Values), one length uniform for all operands (SameLength), or either of
// SameLength and Lengths with probability 1/2 (Mixed).
Problem sampleProblem(const plan::TaskPlan& task, std::mt19937_64& rng);
// A test problem: every operand has exactly `digits` digits.
Problem sampleProblem(const plan::TaskPlan& task, int digits, std::mt19937_64& rng);
// The fixed test set for one length: a pure function of (task.test_seed, digits).
std::vector<Problem> testProblems(const plan::TaskPlan& task, int digits);

// Vocabulary: ids 0 .. 10^k - 1 are digit tokens (the token's value), then
// '+', '=', <eos>, <pad>, and <bos> when the task has one.
struct Vocabulary {
  int digits_per_token = 1;
  bool has_bos = false;
  int digit_tokens() const;  // 10^k
  int plus() const { return digit_tokens(); }
  int equals() const { return digit_tokens() + 1; }
  int eos() const { return digit_tokens() + 2; }
  int pad() const { return digit_tokens() + 3; }
  int bos() const { return digit_tokens() + 4; }  // only when has_bos
  int size() const { return digit_tokens() + 4 + (has_bos ? 1 : 0); }
  std::string render(int token) const;  // "7", "042" for k = 3, "+", "=", "<eos>", "<pad>", "<bos>"
};

// One tokenised problem.
struct Sequence {
  std::vector<int64_t> tokens;
  std::array<std::vector<int64_t>, plan::kChannelCount> channels;  // indexed by plan::Channel
  int prompt_length = 0;  // tokens up to and including '='
  // tokens[prompt_length ..] is the answer followed by <eos>.
};

class Tokenizer {
 public:
  explicit Tokenizer(const plan::TaskPlan& task);
  const Vocabulary& vocabulary() const { return vocab_; }

  Sequence encode(const Problem& p) const;
  // The prompt alone (operands, separators, '='), as the model sees it at test time.
  Sequence encodePrompt(const Problem& p) const;
  // Channels of the i-th generated token (i = 0 is the first answer token)
  // for a problem of this shape, so a decoder can extend channels without
  // knowing the answer. Kind is Digit (the model's output decides if it is <eos>).
  std::array<int64_t, plan::kChannelCount> answerChannels(const Problem& p, int i) const;
  // Number of answer tokens plus one for <eos>: the most a decoder needs to emit.
  int maxAnswerTokens(const Problem& p) const;
  // Decodes generated answer tokens (stopping at <eos>) into a number;
  // returns false if a token is not a digit token or <eos> never came.
  bool decodeAnswer(const std::vector<int64_t>& generated, Number& out) const;
  // "5 4 3 2 1 + 8 7 6 = 3 2 0 3 1 <eos>"
  std::string render(const Sequence& s) const;

 private:
  plan::TaskPlan task_;
  Vocabulary vocab_;
};

// A rectangular batch, row-major (batch x length), right-padded with <pad>.
// loss_mask is 1 where the next-token target counts (answer tokens and <eos>):
// targets[b][t] = tokens[b][t + 1].
struct Batch {
  int batch = 0, length = 0;
  std::vector<int64_t> tokens;
  std::vector<int64_t> targets;
  std::vector<uint8_t> loss_mask;
  std::array<std::vector<int64_t>, plan::kChannelCount> channels;
};
Batch makeBatch(const std::vector<Sequence>& sequences, const Vocabulary& vocab);
// The same for any task: `pad` fills the rows past each sequence's end.
Batch makeBatch(const std::vector<Sequence>& sequences, int64_t pad);
Batch sampleTrainingBatch(const plan::TaskPlan& task, const Tokenizer& tok, int batch,
                          std::mt19937_64& rng);

// Randomised channels (plan::ChannelSampling): for each sampling, in order,
// each row's values 0..V of the channel (V its largest, padding included)
// become a sorted sample of V + 1 distinct integers drawn uniformly without
// replacement from 0..range-1 (Floyd's algorithm). Draws nothing when
// `samplings` is empty. Throws std::invalid_argument when a row's values do
// not fit the range (the front end refuses such plans).
void randomizeChannels(const std::vector<plan::ChannelSampling>& samplings, Batch& batch, std::mt19937_64& rng);

// The same relabelling at evaluation, one map per test problem. A model
// trained on randomised channels has seen values with random gaps, almost
// never consecutive ones, so evaluation samples as training does (as the
// paper does for test sequences). For each sampling, the channel's values
// 0..V in the problem's full sequence (prompt, answer and <eos>) get the
// sorted labels of a sample of V + 1 from 0..range-1, drawn from a generator
// seeded by the problem's digits: a problem gets the same labels in every
// decoder and probe, whatever batch it is decoded in. Values past V (tokens
// emitted after the answer's length) keep the last label.
struct ChannelLabels {
  std::vector<std::pair<plan::Channel, std::vector<int64_t>>> maps;
  void apply(std::array<int64_t, plan::kChannelCount>& token) const;
  void apply(std::array<std::vector<int64_t>, plan::kChannelCount>& channels) const;
};
ChannelLabels evaluationLabels(const std::vector<plan::ChannelSampling>& samplings, const Tokenizer& tok,
                               const Problem& problem);

}  // namespace posc::task
