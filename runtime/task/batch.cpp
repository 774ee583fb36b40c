// Rectangular training batches: tokenised problems right-padded with <pad>,
// next-token targets and the loss mask over answer tokens and <eos>.
//
// Each row holds a whole sequence (<eos> included), so the batch length is
// the longest sequence; the target of a row's last position is <pad> and is
// masked out. Padding positions continue the position channel, have column 0,
// the row of the sequence's last token (the answer row) and kind Special; they
// come after every real token, so under the causal mask they never influence
// a real one.
#include <algorithm>
#include <stdexcept>

#include "runtime/task/addition.h"

namespace posc::task {
namespace {

void allocate(Batch& b, int batch, int length, int64_t pad) {
  const size_t cells = static_cast<size_t>(batch) * static_cast<size_t>(length);
  b.batch = batch;
  b.length = length;
  b.tokens.assign(cells, pad);
  b.targets.assign(cells, pad);
  b.loss_mask.assign(cells, 0);
  for (auto& channel : b.channels) channel.assign(cells, 0);
}

// Copies one sequence into row `r` of the batch and fills its padding.
void fillRow(Batch& b, int r, const Sequence& s) {
  const size_t base = static_cast<size_t>(r) * static_cast<size_t>(b.length);
  const int n = static_cast<int>(s.tokens.size());
  std::copy(s.tokens.begin(), s.tokens.end(), b.tokens.begin() + base);
  if (n > 1) std::copy(s.tokens.begin() + 1, s.tokens.end(), b.targets.begin() + base);
  // Position t predicts tokens[t + 1]; it counts when that is an answer token or <eos>.
  for (int t = std::max(0, s.prompt_length - 1); t + 1 < n; ++t) b.loss_mask[base + t] = 1;

  for (int c = 0; c < plan::kChannelCount; ++c)
    std::copy(s.channels[c].begin(), s.channels[c].end(), b.channels[c].begin() + base);
  const int64_t last_row =
      n > 0 ? s.channels[static_cast<int>(plan::Channel::Row)][n - 1] : 0;
  for (int t = n; t < b.length; ++t) {
    b.channels[static_cast<int>(plan::Channel::Position)][base + t] = t;
    b.channels[static_cast<int>(plan::Channel::Row)][base + t] = last_row;
    b.channels[static_cast<int>(plan::Channel::Kind)][base + t] =
        static_cast<int64_t>(plan::TokenKind::Special);
  }
}

}  // namespace

Batch makeBatch(const std::vector<Sequence>& sequences, const Vocabulary& vocab) {
  return makeBatch(sequences, vocab.pad());
}

Batch makeBatch(const std::vector<Sequence>& sequences, int64_t pad) {
  size_t length = 0;
  for (const Sequence& s : sequences) {
    for (const auto& channel : s.channels)
      if (channel.size() != s.tokens.size())
        throw std::invalid_argument("makeBatch: a channel's length differs from the tokens'");
    length = std::max(length, s.tokens.size());
  }
  Batch b;
  allocate(b, static_cast<int>(sequences.size()), static_cast<int>(length), pad);
  for (size_t r = 0; r < sequences.size(); ++r) fillRow(b, static_cast<int>(r), sequences[r]);
  return b;
}

Batch sampleTrainingBatch(const plan::TaskPlan& task, const Tokenizer& tok, int batch,
                          std::mt19937_64& rng) {
  std::vector<Sequence> sequences;
  sequences.reserve(static_cast<size_t>(batch));
  for (int i = 0; i < batch; ++i) sequences.push_back(tok.encode(sampleProblem(task, rng)));
  return makeBatch(sequences, tok.vocabulary());
}

}  // namespace posc::task
