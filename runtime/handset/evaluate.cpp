// Greedy decoding and the evaluation protocols of hand-set models.
#include "runtime/handset/evaluate.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/task/adder_protocol.h"

namespace posc::handset {

std::vector<int64_t> greedyTokens(const LogitsFn& forward, int vocab, std::vector<int64_t> prompt, int steps) {
  std::vector<int64_t> emitted;
  for (int s = 0; s < steps; ++s) {
    const std::vector<double> logits = forward(prompt);
    const double* last = logits.data() + (prompt.size() - 1) * static_cast<size_t>(vocab);
    const int64_t next = std::max_element(last, last + vocab) - last;
    emitted.push_back(next);
    prompt.push_back(next);
  }
  return emitted;
}

namespace {

std::string renderTokens(const task::Vocabulary& vocab, const std::vector<int64_t>& tokens) {
  std::string s;
  for (int64_t t : tokens) s += t >= 0 && t < vocab.size() ? vocab.render(static_cast<int>(t)) : "?";
  return s;
}

}  // namespace

ProtocolResult evaluateAdderBoard(const LogitsFn& forward, const plan::TaskPlan& task) {
  const task::Tokenizer tokenizer(task);
  const task::Vocabulary& vocab = tokenizer.vocabulary();
  ProtocolResult result;
  result.protocol = "adderboard";
  for (const task::Problem& p : task::adderBoardProblems()) {
    const task::Sequence prompt = tokenizer.encodePrompt(p);
    const int answer_tokens = tokenizer.maxAnswerTokens(p) - 1;  // the padded answer, without <eos>
    const std::vector<int64_t> got = greedyTokens(forward, vocab.size(), prompt.tokens, answer_tokens);
    const std::string expected = fmt::format("{:0>{}}", p.answer.toString(), answer_tokens);
    const std::string rendered = renderTokens(vocab, got);
    ++result.total;
    if (rendered == expected) ++result.correct;
    else result.failures.push_back({p.operands[0].toString(), p.operands[1].toString(), expected, rendered});
  }
  return result;
}

ProtocolResult evaluateLengths(const LogitsFn& forward, const plan::TaskPlan& task) {
  const task::Tokenizer tokenizer(task);
  const task::Vocabulary& vocab = tokenizer.vocabulary();
  ProtocolResult result;
  result.protocol = "lengths";
  for (int digits : task.test_digits)
    for (const task::Problem& p : task::testProblems(task, digits)) {
      const task::Sequence prompt = tokenizer.encodePrompt(p);
      std::vector<int64_t> got = greedyTokens(forward, vocab.size(), prompt.tokens, tokenizer.maxAnswerTokens(p));
      task::Number decoded;
      const bool ok = tokenizer.decodeAnswer(got, decoded) && decoded == p.answer;
      ++result.total;
      if (ok) ++result.correct;
      else result.failures.push_back({p.operands[0].toString(), p.operands.size() > 1 ? p.operands[1].toString() : "",
                                      p.answer.toString(), renderTokens(vocab, got)});
    }
  return result;
}

}  // namespace posc::handset
