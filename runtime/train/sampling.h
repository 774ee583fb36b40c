// Where a seed's training data and its random factors come from.
//
// A seed's data stream is a std::mt19937_64 seeded from the seed (through
// splitmix64), so that the problems, stretch factors and Abacus offsets a
// seed trains on do not depend on the device, the thread count or torch's own
// generator (which fixes only the initialisation). Every draw is made in the
// same order on every run, which is what makes a resumed run (the generator's
// state is in the resume point) train on the same batches.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <random>

#include "compiler/plan/plan.h"

namespace posc::train {

// The data-stream generator of a seed.
std::mt19937_64 dataRng(uint64_t seed);

// One draw from a distribution: Fixed a; Uniform a + (b - a) u;
// LogUniform exp(log a + (log b - log a) u), u uniform in [0, 1) from 53 bits.
double sampleDistribution(const plan::Distribution& d, std::mt19937_64& rng);

// Per-sequence factors (B) from the first rotation that declares a stretch
// distribution, or an undefined tensor when none does.
torch::Tensor sampleStretch(const plan::AttentionPlan& attention, int64_t batch, std::mt19937_64& rng,
                            torch::ScalarType dtype, torch::Device device);

// Each training sequence's Abacus offset for each absolute embedding: (E, B)
// int64, row i uniform on 0..train_offset of embedding i (zeros where it has
// none); undefined when no embedding has an offset (no draw is made, so the
// data stream of other plans is unchanged).
torch::Tensor sampleEmbedOffsets(const plan::AttentionPlan& attention, int64_t batch, std::mt19937_64& rng);

}  // namespace posc::train
