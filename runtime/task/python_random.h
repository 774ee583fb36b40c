// A bit-exact re-implementation of CPython's `random.Random` for the few
// methods test-set generation uses: seeding from a non-negative int,
// getrandbits, the rejection-sampling _randbelow and randint.
//
// Why: public benchmarks (e.g. the 10-digit-addition leaderboard) publish
// their test sets only as a Python recipe such as
//   rng = random.Random(2025); a = rng.randint(0, 9999999999)
// Reproducing the generator exactly lets posc rebuild those sets itself and
// score on the very same problems, without Python or a shipped data file.
//
// The core is MT19937 (32-bit Mersenne Twister, Matsumoto & Nishimura) seeded
// with init_by_array. CPython turns an int seed into the key by taking its
// absolute value as 32-bit words, least significant first (seed 0 -> key {0}).
// getrandbits(k): for k <= 32, next32() >> (32 - k); for larger k, successive
// 32-bit outputs fill the result from the low word up, the last word keeping
// only its top bits. randbelow(n) draws getrandbits(n.bit_length()) until the
// value is below n; randint(a, b) = a + randbelow(b - a + 1).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace posc::task {

class PythonRandom {
 public:
  // Same stream as Python's random.Random(seed) for a non-negative int seed.
  explicit PythonRandom(uint64_t seed);
  // Seeds MT19937 directly with init_by_array(key); an empty key acts as {0},
  // as in CPython.
  explicit PythonRandom(const std::vector<uint32_t>& key);

  // The next raw 32-bit MT19937 output (CPython's genrand_uint32).
  uint32_t next32();
  // Python's getrandbits(k) for 0 <= k <= 64; throws std::invalid_argument
  // otherwise.
  uint64_t getrandbits(int k);
  // Python's _randbelow(n): uniform in [0, n). Throws std::invalid_argument for
  // n == 0 (Python raises too).
  uint64_t randbelow(uint64_t n);
  // Python's randint(a, b): uniform in [a, b], inclusive. Throws
  // std::invalid_argument if a > b. The full range [0, 2^64 - 1] is allowed
  // and consumes getrandbits(64), as Python would.
  uint64_t randint(uint64_t a, uint64_t b);

 private:
  static constexpr int kStateSize = 624;
  void initGenrand(uint32_t seed);
  void initByArray(const std::vector<uint32_t>& key);
  void twist();

  std::array<uint32_t, kStateSize> state_{};
  int index_ = kStateSize + 1;
};

}  // namespace posc::task
