// Whole-model checks of the GPT decoder: cached decoding equals the full
// forward pass (f32 and f64, with every positional feature switched on), the
// null slot with a zero value equals softmax1, precision of parameters,
// parameter counts, gradient flow into learned score parameters, traces.
// A disabled test times one forward+backward pass.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "model_test_util.h"
#include "compiler/jit/compiled.h"
#include "runtime/model/attention.h"
#include "runtime/model/gpt.h"

namespace posc::model {
namespace {

using namespace posc::model::testing;
using plan::Channel;

constexpr int64_t kVocab = 14;

struct Batch {
  torch::Tensor tokens, channels;
};

Batch sampleBatch() {
  auto channels = batchChannels({additionChannels({4, 5}, 6), additionChannels({5, 4}, 6),
                                 additionChannels({3, 6}, 6)});
  auto tokens = torch::randint(0, kVocab, {channels.size(1), channels.size(2)}, torch::kLong);
  return {tokens, channels};
}

torch::Tensor decodeIncrementally(Gpt& model, const Batch& batch, int64_t prefill) {
  KvCache cache;
  std::vector<torch::Tensor> logits;
  logits.push_back(model->forwardCached(batch.tokens.narrow(1, 0, prefill),
                                        batch.channels.narrow(2, 0, prefill), cache));
  EXPECT_EQ(cache.length(), prefill);
  for (int64_t t = prefill; t < batch.tokens.size(1); ++t)
    logits.push_back(model->forwardCached(batch.tokens.narrow(1, t, 1), batch.channels.narrow(2, t, 1), cache));
  EXPECT_EQ(cache.length(), batch.tokens.size(1));
  EXPECT_EQ(cache.keys.size(), 2u);
  return torch::cat(logits, 1);
}

TEST(KvCacheStore, AppendGrowsByDoublingAndKeepsWhatWasCached) {
  // (B, H, T, D) = (2, 1, T, 3), appended along dim 2.
  auto chunk = [](int64_t t, float base) { return torch::arange(2 * t * 3, torch::kFloat).reshape({2, 1, t, 3}) + base; };
  torch::Tensor store;
  auto a = chunk(2, 0), b = chunk(1, 100), c = chunk(2, 200);
  auto view = appendAlong(store, 0, a, 2);
  EXPECT_EQ(store.size(2), 2);  // no reserve: exactly what was appended
  EXPECT_TRUE(torch::equal(view, a));
  const void* before = store.data_ptr();
  view = appendAlong(store, 2, b, 2);
  EXPECT_EQ(store.size(2), 4);  // doubled
  EXPECT_TRUE(torch::equal(view, torch::cat({a, b}, 2)));
  view = appendAlong(store, 3, b, 2);
  EXPECT_EQ(store.size(2), 4);  // fits: written in place
  EXPECT_TRUE(torch::equal(view, torch::cat({a, b, b}, 2)));
  EXPECT_NE(store.data_ptr(), before);
  const void* same = store.data_ptr();
  view = appendAlong(store, 4, c, 2);
  EXPECT_EQ(store.size(2), 8);
  EXPECT_NE(store.data_ptr(), same);
  EXPECT_TRUE(torch::equal(view, torch::cat({a, b, b, c}, 2)));

  // A reserve sizes the first store; later appends within it do not move it.
  torch::Tensor reserved;
  appendAlong(reserved, 0, a, 2, /*reserve=*/10);
  EXPECT_EQ(reserved.size(2), 10);
  const void* kept = reserved.data_ptr();
  for (int64_t used = 2; used < 10; ++used) view = appendAlong(reserved, used, b, 2, 10);
  EXPECT_EQ(reserved.data_ptr(), kept);
  EXPECT_EQ(view.size(2), 10);
  EXPECT_TRUE(torch::equal(view.narrow(2, 9, 1), b));
}

void perturbScoreParams(Gpt& model) {
  // Give the null value and the params non-trivial values so that they matter.
  torch::NoGradGuard g;
  for (auto& kv : model->named_parameters())
    if (kv.key().find("null_value") != std::string::npos) kv.value().normal_(0, 0.5);
}

TEST(Gpt, CachedDecodeMatchesForwardF32) {
  torch::manual_seed(1);
  Gpt model(fullPlan(plan::Precision::F32), kVocab);
  model->eval();
  perturbScoreParams(model);
  auto batch = sampleBatch();
  torch::NoGradGuard g;
  auto full = model->forward(batch.tokens, batch.channels);
  ASSERT_EQ(full.sizes(), (std::vector<int64_t>{3, batch.tokens.size(1), kVocab}));
  EXPECT_EQ(full.scalar_type(), torch::kFloat);
  for (int64_t prefill : {1, 7}) {
    auto inc = decodeIncrementally(model, batch, prefill);
    EXPECT_LT((inc - full).abs().max().item<double>(), 1e-5) << "prefill " << prefill;
  }
  // An explicit stretch equal to eval_value gives the same logits as none.
  auto stretch = torch::full({3}, 2.0);
  EXPECT_LT((model->forward(batch.tokens, batch.channels, stretch) - full).abs().max().item<double>(), 1e-6);
  // A different stretch changes the scores (the column rotation is live).
  AttentionTrace same, other;
  model->forward(batch.tokens, batch.channels, stretch, &same);
  model->forward(batch.tokens, batch.channels, stretch * 1.7, &other);
  EXPECT_GT((same.scores[0] - other.scores[0]).abs().max().item<double>(), 1e-3);
}

TEST(Gpt, CachedDecodeMatchesForwardF64) {
  torch::manual_seed(2);
  Gpt model(fullPlan(plan::Precision::F64), kVocab);
  model->eval();
  perturbScoreParams(model);
  auto batch = sampleBatch();
  torch::NoGradGuard g;
  auto full = model->forward(batch.tokens, batch.channels);
  EXPECT_EQ(full.scalar_type(), torch::kDouble);
  auto inc = decodeIncrementally(model, batch, 5);
  EXPECT_LT((inc - full).abs().max().item<double>(), 1e-12);
}

// The fused JIT kernels inside the whole model: the same logits as the
// tensor-op lowering, and cached decoding (one query against growing keys)
// still matches the full forward pass.
TEST(Gpt, ScoreJitMatchesTensorOpsAndCachedDecodeF64) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  torch::manual_seed(2);
  Gpt model(fullPlan(plan::Precision::F64), kVocab);
  model->eval();
  perturbScoreParams(model);
  auto batch = sampleBatch();
  torch::NoGradGuard g;
  auto reference = model->forward(batch.tokens, batch.channels);
  model->setScoreJit(true);
  auto full = model->forward(batch.tokens, batch.channels);
  EXPECT_LT((full - reference).abs().max().item<double>(), 1e-12);
  auto inc = decodeIncrementally(model, batch, 5);
  EXPECT_LT((inc - full).abs().max().item<double>(), 1e-12);
}

TEST(Gpt, PrecisionOfParameters) {
  Gpt f64(fullPlan(plan::Precision::F64), kVocab);
  for (const auto& p : f64->parameters()) EXPECT_EQ(p.scalar_type(), torch::kDouble);
  for (const auto& b : f64->buffers()) EXPECT_EQ(b.scalar_type(), torch::kDouble);
  for (auto precision : {plan::Precision::F32, plan::Precision::Bf16Mixed}) {
    Gpt m(fullPlan(precision), kVocab);
    for (const auto& p : m->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat);
  }
}

// model.init_std sets the scale of every initial weight matrix; residual
// output projections get init_std / sqrt(2 x layers).
TEST(Gpt, InitialWeightsHaveTheDeclaredScale) {
  for (double init_std : {0.02, 0.1}) {
    plan::ExperimentPlan p = fullPlan(plan::Precision::F64);
    p.model.init_std = init_std;
    torch::manual_seed(3);
    Gpt m(p, kVocab);
    const double out_std = init_std / std::sqrt(2.0 * p.model.layers);
    int checked = 0;
    for (const auto& item : m->named_parameters()) {
      const std::string& name = item.key();
      const torch::Tensor& w = item.value();
      if (w.dim() != 2 || w.numel() < 1000) continue;  // matrices large enough for a sample std
      const bool residual_out = name.find("attn.out.weight") != std::string::npos ||
                                name.find("mlp.fc2.weight") != std::string::npos;
      const double want = residual_out ? out_std : init_std;
      // The sample std of n >= 1000 normal draws is within 10% with
      // overwhelming probability (its relative error is about 1 / sqrt(2n)).
      EXPECT_NEAR(w.std().item<double>(), want, 0.1 * want) << name;
      ++checked;
    }
    EXPECT_GE(checked, 4);
  }
}

// model.embedding_std sets the token embeddings' scale alone; the other
// matrices keep init_std.
TEST(Gpt, EmbeddingScaleIsSeparateFromTheWeights) {
  plan::ExperimentPlan p = fullPlan(plan::Precision::F64);
  p.model.init_std = 0.05;
  p.model.embedding_std = 1.0;
  torch::manual_seed(3);
  Gpt m(p, 200);  // a vocabulary large enough for the embedding's sample std
  int embeddings = 0, others = 0;
  for (const auto& item : m->named_parameters()) {
    const std::string& name = item.key();
    const torch::Tensor& w = item.value();
    if (w.dim() != 2 || w.numel() < 1000) continue;
    const bool residual_out = name.find("attn.out.weight") != std::string::npos ||
                              name.find("mlp.fc2.weight") != std::string::npos;
    const bool token = name.find("tok") != std::string::npos;
    const double want = token ? 1.0 : residual_out ? 0.05 / std::sqrt(2.0 * p.model.layers) : 0.05;
    EXPECT_NEAR(w.std().item<double>(), want, 0.1 * want) << name;
    ++(token ? embeddings : others);
  }
  EXPECT_EQ(embeddings, 1);
  EXPECT_GE(others, 4);
}

TEST(Gpt, NullSlotWithZeroValueEqualsSoftmax1) {
  torch::manual_seed(3);
  auto with_null = fullPlan(plan::Precision::F64);
  with_null.model.softmax = plan::SoftmaxKind::Standard;
  with_null.attention.null_slot = true;
  auto with_softmax1 = fullPlan(plan::Precision::F64);
  with_softmax1.model.softmax = plan::SoftmaxKind::Softmax1;
  with_softmax1.attention.null_slot = false;
  Gpt a(with_null, kVocab), b(with_softmax1, kVocab);
  {
    torch::NoGradGuard g;
    auto bp = b->named_parameters();
    for (auto& kv : a->named_parameters()) {
      if (kv.key().find("null_value") != std::string::npos) {
        EXPECT_TRUE(torch::all(kv.value() == 0).item<bool>());  // initialised to zero
        continue;
      }
      kv.value().copy_(bp[kv.key()]);
    }
  }
  auto batch = sampleBatch();
  auto la = a->forward(batch.tokens, batch.channels), lb = b->forward(batch.tokens, batch.channels);
  EXPECT_LT((la - lb).abs().max().item<double>(), 1e-12);
}

TEST(Gpt, GradientsReachLearnedScoreParamsAndAllWeights) {
  torch::manual_seed(4);
  Gpt model(fullPlan(plan::Precision::F64), kVocab);
  perturbScoreParams(model);
  auto batch = sampleBatch();
  auto stretch = torch::tensor({1.0, 2.5, 3.5}, torch::kDouble);
  model->forward(batch.tokens, batch.channels, stretch).pow(2).sum().backward();
  auto params = model->named_parameters();
  for (auto& kv : params) {
    ASSERT_TRUE(kv.value().grad().defined()) << kv.key();
    EXPECT_GT(kv.value().grad().abs().sum().item<double>(), 0.0) << kv.key();
  }
  ASSERT_NE(params.find("score_params.decay_rate"), nullptr);
  ASSERT_NE(params.find("score_params.alibi_slope"), nullptr);
  EXPECT_EQ(params["score_params.decay_rate"].sizes(), (std::vector<int64_t>{2}));
  EXPECT_EQ(params["score_params.alibi_slope"].dim(), 0);
}

// The training path computes logits only at the masked positions, leaving
// out the rows after each row's last masked position and the last layer's
// unmasked rows. Its logits and every gradient must equal the full forward
// pass's at those positions (f64): masks with gaps, a row with nothing
// masked, stretch, every positional feature, with the JIT and without.
TEST(Gpt, MaskedForwardEqualsForwardAtMaskedPositions) {
  for (bool jit : {false, true}) {
    if (jit && !jit::available()) continue;
    SCOPED_TRACE(jit ? "jit on" : "jit off");
    torch::manual_seed(6);
    Gpt model(fullPlan(plan::Precision::F64), kVocab);
    model->setScoreJit(jit);
    perturbScoreParams(model);
    auto batch = sampleBatch();
    const int64_t L = batch.tokens.size(1);
    auto mask = torch::zeros({3, L}, torch::kBool);
    mask[0].narrow(0, 5, 4).fill_(true);  // an answer in the middle of the row
    mask[0][L - 1] = true;                // and the last position: a gap between
    mask[2].narrow(0, 2, 3).fill_(true);  // row 1: nothing masked
    auto stretch = torch::tensor({1.0, 2.5, 3.5}, torch::kDouble);
    auto weights = torch::randn({mask.sum().item<int64_t>(), kVocab}, torch::kDouble);

    auto full = model->forward(batch.tokens, batch.channels, stretch);
    auto expected = full.reshape({-1, kVocab}).index_select(0, mask.reshape({-1}).nonzero().reshape({-1}));
    (expected * weights).sum().backward();
    std::map<std::string, torch::Tensor> grads;
    for (auto& kv : model->named_parameters()) grads[kv.key()] = kv.value().grad().clone();
    model->zero_grad();

    auto masked = model->forwardMasked(batch.tokens, batch.channels, stretch, mask);
    ASSERT_EQ(masked.sizes(), expected.sizes());
    EXPECT_LT((masked - expected).abs().max().item<double>(), 1e-12);
    (masked * weights).sum().backward();
    for (auto& kv : model->named_parameters()) {
      ASSERT_TRUE(kv.value().grad().defined()) << kv.key();
      const double scale = std::max(1.0, grads[kv.key()].abs().max().item<double>());
      EXPECT_LT((kv.value().grad() - grads[kv.key()]).abs().max().item<double>(), 1e-12 * scale) << kv.key();
    }
  }
}

TEST(Gpt, MaskedForwardWithNothingMaskedIsEmpty) {
  torch::manual_seed(7);
  Gpt model(fullPlan(plan::Precision::F64), kVocab);
  auto batch = sampleBatch();
  auto none = torch::zeros({3, batch.tokens.size(1)}, torch::kBool);
  EXPECT_EQ(model->forwardMasked(batch.tokens, batch.channels, {}, none).sizes(),
            (std::vector<int64_t>{0, kVocab}));
}

TEST(Gpt, NonLearnedParamsAreBuffersAndTraceHasShapes) {
  auto p = tinyPlan(3, 32, 2);
  p.attention.params.push_back(param("decay.rate", true, false, {0.5, 0.5}));
  p.attention.score_terms.push_back(decayTerm(0));
  Gpt model(p, kVocab);
  EXPECT_EQ(model->named_parameters().find("score_params.decay_rate"), nullptr);
  EXPECT_NE(model->named_buffers().find("score_params.decay_rate"), nullptr);
  auto batch = sampleBatch();
  AttentionTrace trace;
  model->forward(batch.tokens, batch.channels, {}, &trace);
  ASSERT_EQ(trace.weights.size(), 3u);
  ASSERT_EQ(trace.scores.size(), 3u);
  const int64_t L = batch.tokens.size(1);
  for (size_t l = 0; l < 3; ++l) {
    EXPECT_EQ(trace.weights[l].sizes(), (std::vector<int64_t>{3, 2, L, L}));
    EXPECT_EQ(trace.scores[l].sizes(), (std::vector<int64_t>{3, 2, L, L}));
    EXPECT_LT((trace.weights[l].sum(-1) - 1).abs().max().item<double>(), 1e-5);
    EXPECT_EQ(trace.weights[l].triu(1).abs().max().item<double>(), 0.0);  // causal
  }
}

TEST(Gpt, ParameterCountOfTheReferenceModel) {
  // 6 layers, width 384, 6 heads of 64, MLP 1536 (GELU), LayerNorm, vocab 14, tied:
  //   token embedding           14 * 384                      =      5,376
  //   per layer: norm1, norm2   2 * (384 + 384)               =      1,536
  //              qkv            384 * 1152 + 1152             =    443,520
  //              out            384 * 384 + 384               =    147,840
  //              fc1            384 * 1536 + 1536             =    591,360
  //              fc2            1536 * 384 + 384              =    590,208
  //              layer total                                  =  1,774,464
  //   6 layers                                                 = 10,646,784
  //   final norm                384 + 384                     =        768
  //   total                                                    = 10,652,928
  plan::ExperimentPlan p;  // the plan defaults are this model
  p.model.layers = 6;
  p.model.width = 384;
  p.model.heads = 6;
  p.model.head_dim = 64;
  p.model.mlp_hidden = 1536;
  p.model.tied_embeddings = true;
  Gpt model(p, kVocab);
  EXPECT_EQ(model->parameterCount(), 10652928);
  // Untied adds a bias-free head of 14 * 384; RMSNorm drops 13 biases of 384.
  p.model.tied_embeddings = false;
  EXPECT_EQ(Gpt(p, kVocab)->parameterCount(), 10652928 + 14 * 384);
  p.model.norm = plan::NormKind::RmsNorm;
  EXPECT_EQ(Gpt(p, kVocab)->parameterCount(), 10652928 + 14 * 384 - 13 * 384);
}

TEST(Gpt, InitialisationStatistics) {
  torch::manual_seed(5);
  auto p = tinyPlan(8, 256, 4);
  Gpt model(p, kVocab);
  auto params = model->named_parameters();
  EXPECT_NEAR(params["block0.attn.qkv.weight"].std().item<double>(), 0.02, 0.001);
  EXPECT_NEAR(params["block0.attn.out.weight"].std().item<double>(), 0.02 / 4.0, 0.0003);
  EXPECT_NEAR(params["block3.mlp.fc2.weight"].std().item<double>(), 0.02 / 4.0, 0.0003);
  EXPECT_EQ(params["block3.mlp.fc1.bias"].abs().max().item<double>(), 0.0);
  EXPECT_EQ(params["norm_f.weight"].min().item<double>(), 1.0);
}

// Today's blocks on the whole feature set: 2 query heads on 1 key/value
// head of dimension 6 (not 32 / 2), RMSNorm on queries and keys, SwiGLU, no
// biases; the rotations and key zeroing moved onto the 3 pairs of a head.
plan::ExperimentPlan todaysBlocksPlan() {
  plan::ExperimentPlan p = fullPlan(plan::Precision::F64);
  p.model.kv_heads = 1;
  p.model.head_dim = 6;
  p.model.mlp = plan::MlpKind::Swiglu;
  p.model.qk_norm = true;
  p.model.bias = false;
  auto& r = p.attention.rotations;  // position, column, row
  r[0].pair_begin = 0, r[0].pair_end = 1;
  r[1].pair_begin = 1, r[1].pair_end = 2;
  r[2].pair_begin = 2, r[2].pair_end = 3;
  p.attention.key_zeroing[0].pair_begin = 1, p.attention.key_zeroing[0].pair_end = 2;
  return p;
}

TEST(Gpt, TodaysBlocksDecodeAndFusedKernelsMatchForward) {
  torch::manual_seed(3);
  Gpt model(todaysBlocksPlan(), kVocab);
  model->eval();
  perturbScoreParams(model);
  auto batch = sampleBatch();
  torch::NoGradGuard g;
  auto full = model->forward(batch.tokens, batch.channels);
  EXPECT_LT((decodeIncrementally(model, batch, 5) - full).abs().max().item<double>(), 1e-12);
  if (jit::available()) {
    model->setScoreJit(true);
    EXPECT_LT((model->forward(batch.tokens, batch.channels) - full).abs().max().item<double>(), 1e-12);
  }
}

TEST(Gpt, GroupedQueryHeadsShareTheirKeysAndValues) {
  // Both query heads read the one key/value head: their traced keys (before
  // rotation) are equal, their queries not.
  torch::manual_seed(4);
  plan::ExperimentPlan p = todaysBlocksPlan();
  p.model.init_std = 0.5;  // projections far above the norm's eps: rms(x / rms(x)) is 1 within 1e-4
  Gpt model(p, kVocab);
  auto batch = sampleBatch();
  AttentionTrace trace;
  torch::NoGradGuard g;
  model->forward(batch.tokens, batch.channels, {}, &trace);
  const torch::Tensor& k = trace.keys[0];  // (B, H, L, D)
  const torch::Tensor& q = trace.queries[0];
  ASSERT_EQ(k.size(1), 2);
  ASSERT_EQ(k.size(3), 6);
  EXPECT_TRUE(torch::equal(k.select(1, 0), k.select(1, 1)));
  EXPECT_FALSE(torch::equal(q.select(1, 0), q.select(1, 1)));
  // qk_norm: every query and key head has unit root-mean-square (gain 1).
  auto rms = [](const torch::Tensor& t) { return t.pow(2).mean(-1).sqrt(); };
  EXPECT_LT((rms(q) - 1).abs().max().item<double>(), 1e-4);
  EXPECT_LT((rms(k) - 1).abs().max().item<double>(), 1e-4);
}

TEST(Gpt, ParameterCountOfTodaysBlocks) {
  // 1 layer, width 4, 2 heads sharing 1 key/value head of 4, SwiGLU hidden 6,
  // RMSNorm, qk_norm, no biases, tied, vocab 14 (AdderBoard's 228-parameter
  // entry, whose vocabulary has 10 tokens: 228 + 4 x 4):
  //   embedding 14 x 4 = 56; qkv 4 x (2 + 1 + 1) x 4 = 64; out 8 x 4 = 32;
  //   q_norm, k_norm 4 + 4; norms 3 x 4; fc1 4 x 12 = 48; fc2 6 x 4 = 24.
  auto p = tinyPlan(1, 4, 2);
  p.model.kv_heads = 1;
  p.model.head_dim = 4;
  p.model.mlp = plan::MlpKind::Swiglu;
  p.model.mlp_hidden = 6;
  p.model.norm = plan::NormKind::RmsNorm;
  p.model.qk_norm = true;
  p.model.bias = false;
  EXPECT_EQ(Gpt(p, kVocab)->parameterCount(), 56 + 64 + 32 + 8 + 12 + 48 + 24);
  // LayerNorm without biases has gains only; with biases every affine layer
  // and norm gets one.
  p.model.norm = plan::NormKind::LayerNorm;
  EXPECT_EQ(Gpt(p, kVocab)->parameterCount(), 244);
  p.model.bias = true;
  EXPECT_EQ(Gpt(p, kVocab)->parameterCount(), 244 + 3 * 4 + 16 + 4 + 12 + 4);
}

TEST(Gpt, PyTorchInitDrawsAtOneOverRootFanIn) {
  torch::manual_seed(6);
  auto p = tinyPlan(2, 256, 4);
  p.model.init = plan::InitKind::PyTorch;
  Gpt model(p, kVocab);
  auto params = model->named_parameters();
  // U(-b, b) has standard deviation b / sqrt(3), b = 1 / sqrt(fan_in).
  const double b256 = 1 / std::sqrt(256.0), b1024 = 1 / std::sqrt(1024.0);
  EXPECT_NEAR(params["block0.attn.qkv.weight"].std().item<double>(), b256 / std::sqrt(3.0), 0.002);
  EXPECT_LE(params["block0.attn.qkv.weight"].abs().max().item<double>(), b256);
  EXPECT_NEAR(params["block1.mlp.fc2.weight"].std().item<double>(), b1024 / std::sqrt(3.0), 0.001);
  EXPECT_LE(params["block1.mlp.fc2.bias"].abs().max().item<double>(), b1024);
  EXPECT_GT(params["block1.mlp.fc2.bias"].abs().max().item<double>(), b1024 / 2);
  EXPECT_NEAR(params["tok_emb.weight"].std().item<double>(), 1.0, 0.15);
  EXPECT_EQ(params["norm_f.weight"].min().item<double>(), 1.0);
}

// Timing of one forward+backward at batch 64 x 40 tokens, single thread.
// Run with --gtest_also_run_disabled_tests --gtest_filter='*Speed*'.
TEST(Gpt, DISABLED_ForwardBackwardSpeed) {
  torch::set_num_threads(1);
  struct Size {
    int layers, width, heads, hidden;
  };
  for (Size s : {Size{2, 64, 4, 256}, Size{6, 384, 6, 1536}}) {
    auto p = tinyPlan(s.layers, s.width, s.heads);
    p.model.mlp_hidden = s.hidden;
    plan::Rotation col;
    col.channel = Channel::Column;
    col.pair_begin = 0;
    col.pair_end = p.model.head_dim / 2;
    col.stretch = plan::Distribution{};
    p.attention.rotations = {col};
    p.attention.params.push_back(param("decay.rate", true, true, std::vector<double>(s.heads, 0.1)));
    p.attention.score_terms.push_back(decayTerm(0));
    Gpt model(p, kVocab);
    auto tokens = torch::randint(0, kVocab, {64, 40}, torch::kLong);
    auto channels = batchChannels(std::vector<torch::Tensor>(64, additionChannels({14, 14}, 9)));
    ASSERT_EQ(channels.size(2), 40);
    auto stretch = torch::rand({64}) + 1;
    auto step = [&] {
      model->zero_grad();
      model->forward(tokens, channels, stretch).logsumexp(-1).mean().backward();
    };
    step();
    const int reps = s.layers == 2 ? 20 : 3;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) step();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
    std::printf("forward+backward %dx%d (%lld params), batch 64x40, 1 thread: %.1f ms\n", s.layers, s.width,
                static_cast<long long>(model->parameterCount()), ms);
  }
}

}  // namespace
}  // namespace posc::model
