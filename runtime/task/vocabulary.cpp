// The token vocabulary: one token per k-digit chunk value, then the
// separators and the special tokens. Rendering is for dumps and tests.
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/task/addition.h"

namespace posc::task {

int Vocabulary::digit_tokens() const {
  if (digits_per_token < 1 || digits_per_token > 9)
    throw std::out_of_range(
        fmt::format("Vocabulary: digits per token must be in [1, 9], got {}", digits_per_token));
  int count = 1;
  for (int i = 0; i < digits_per_token; ++i) count *= 10;
  return count;
}

std::string Vocabulary::render(int token) const {
  if (token >= 0 && token < digit_tokens()) return fmt::format("{:0{}d}", token, digits_per_token);
  if (token == plus()) return "+";
  if (token == equals()) return "=";
  if (token == eos()) return "<eos>";
  if (token == pad()) return "<pad>";
  if (has_bos && token == bos()) return "<bos>";
  throw std::out_of_range(fmt::format("Vocabulary: token {} is outside the vocabulary", token));
}

}  // namespace posc::task
