// The BLAS under LibTorch computes correct products for the shapes and
// layouts the model uses (transposed, batched, tiny and tall). posc may ask
// OpenBLAS for faster kernels than it picks by itself (tools/posc/
// blas_kernels.h); this is the check that such kernels are right. Run it
// with OPENBLAS_CORETYPE=SkylakeX (or Haswell) to check those kernels.
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

// float32 product against a float64 product of the same inputs.
void expectProductMatches(const torch::Tensor& a, const torch::Tensor& b, const std::string& label) {
  torch::Tensor got = torch::matmul(a, b).to(torch::kDouble);
  torch::Tensor want = torch::matmul(a.to(torch::kDouble), b.to(torch::kDouble));
  double scale = want.abs().max().item<double>() + 1e-12;
  double err = (got - want).abs().max().item<double>() / scale;
  EXPECT_LT(err, 1e-5) << label;
}

}  // namespace

TEST(BlasSanity, ProductsMatchADoublePrecisionReference) {
  torch::manual_seed(7);
  for (auto [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 1, 1}, {3, 5, 7}, {16, 16, 16}, {17, 33, 65}, {64, 384, 1152}, {2560, 64, 256}, {40, 16, 40}}) {
    auto a = torch::randn({m, k});
    auto b = torch::randn({k, n});
    std::string shape = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    expectProductMatches(a, b, shape);
    // Transposed layouts of either operand (column-major views).
    expectProductMatches(torch::randn({k, m}).t(), b, shape + " a transposed");
    expectProductMatches(a, torch::randn({n, k}).t(), shape + " b transposed");
    expectProductMatches(torch::randn({k, m}).t(), torch::randn({n, k}).t(), shape + " both transposed");
  }
  // Batched, as in attention: (B, H, L, D) x (B, H, D, L), from permuted views.
  auto qkv = torch::randn({8, 40, 3, 4, 16}).permute({2, 0, 3, 1, 4});
  expectProductMatches(qkv[0], qkv[1].transpose(-2, -1), "attention scores");
}
