"""posc's random number streams, bit for bit.

posc draws its training data from ``std::mt19937_64`` (seeded through
SplitMix64 from the training seed, runtime/train/sampling.cpp) and its test
problems from ``std::mt19937_64`` seeded by SplitMix64 mixes of the test seed;
documents come from CPython's ``random.Random`` (runtime/task/python_random.h),
which Python has itself. Addition draws integers by rejection from raw
64-bit outputs (runtime/task/sampling.cpp), which this module repeats
exactly. The document task's training stream uses the C++ standard
library's ``uniform_int_distribution`` and ``uniform_real_distribution``,
whose algorithms the standard leaves open: ``uniform_int`` and
``canonical`` follow libstdc++ (GCC 11 and later: Lemire's nearly
divisionless method, ``generate_canonical`` from one 64-bit draw), the
library posc is built with on Linux.
"""

MASK64 = (1 << 64) - 1


class MT19937_64:
    """std::mt19937_64: 64-bit Mersenne Twister (Matsumoto & Nishimura)."""
    N, M = 312, 156
    A = 0xB5026F5AA96619E9
    UPPER, LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed=5489):
        mt = [seed & MASK64]
        for i in range(1, self.N):
            prev = mt[-1]
            mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64)
        self.mt, self.index = mt, self.N

    def _twist(self):
        mt, n, m = self.mt, self.N, self.M
        for i in range(n):
            y = (mt[i] & self.UPPER) | (mt[(i + 1) % n] & self.LOWER)
            mt[i] = mt[(i + m) % n] ^ (y >> 1) ^ (self.A if y & 1 else 0)
        self.index = 0

    def __call__(self):
        """The next raw 64-bit output."""
        if self.index >= self.N:
            self._twist()
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK64


def splitmix64(x):
    """SplitMix64's finaliser of x + golden gamma (posc's mixBits and dataRng seed)."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def mix_seed(seed, word):
    """longctx::mixSeed: one word mixed into a seed (document cells and probes)."""
    z = (seed + 0x9E3779B97F4A7C15 + word * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def data_rng(seed):
    """The data stream of a training seed (train::dataRng)."""
    return MT19937_64(splitmix64(seed))


def uniform_below(n, rng):
    """Uniform in [0, n) by rejection from raw draws (addition's sampler)."""
    accept_below = MASK64 - MASK64 % n
    while True:
        draw = rng()
        if draw < accept_below:
            return draw % n


def uniform_int(lo, hi, rng):
    """std::uniform_int_distribution<int>(lo, hi)(rng) under libstdc++: one
    128-bit product per draw, redrawn below the threshold (Lemire)."""
    span = hi - lo + 1
    product = rng() * span
    low = product & MASK64
    if low < span:
        threshold = ((1 << 64) - span) % span
        while low < threshold:
            product = rng() * span
            low = product & MASK64
    return lo + (product >> 64)


def canonical(rng):
    """std::uniform_real_distribution<double>(0, 1)(rng) under libstdc++:
    generate_canonical from one draw, below 1."""
    u = float(rng()) / 18446744073709551616.0
    return u if u < 1.0 else 0.9999999999999999  # nextafter(1, 0)


def unit_53(rng):
    """posc's own uniform in [0, 1) from the top 53 bits (stretch factors)."""
    return (rng() >> 11) * 2.0 ** -53
