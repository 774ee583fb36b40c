// The fused attention core (runtime/model/attention_core.h) against the
// tensor path it replaces: outputs and every gradient, in float64 (1e-12) and
// float32 (1e-5), with every positional feature the core handles (rotations
// on selected heads, stretch, xPos scales, key zeroing on one head, score terms
// with learned per-head and scalar parameters, query and key exemptions,
// softmax and softmax1), on dense rows and on the packed rows of a training
// pass. Also the block products it is built on, BLAS and loops, against
// products written out.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>

#include "model_test_util.h"
#include "compiler/jit/compiled.h"
#include "runtime/model/attention.h"
#include "runtime/model/attention_core.h"
#include "runtime/model/block_gemm.h"
#include "runtime/model/fused_attention.h"
#include "runtime/model/gpt.h"
#include "runtime/model/score_formula.h"

namespace posc::model {
namespace {

using namespace posc::model::testing;

constexpr int64_t kVocab = 14;

// fullPlan without the null slot (the core leaves it to the tensor path),
// with xPos scales on the column rotation and key zeroing on head 1 only.
plan::ExperimentPlan corePlan(plan::Precision precision, plan::SoftmaxKind softmax) {
  auto p = fullPlan(precision);
  p.attention.null_slot = false;
  p.model.softmax = softmax;
  p.attention.rotations[1].xpos_scale_base = 16;
  p.attention.key_zeroing[0].heads = {1};
  return p;
}

torch::Tensor problemChannels() {
  return batchChannels({additionChannels({4, 5}, 6), additionChannels({5, 4}, 6), additionChannels({3, 6}, 6)});
}

double maxDiff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

// The tensor path of AttentionImpl::forward, from the projection on.
torch::Tensor tensorPath(const torch::Tensor& projected, int64_t B, int64_t L, int64_t H, int64_t D,
                         const PositionalContext& ctx, const torch::Tensor& channels,
                         const plan::AttentionPlan& attention, plan::SoftmaxKind softmax,
                         const std::vector<torch::Tensor>& params) {
  auto parts = projected.reshape({B, L, 3, H, D}).permute({2, 0, 3, 1, 4}).unbind(0);
  auto q = applyRotary(parts[0], ctx, Side::Query);
  auto k = applyKeyZeroing(applyRotary(parts[1], ctx, Side::Key), ctx);
  auto s = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(D));
  s = applyScoreTerms(s, channels, channels, attention, params);
  auto w = attentionWeights(s, softmax, false);
  return torch::matmul(w, parts[2]).transpose(1, 2).reshape({B * L, H * D});
}

void compareCore(torch::ScalarType dtype, plan::SoftmaxKind softmax, double tol) {
  torch::manual_seed(11);
  auto p = corePlan(dtype == torch::kDouble ? plan::Precision::F64 : plan::Precision::F32, softmax);
  const int64_t H = p.model.heads, D = p.model.head_dim;
  auto channels = problemChannels();
  const int64_t B = channels.size(1), L = channels.size(2);
  auto stretch = torch::tensor({1.0, 2.5, 3.5}, torch::kDouble);
  auto ctx = buildPositionalContext(p.attention, p.model, channels, stretch, dtype);
  ASSERT_TRUE(ctx.query_scale.defined());
  ASSERT_EQ(ctx.cos.size(1), H);       // a rotation selects heads
  ASSERT_EQ(ctx.key_zero.size(1), H);  // zeroing selects heads
  auto projected = torch::randn({B * L, 3 * H * D}, torch::dtype(dtype)).requires_grad_(true);
  std::vector<torch::Tensor> params = {torch::tensor({0.2, 0.4}, torch::dtype(dtype)).requires_grad_(true),
                                       torch::tensor(0.3, torch::dtype(dtype)).requires_grad_(true)};
  auto weights = torch::randn({B * L, H * D}, torch::dtype(dtype));

  auto expected = tensorPath(projected, B, L, H, D, ctx, channels, p.attention, softmax, params);
  (expected * weights).sum().backward();
  auto g_proj = projected.grad().clone();
  auto g_rate = params[0].grad().clone(), g_slope = params[1].grad().clone();
  projected.grad().zero_();
  params[0].grad().zero_();
  params[1].grad().zero_();

  ASSERT_TRUE(attentionCoreSupported(projected, ctx));
  auto got = attentionCore(projected, RowLayout::dense(B, L), ctx, channels, channels, p.attention, softmax, params,
                           H, D);
  ASSERT_EQ(got.sizes(), expected.sizes());
  EXPECT_LT(maxDiff(got, expected), tol);
  (got * weights).sum().backward();
  EXPECT_LT(maxDiff(projected.grad(), g_proj), tol * std::max(1.0, g_proj.abs().max().item<double>()));
  EXPECT_LT(maxDiff(params[0].grad(), g_rate), tol * std::max(1.0, g_rate.abs().max().item<double>()));
  EXPECT_LT(maxDiff(params[1].grad(), g_slope), tol * std::max(1.0, g_slope.abs().max().item<double>()));
  EXPECT_GT(g_rate.abs().max().item<double>(), 0.0);  // the learned rates do receive a gradient
}

TEST(AttentionCore, EqualsTheTensorPathF64) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  compareCore(torch::kDouble, plan::SoftmaxKind::Standard, 1e-12);
  compareCore(torch::kDouble, plan::SoftmaxKind::Softmax1, 1e-12);
}

TEST(AttentionCore, EqualsTheTensorPathF32) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  compareCore(torch::kFloat, plan::SoftmaxKind::Standard, 1e-5);
  compareCore(torch::kFloat, plan::SoftmaxKind::Softmax1, 1e-5);
}

TEST(AttentionCore, RowLayoutFromPackedRows) {
  RowLayout layout;
  // Length 5: sequence 0 keeps positions 0-4, sequence 1 none, sequence 2 positions 0-2.
  ASSERT_TRUE(RowLayout::fromPackedRows(torch::tensor({0, 1, 2, 3, 4, 10, 11, 12}, torch::kLong), 3, 5, &layout));
  EXPECT_EQ(layout.batch, 3);
  EXPECT_EQ(layout.length, 5);
  EXPECT_EQ(layout.first, (std::vector<int64_t>{0, 0, 5}));
  EXPECT_EQ(layout.count, (std::vector<int64_t>{5, 0, 3}));
  // A gap inside a sequence (position 2 missing) is not a prefix.
  EXPECT_FALSE(RowLayout::fromPackedRows(torch::tensor({0, 1, 3}, torch::kLong), 1, 5, &layout));
  // Not starting at position 0.
  EXPECT_FALSE(RowLayout::fromPackedRows(torch::tensor({1, 2}, torch::kLong), 1, 5, &layout));
  auto dense = RowLayout::dense(2, 4);
  EXPECT_EQ(dense.first, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(dense.count, (std::vector<int64_t>{4, 4}));
}

// The whole model with the JIT (the core) and without (the tensor path):
// logits and every parameter's gradient, on the dense forward pass and on the
// packed rows of a training pass.
void compareModels(plan::Precision precision, double tol) {
  for (bool packed : {false, true}) {
    SCOPED_TRACE(packed ? "packed rows" : "dense rows");
    torch::manual_seed(5);
    auto p = corePlan(precision, plan::SoftmaxKind::Standard);
    Gpt tensor_path(p, kVocab), core(p, kVocab);
    {
      torch::NoGradGuard g;
      auto from = tensor_path->named_parameters();
      for (auto& kv : core->named_parameters()) kv.value().copy_(from[kv.key()]);
    }
    core->setScoreJit(true);
    auto channels = problemChannels();
    const int64_t L = channels.size(2);
    auto tokens = torch::randint(0, kVocab, {3, L}, torch::kLong);
    auto stretch = torch::tensor({1.0, 2.5, 3.5}, torch::kDouble);
    auto mask = torch::zeros({3, L}, torch::kBool);
    mask[0].narrow(0, 5, 4).fill_(true);
    mask[2].narrow(0, 2, 3).fill_(true);  // sequence 1: nothing wanted, no rows at all
    std::map<std::string, torch::Tensor> grads;
    torch::Tensor reference;
    for (Gpt* m : {&tensor_path, &core}) {
      auto logits = packed ? (*m)->forwardMasked(tokens, channels, stretch, mask)
                           : (*m)->forward(tokens, channels, stretch);
      torch::manual_seed(9);
      auto weights = torch::randn(logits.sizes(), logits.options());
      (logits * weights).sum().backward();
      if (m == &tensor_path) {
        reference = logits.detach();
        for (auto& kv : (*m)->named_parameters()) grads[kv.key()] = kv.value().grad().clone();
        continue;
      }
      EXPECT_LT(maxDiff(logits, reference), tol);
      for (auto& kv : (*m)->named_parameters()) {
        ASSERT_TRUE(kv.value().grad().defined()) << kv.key();
        const double scale = std::max(1.0, grads[kv.key()].abs().max().item<double>());
        EXPECT_LT(maxDiff(kv.value().grad(), grads[kv.key()]), tol * scale) << kv.key();
      }
    }
  }
}

TEST(AttentionCore, ModelWithTheCoreEqualsTheTensorPathF64) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  compareModels(plan::Precision::F64, 1e-12);
}

TEST(AttentionCore, ModelWithTheCoreEqualsTheTensorPathF32) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  compareModels(plan::Precision::F32, 1e-5);
}

TEST(AttentionCore, NonFiniteScoresNameTheLayerAndTerms) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  auto p = corePlan(plan::Precision::F64, plan::SoftmaxKind::Standard);
  Gpt model(p, kVocab);
  model->setScoreJit(true);
  {
    torch::NoGradGuard g;
    for (auto& kv : model->named_parameters())
      if (kv.key().find("block1.attn.qkv.weight") != std::string::npos)
        kv.value().fill_(std::nan(""));
  }
  auto channels = problemChannels();
  auto tokens = torch::randint(0, kVocab, {3, channels.size(2)}, torch::kLong);
  try {
    model->forward(tokens, channels);
    FAIL() << "expected NonFiniteScores";
  } catch (const NonFiniteScores& e) {
    EXPECT_NE(std::string(e.what()).find("layer 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'decay'"), std::string::npos) << e.what();
  }
}

// C = alpha op(A) op(B) + beta C for 3 x 2 results from 3 x 4 / 4 x 2 operands,
// every transpose combination, row strides wider than the rows, against the
// sums written out.
template <typename T>
void checkGemm(bool use_loops) {
  const T A[3][4] = {{1, 2, 3, 4}, {-1, 0, 2, 5}, {0.5, 1, -2, 3}};
  const T Bm[4][2] = {{1, -1}, {2, 0}, {0, 3}, {-2, 1}};
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      // Stored operands, with row strides 6 and 5.
      std::vector<T> a(4 * 6, T(99)), b(4 * 5, T(99)), c(3 * 7, T(1));
      for (int i = 0; i < 3; ++i)
        for (int p = 0; p < 4; ++p) (ta ? a[p * 6 + i] : a[i * 6 + p]) = A[i][p];
      for (int p = 0; p < 4; ++p)
        for (int j = 0; j < 2; ++j) (tb ? b[j * 5 + p] : b[p * 5 + j]) = Bm[p][j];
      const T alpha = 2, beta = 0.5;
      if (use_loops)
        blockGemmLoops<T>(ta, tb, 3, 2, 4, alpha, a.data(), 6, b.data(), 5, beta, c.data(), 7);
      else
        blockGemm(ta, tb, 3, 2, 4, alpha, a.data(), 6, b.data(), 5, beta, c.data(), 7);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 2; ++j) {
          T sum = 0;
          for (int p = 0; p < 4; ++p) sum += A[i][p] * Bm[p][j];
          EXPECT_DOUBLE_EQ(c[i * 7 + j], alpha * sum + beta * 1) << ta << tb << " " << i << "," << j;
        }
      EXPECT_EQ(c[2], T(1));  // past the result's columns: untouched
    }
}

TEST(BlockGemm, EveryTransposeAgainstTheSumsWrittenOut) {
  if (blockGemmUsesBlas()) {  // Debian's LibTorch links one; a static MKL build may not export it
    checkGemm<float>(false);
    checkGemm<double>(false);
  }
  checkGemm<float>(true);
  checkGemm<double>(true);
}

}  // namespace
}  // namespace posc::model
