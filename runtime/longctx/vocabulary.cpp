// Token names, classes and rendering of the long-context vocabulary
// (document.h lists the ids).
#include <array>
#include <string>
#include <vector>

#include "runtime/longctx/document.h"

namespace posc::longctx {
namespace {

// Names of the ids below the first key half, in id order.
constexpr std::array<const char*, token::kFirstKeyHalf> kFixedNames = {
    "<pad>", "<bos>", "<eos>", "<none>", "is",     ".",        "set",      "to",       ";",          "under",
    "Q:",    "get",   "what",  "first",  "rule",  "latest", "earliest", "corrected", "correction", "chain"};

// Parses the decimal index after a prefix ("kx12" -> 12); -1 when malformed
// or not below `count`.
int indexAfter(const std::string& text, size_t prefix, int count) {
  if (text.size() <= prefix || text.size() > prefix + 3) return -1;
  if (text.size() > prefix + 1 && text[prefix] == '0') return -1;  // one spelling per token
  int value = 0;
  for (size_t i = prefix; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value < count ? value : -1;
}

}  // namespace

bool canLackEvidence(TaskType t) { return t == TaskType::Retrieval || t == TaskType::Composition; }

TokenClass tokenClass(int32_t t) {
  if (t <= token::kNone) return TokenClass::Special;
  if (t < token::kFirstKeyHalf) return TokenClass::Marker;
  if (t < token::kFirstValue) return TokenClass::Key;
  if (t < token::kFirstFiller) return TokenClass::Value;
  return TokenClass::Filler;
}

std::string renderToken(int32_t t) {
  if (t < 0 || t >= token::kVocabularySize) return "<?" + std::to_string(t) + ">";
  if (t < token::kFirstKeyHalf) return kFixedNames[static_cast<size_t>(t)];
  if (t < token::kSecondKeyHalf) return "kx" + std::to_string(t - token::kFirstKeyHalf);
  if (t < token::kFirstValue) return "ky" + std::to_string(t - token::kSecondKeyHalf);
  if (t < token::kFirstFiller) return "v" + std::to_string(t - token::kFirstValue);
  return "w" + std::to_string(t - token::kFirstFiller);
}

std::optional<int32_t> parseToken(const std::string& text) {
  for (size_t i = 0; i < kFixedNames.size(); ++i)
    if (text == kFixedNames[i]) return static_cast<int32_t>(i);
  struct Range {
    const char* prefix;
    int32_t first;
    int count;
  };
  for (const Range& r : {Range{"kx", token::kFirstKeyHalf, kKeyHalves}, Range{"ky", token::kSecondKeyHalf, kKeyHalves},
                         Range{"v", token::kFirstValue, kValues}, Range{"w", token::kFirstFiller, kFillerWords}}) {
    std::string prefix = r.prefix;
    if (text.compare(0, prefix.size(), prefix) != 0) continue;
    int index = indexAfter(text, prefix.size(), r.count);
    if (index >= 0) return r.first + index;
  }
  return std::nullopt;
}

std::string render(const std::vector<int32_t>& tokens) {
  std::string out;
  for (int32_t t : tokens) {
    if (!out.empty()) out += ' ';
    out += renderToken(t);
  }
  return out;
}

}  // namespace posc::longctx
