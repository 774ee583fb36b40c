// The greedy answerer of the document protocol; see documents.h.
#include "runtime/eval/documents.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "runtime/longctx/sequence.h"
#include "runtime/model/batch.h"
#include "runtime/model/precision.h"

namespace posc::eval {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int64_t cacheBytes(const model::KvCache& cache) {
  int64_t bytes = 0;
  for (const auto* stores : {&cache.keys, &cache.values})
    for (const torch::Tensor& t : *stores)
      if (t.defined()) bytes += t.numel() * static_cast<int64_t>(t.element_size());
  return bytes;
}

// Greedy answers for prompts of one length, written into `answers`.
void answerGroup(model::Gpt& model, const std::vector<longctx::Prompt>& batch, const std::vector<size_t>& rows,
                 torch::Device device, bool bf16, longctx::Answers& answers) {
  const int64_t B = static_cast<int64_t>(rows.size());
  std::vector<task::Sequence> prompts;
  for (size_t r : rows) prompts.push_back(longctx::encode(*batch[r].document, batch[r].question, false));
  // One length per group: the batch has no padding.
  const model::BatchTensors prompt = model::toTensors(task::makeBatch(prompts, longctx::token::kPad), device);
  const int64_t P = prompt.tokens.size(1);

  model::KvCache cache;
  cache.reserve = P + longctx::kMaxAnswerTokens;
  auto next = [&](const torch::Tensor& x, const torch::Tensor& ch) {
    model::AutocastGuard autocast(bf16, device.type());
    return model->forwardCached(x.to(device), ch.to(device), cache).select(1, -1).argmax(-1).to(torch::kCPU);
  };
  auto t0 = Clock::now();
  torch::Tensor emitted = next(prompt.tokens, prompt.channels).contiguous();
  answers.prefill_seconds += secondsSince(t0);

  t0 = Clock::now();
  std::vector<bool> done(static_cast<size_t>(B), false);
  for (int i = 0;; ++i) {
    const int64_t* e = emitted.data_ptr<int64_t>();
    bool all_done = true;
    for (int64_t b = 0; b < B; ++b) {
      const size_t bi = static_cast<size_t>(b);
      if (!done[bi]) {
        auto& out = answers.generated[rows[bi]];
        out.push_back(static_cast<int32_t>(e[b]));
        done[bi] = e[b] == longctx::token::kEos || static_cast<int>(out.size()) >= longctx::kMaxAnswerTokens;
      }
      all_done = all_done && done[bi];
    }
    if (all_done) break;
    torch::Tensor step_channels = torch::empty({plan::kChannelCount, B, 1}, torch::kInt64);
    auto sc = step_channels.accessor<int64_t, 3>();
    for (int64_t b = 0; b < B; ++b) {
      const longctx::Prompt& p = batch[rows[static_cast<size_t>(b)]];
      const auto c = longctx::answerChannels(*p.document, p.question, i, static_cast<int32_t>(e[b]));
      for (int k = 0; k < plan::kChannelCount; ++k) sc[k][b][0] = c[static_cast<size_t>(k)];
    }
    emitted = next(emitted.view({B, 1}), step_channels).contiguous();
  }
  answers.generation_seconds += secondsSince(t0);
  answers.peak_cache_bytes = std::max(answers.peak_cache_bytes, cacheBytes(cache));
}

}  // namespace

longctx::Answerer greedyAnswerer(model::Gpt& model, const DecodeOptions& options) {
  return [&model, options](const std::vector<longctx::Prompt>& batch) {
    torch::NoGradGuard no_grad;
    const bool was_training = model->is_training();
    model->eval();
    auto params = model->parameters();
    const torch::Device device = params.empty() ? torch::Device(torch::kCPU) : params.front().device();
    longctx::Answers answers;
    answers.generated.resize(batch.size());
    std::map<size_t, std::vector<size_t>> by_length;
    for (size_t i = 0; i < batch.size(); ++i)
      by_length[batch[i].document->context.size() +
                batch[i].document->questions.at(static_cast<size_t>(batch[i].question)).tokens.size()]
          .push_back(i);
    try {
      for (const auto& [length, rows] : by_length)
        answerGroup(model, batch, rows, device, options.precision == plan::Precision::Bf16Mixed, answers);
    } catch (...) {
      model->train(was_training);
      throw;
    }
    model->train(was_training);
    return answers;
  };
}

longctx::Factors protocolFactors(const plan::ExperimentPlan& plan, bool regression_only) {
  const plan::DocumentEvalPlan& e = plan.eval.documents;
  const plan::DocumentTaskPlan& t = plan.task.documents;
  longctx::Factors f;
  f.tasks = e.tasks;
  f.lengths.clear();
  for (int l : e.lengths)
    if (!regression_only || l <= t.train_max_length) f.lengths.push_back(l);
  f.depths = e.depths;
  f.distractors = e.distractors;
  f.templates = e.templates;
  f.problems = e.problems;
  f.absent_share = e.absent_share;
  f.near_duplicates = t.near_duplicates;
  f.authority = t.authority;
  f.fraction = e.fraction;
  f.train_max_length = t.train_max_length;
  f.seed = plan.task.test_seed;
  return f;
}

std::vector<longctx::CellResult> evaluateDocuments(model::Gpt& model, const plan::ExperimentPlan& plan,
                                                   bool regression_only,
                                                   std::function<void(const longctx::CellResult&)> on_cell) {
  longctx::ProtocolOptions options;
  options.batch = plan.eval.batch;
  options.on_cell = std::move(on_cell);
  const longctx::Factors factors = protocolFactors(plan, regression_only);
  if (factors.lengths.empty()) return {};
  return longctx::runProtocol(factors, greedyAnswerer(model, decodeOptionsFor(plan)), options);
}

}  // namespace posc::eval
