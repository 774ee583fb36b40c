// The data stream of a seed: see runtime/train/sampling.h.
#include "runtime/train/sampling.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace posc::train {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::mt19937_64 dataRng(uint64_t seed) { return std::mt19937_64(splitmix64(seed)); }

double sampleDistribution(const plan::Distribution& d, std::mt19937_64& rng) {
  using Kind = plan::Distribution::Kind;
  if (d.kind == Kind::Fixed) return d.a;
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  if (d.kind == Kind::Uniform) return d.a + (d.b - d.a) * u;
  const double la = std::log(d.a), lb = std::log(d.b);
  return std::exp(la + (lb - la) * u);
}

torch::Tensor sampleStretch(const plan::AttentionPlan& attention, int64_t batch, std::mt19937_64& rng,
                            torch::ScalarType dtype, torch::Device device) {
  const plan::Distribution* dist = nullptr;
  for (const auto& r : attention.rotations)
    if (r.stretch) {
      dist = &*r.stretch;
      break;
    }
  if (!dist) return {};
  std::vector<double> values(static_cast<size_t>(batch));
  for (auto& v : values) v = sampleDistribution(*dist, rng);
  return torch::tensor(values, torch::TensorOptions().dtype(torch::kFloat64)).to(device, dtype);
}

torch::Tensor sampleEmbedOffsets(const plan::AttentionPlan& attention, int64_t batch, std::mt19937_64& rng) {
  const auto& embs = attention.embeddings;
  if (std::none_of(embs.begin(), embs.end(), [](const plan::AbsoluteEmbedding& e) { return e.train_offset > 0; }))
    return {};
  auto out = torch::zeros({static_cast<int64_t>(embs.size()), batch}, torch::kLong);
  auto a = out.accessor<int64_t, 2>();
  for (size_t i = 0; i < embs.size(); ++i) {
    if (embs[i].train_offset <= 0) continue;
    const uint64_t n = static_cast<uint64_t>(embs[i].train_offset) + 1;
    for (int64_t b = 0; b < batch; ++b) a[static_cast<int64_t>(i)][b] = static_cast<int64_t>(rng() % n);
  }
  return out;
}

}  // namespace posc::train
