// MT19937 with CPython's seeding and integer-drawing rules; see
// python_random.h for the contract and why it has to be bit-exact.
#include "runtime/task/python_random.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace posc::task {
namespace {

constexpr int kShift = 397;  // the "M" of MT19937: offset of the mixed word
constexpr uint32_t kTwistMatrix = 0x9908b0dfu;
constexpr uint32_t kHighBit = 0x80000000u;
constexpr uint32_t kLowBits = 0x7fffffffu;

}  // namespace

PythonRandom::PythonRandom(uint64_t seed) {
  // |seed| as 32-bit words, least significant first, without leading zero
  // words; zero still gives a one-word key.
  std::vector<uint32_t> key{static_cast<uint32_t>(seed)};
  if ((seed >> 32) != 0) key.push_back(static_cast<uint32_t>(seed >> 32));
  initByArray(key);
}

PythonRandom::PythonRandom(const std::vector<uint32_t>& key) {
  initByArray(key.empty() ? std::vector<uint32_t>{0} : key);
}

void PythonRandom::initGenrand(uint32_t seed) {
  state_[0] = seed;
  for (int i = 1; i < kStateSize; ++i) {
    const uint32_t prev = state_[i - 1];
    state_[i] = 1812433253u * (prev ^ (prev >> 30)) + static_cast<uint32_t>(i);
  }
  index_ = kStateSize;
}

void PythonRandom::initByArray(const std::vector<uint32_t>& key) {
  initGenrand(19650218u);
  const int key_length = static_cast<int>(key.size());
  int i = 1;
  int j = 0;
  // First pass mixes the key in, for max(N, key length) steps.
  for (int step = std::max(kStateSize, key_length); step > 0; --step) {
    const uint32_t prev = state_[i - 1];
    state_[i] = (state_[i] ^ ((prev ^ (prev >> 30)) * 1664525u)) + key[j] + static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kStateSize) {
      state_[0] = state_[kStateSize - 1];
      i = 1;
    }
    if (j >= key_length) j = 0;
  }
  // Second pass diffuses the state once more.
  for (int step = kStateSize - 1; step > 0; --step) {
    const uint32_t prev = state_[i - 1];
    state_[i] = (state_[i] ^ ((prev ^ (prev >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kStateSize) {
      state_[0] = state_[kStateSize - 1];
      i = 1;
    }
  }
  state_[0] = kHighBit;  // guarantees a non-zero state
  index_ = kStateSize;
}

void PythonRandom::twist() {
  for (int i = 0; i < kStateSize; ++i) {
    const uint32_t y = (state_[i] & kHighBit) | (state_[(i + 1) % kStateSize] & kLowBits);
    state_[i] = state_[(i + kShift) % kStateSize] ^ (y >> 1) ^ ((y & 1u) != 0 ? kTwistMatrix : 0u);
  }
  index_ = 0;
}

uint32_t PythonRandom::next32() {
  if (index_ >= kStateSize) twist();
  uint32_t y = state_[index_++];
  // Tempering.
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint64_t PythonRandom::getrandbits(int k) {
  if (k < 0 || k > 64) throw std::invalid_argument("getrandbits: k must be in [0, 64], got " + std::to_string(k));
  if (k == 0) return 0;
  if (k <= 32) return next32() >> (32 - k);
  // Low word first; the final (high) word keeps only its top k - 32 bits.
  const uint64_t low = next32();
  const uint64_t high = next32() >> (64 - k);
  return low | (high << 32);
}

uint64_t PythonRandom::randbelow(uint64_t n) {
  if (n == 0) throw std::invalid_argument("randbelow: empty range");
  const int k = std::bit_width(n);
  uint64_t r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

uint64_t PythonRandom::randint(uint64_t a, uint64_t b) {
  if (a > b) throw std::invalid_argument("randint: empty range");
  const uint64_t width = b - a + 1;  // wraps to 0 only for the full 64-bit range
  if (width == 0) return getrandbits(64);
  return a + randbelow(width);
}

}  // namespace posc::task
