// Greedy decoding (KV cache and reference) and exact-match scoring; see greedy.h.
#include "runtime/eval/greedy.h"

#include "runtime/task/adder_protocol.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>

#include "runtime/model/precision.h"

namespace posc::eval {
namespace {

// Restores the module's training flag on scope exit.
class EvalMode {
 public:
  explicit EvalMode(model::Gpt& m) : model_(m), was_training_(m->is_training()) { model_->eval(); }
  ~EvalMode() { model_->train(was_training_); }

 private:
  model::Gpt& model_;
  bool was_training_;
};

torch::Device deviceOf(model::Gpt& model) {
  auto params = model->parameters();
  return params.empty() ? torch::Device(torch::kCPU) : params.front().device();
}

// Channels of the i-th emitted token: those of an answer digit, except that a
// non-digit token (normally <eos>) gets its own kind and column 0.
std::array<int64_t, plan::kChannelCount> emittedChannels(const task::Tokenizer& tok, const task::Problem& p,
                                                         int i, int64_t token) {
  auto ch = tok.answerChannels(p, i);
  const auto& v = tok.vocabulary();
  if (token >= v.digit_tokens()) {
    const bool separator = token == v.plus() || token == v.equals();
    ch[static_cast<size_t>(plan::Channel::Kind)] =
        static_cast<int64_t>(separator ? plan::TokenKind::Separator : plan::TokenKind::Special);
    ch[static_cast<size_t>(plan::Channel::Column)] = 0;
  }
  return ch;
}

// One group of problems with equal prompt length, as tensors.
struct PromptBatch {
  std::vector<size_t> index;  // into the problem list
  torch::Tensor tokens;       // (B, P)
  torch::Tensor channels;     // (C, B, P)
  std::vector<int> max_tokens;
  std::vector<task::ChannelLabels> labels;  // per row; empty maps without randomised channels
};

std::vector<PromptBatch> groupPrompts(const task::Tokenizer& tok, const std::vector<task::Problem>& problems,
                                      const DecodeOptions& options) {
  const int batch_size = options.batch;
  std::vector<task::Sequence> prompts;
  std::vector<task::ChannelLabels> labels;
  prompts.reserve(problems.size());
  for (const auto& p : problems) {
    prompts.push_back(tok.encodePrompt(p));
    labels.push_back(task::evaluationLabels(options.sampled_channels, tok, p));
    labels.back().apply(prompts.back().channels);
  }
  std::vector<size_t> order(problems.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return prompts[a].tokens.size() < prompts[b].tokens.size(); });

  std::vector<PromptBatch> out;
  const size_t limit = static_cast<size_t>(std::max(1, batch_size));
  for (size_t start = 0; start < order.size();) {
    const size_t len = prompts[order[start]].tokens.size();
    size_t end = start;
    while (end < order.size() && end - start < limit && prompts[order[end]].tokens.size() == len) ++end;
    PromptBatch pb;
    pb.index.assign(order.begin() + static_cast<long>(start), order.begin() + static_cast<long>(end));
    const int64_t B = static_cast<int64_t>(pb.index.size()), P = static_cast<int64_t>(len);
    pb.tokens = torch::empty({B, P}, torch::kInt64);
    pb.channels = torch::empty({plan::kChannelCount, B, P}, torch::kInt64);
    auto tok_a = pb.tokens.accessor<int64_t, 2>();
    auto ch_a = pb.channels.accessor<int64_t, 3>();
    for (int64_t b = 0; b < B; ++b) {
      const task::Sequence& s = prompts[pb.index[static_cast<size_t>(b)]];
      for (int64_t t = 0; t < P; ++t) {
        tok_a[b][t] = s.tokens[static_cast<size_t>(t)];
        for (int c = 0; c < plan::kChannelCount; ++c)
          ch_a[c][b][t] = s.channels[static_cast<size_t>(c)][static_cast<size_t>(t)];
      }
      pb.max_tokens.push_back(tok.maxAnswerTokens(problems[pb.index[static_cast<size_t>(b)]]));
      pb.labels.push_back(labels[pb.index[static_cast<size_t>(b)]]);
    }
    out.push_back(std::move(pb));
    start = end;
  }
  return out;
}

// The shared decoding loop. `next_logits(tokens, channels)` receives the
// newly emitted tokens (B, 1) and their channels (C, B, 1) (on the first call,
// the prompts) and returns logits (B, vocab) for the next position.
template <typename NextLogits>
void decodeGroup(const task::Tokenizer& tok, const std::vector<task::Problem>& problems, const PromptBatch& pb,
                 torch::Device device, std::vector<Generated>& out, NextLogits&& next_logits) {
  const int64_t B = pb.tokens.size(0);
  const int max_steps = *std::max_element(pb.max_tokens.begin(), pb.max_tokens.end());
  const int64_t eos = tok.vocabulary().eos();
  std::vector<bool> done(static_cast<size_t>(B), false);
  torch::Tensor logits = next_logits(pb.tokens.to(device), pb.channels.to(device));
  for (int i = 0; i < max_steps; ++i) {
    torch::Tensor next = logits.argmax(-1).to(torch::kCPU).contiguous();  // (B)
    const int64_t* next_p = next.data_ptr<int64_t>();
    bool all_done = true;
    for (int64_t b = 0; b < B; ++b) {
      const size_t bi = static_cast<size_t>(b);
      if (!done[bi]) {
        out[pb.index[bi]].push_back(next_p[b]);
        if (next_p[b] == eos || i + 1 >= pb.max_tokens[bi]) done[bi] = true;
      }
      all_done = all_done && done[bi];
    }
    if (all_done || i + 1 >= max_steps) break;
    torch::Tensor channels = torch::empty({plan::kChannelCount, B, 1}, torch::kInt64);
    auto ch_a = channels.accessor<int64_t, 3>();
    for (int64_t b = 0; b < B; ++b) {
      const size_t bi = static_cast<size_t>(b);
      // Rows that are finished keep running (they share the batch); their
      // channels are clamped to their own answer length and ignored.
      const int at = std::min(i, pb.max_tokens[bi] - 1);
      auto ch = emittedChannels(tok, problems[pb.index[bi]], at, next_p[b]);
      pb.labels[bi].apply(ch);
      for (int c = 0; c < plan::kChannelCount; ++c) ch_a[c][b][0] = ch[static_cast<size_t>(c)];
    }
    logits = next_logits(next.view({B, 1}).to(device), channels.to(device));
  }
}

}  // namespace

std::vector<Generated> greedyDecode(model::Gpt& model, const task::Tokenizer& tokenizer,
                                    const std::vector<task::Problem>& problems, const DecodeOptions& options) {
  torch::NoGradGuard no_grad;
  EvalMode eval_mode(model);
  const torch::Device device = deviceOf(model);
  const bool bf16 = options.precision == plan::Precision::Bf16Mixed;
  std::vector<Generated> out(problems.size());
  for (const PromptBatch& pb : groupPrompts(tokenizer, problems, options)) {
    model::KvCache cache;
    cache.reserve = pb.tokens.size(1) + *std::max_element(pb.max_tokens.begin(), pb.max_tokens.end());
    decodeGroup(tokenizer, problems, pb, device, out, [&](const torch::Tensor& tokens, const torch::Tensor& channels) {
      model::AutocastGuard autocast(bf16, device.type());
      return model->forwardCached(tokens, channels, cache).select(1, -1);
    });
  }
  return out;
}

std::vector<Generated> greedyDecodeReference(model::Gpt& model, const task::Tokenizer& tokenizer,
                                             const std::vector<task::Problem>& problems,
                                             const DecodeOptions& options) {
  torch::NoGradGuard no_grad;
  EvalMode eval_mode(model);
  const torch::Device device = deviceOf(model);
  const bool bf16 = options.precision == plan::Precision::Bf16Mixed;
  std::vector<Generated> out(problems.size());
  for (const PromptBatch& pb : groupPrompts(tokenizer, problems, options)) {
    torch::Tensor all_tokens, all_channels;
    decodeGroup(tokenizer, problems, pb, device, out, [&](const torch::Tensor& tokens, const torch::Tensor& channels) {
      all_tokens = all_tokens.defined() ? torch::cat({all_tokens, tokens}, 1) : tokens;
      all_channels = all_channels.defined() ? torch::cat({all_channels, channels}, 2) : channels;
      model::AutocastGuard autocast(bf16, device.type());
      return model->forward(all_tokens, all_channels).select(1, -1);
    });
  }
  return out;
}

DecodeOptions decodeOptionsFor(const plan::ExperimentPlan& plan) {
  DecodeOptions options;
  options.batch = plan.eval.batch;
  options.precision = plan.model.precision;
  options.sampled_channels = plan.attention.sampled_channels;
  return options;
}

bool isCorrect(const task::Tokenizer& tokenizer, const task::Problem& problem, const Generated& generated) {
  task::Number value;
  return tokenizer.decodeAnswer(generated, value) && value == problem.answer;
}

std::vector<results::LengthAccuracy> evaluateLengths(model::Gpt& model, const plan::ExperimentPlan& plan,
                                                     uint64_t seed) {
  task::Tokenizer tokenizer(plan.task);
  const DecodeOptions options = decodeOptionsFor(plan);
  std::vector<results::LengthAccuracy> out;
  // The leaderboard protocol is one "length": its 10,010 cases of 10 digits.
  const bool adderboard = plan.eval.protocol == plan::EvalProtocol::AdderBoard;
  for (int digits : adderboard ? std::vector<int>{10} : plan.task.test_digits) {
    const std::vector<task::Problem> problems = adderboard ? task::adderBoardProblems() : task::testProblems(plan.task, digits);
    const std::vector<Generated> answers = greedyDecode(model, tokenizer, problems, options);
    results::LengthAccuracy acc;
    acc.seed = seed;
    acc.digits = digits;
    acc.total = static_cast<int>(problems.size());
    for (size_t i = 0; i < problems.size(); ++i) acc.correct += isCorrect(tokenizer, problems[i], answers[i]) ? 1 : 0;
    out.push_back(acc);
  }
  return out;
}

}  // namespace posc::eval
