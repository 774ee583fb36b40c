// Fused attention kernels and elementwise maps from the JIT, against a scalar
// reference built from the interpreter (forward) and central finite
// differences of that reference (backward), and libmvec's vector math
// against libm.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "compiler/jit/compiled.h"

using namespace posc;
using formula::NodeId;
using formula::Op;

namespace {

constexpr int kC = plan::kChannelCount;

plan::Formula decayFormula(int channel, int param) {
  // s * exp(-p * abs(q.c - k.c))
  using N = plan::FormulaNode;
  plan::Formula f;
  auto push = [&](N n) {
    f.nodes.push_back(n);
    return static_cast<int>(f.nodes.size() - 1);
  };
  N n;
  n.op = N::Op::Score;
  int s = push(n);
  n = {}; n.op = N::Op::Param; n.param = param; int p = push(n);
  n = {}; n.op = N::Op::QChannel; n.channel = static_cast<plan::Channel>(channel); int q = push(n);
  n = {}; n.op = N::Op::KChannel; n.channel = static_cast<plan::Channel>(channel); int k = push(n);
  n = {}; n.op = N::Op::Sub; n.a = q; n.b = k; int d = push(n);
  n = {}; n.op = N::Op::Abs; n.a = d; int ad = push(n);
  n = {}; n.op = N::Op::Mul; n.a = p; n.b = ad; int m = push(n);
  n = {}; n.op = N::Op::Neg; n.a = m; int neg = push(n);
  n = {}; n.op = N::Op::Exp; n.a = neg; int e = push(n);
  n = {}; n.op = N::Op::Mul; n.a = s; n.b = e; push(n);
  return f;
}

struct Block {
  int Lq, Lk;
  std::vector<double> scores, qch, kch, params;
};

Block randomBlock(int Lq, int Lk, int nparams, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 2.0);
  std::uniform_int_distribution<int> kind(0, 2), col(0, 12);
  Block b{Lq, Lk, {}, {}, {}, {}};
  for (int i = 0; i < Lq * Lk; ++i) b.scores.push_back(normal(rng));
  b.qch.assign(kC * Lq, 0.0);
  b.kch.assign(kC * Lk, 0.0);
  for (int j = 0; j < Lk; ++j) {
    b.kch[0 * Lk + j] = j;
    b.kch[1 * Lk + j] = col(rng);
    b.kch[2 * Lk + j] = j % 3;
    b.kch[3 * Lk + j] = kind(rng);
  }
  for (int i = 0; i < Lq; ++i)  // queries are the last Lq keys
    for (int c = 0; c < kC; ++c) b.qch[c * Lq + i] = b.kch[c * Lk + (Lk - Lq + i)];
  for (int p = 0; p < nparams; ++p) b.params.push_back(0.05 + 0.1 * p);
  return b;
}

// Reference forward pass in double, from the interpreter.
std::vector<double> referenceForward(const jit::AttentionSpec& spec, const Block& b, int head) {
  formula::Graph g;
  NodeId chain = jit::buildTermChain(g, spec.terms);
  const int W = b.Lk + (spec.null_slot ? 1 : 0);
  std::vector<double> probs(b.Lq * W, 0.0);
  for (int i = 0; i < b.Lq; ++i) {
    const int limit = b.Lk - b.Lq + i + 1;
    std::vector<double> post(limit);
    double m = spec.null_slot || spec.softmax == plan::SoftmaxKind::Softmax1 ? 0.0 : -INFINITY;
    for (int j = 0; j < limit; ++j) {
      formula::Env env;
      env.score = b.scores[i * b.Lk + j];
      for (int c = 0; c < kC; ++c) {
        env.q_channel[c] = b.qch[c * b.Lq + i];
        env.k_channel[c] = b.kch[c * b.Lk + j];
      }
      env.head = head;
      env.params = b.params;
      post[j] = formula::interpret(g, chain, env);
      m = std::max(m, post[j]);
    }
    double sum = 0;
    for (int j = 0; j < limit; ++j) sum += std::exp(post[j] - m);
    double e0 = std::exp(-m);
    if (spec.null_slot) sum += e0;
    if (spec.softmax == plan::SoftmaxKind::Softmax1) sum += e0;
    for (int j = 0; j < limit; ++j) probs[i * W + j] = std::exp(post[j] - m) / sum;
    if (spec.null_slot) probs[i * W + b.Lk] = e0 / sum;
  }
  return probs;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <typename T>
std::vector<double> runForward(const jit::CompiledAttention& k, const jit::AttentionSpec& spec,
                               const Block& b, int head, int64_t* bad = nullptr) {
  const int W = b.Lk + (spec.null_slot ? 1 : 0);
  auto s = cast<T>(b.scores), q = cast<T>(b.qch), kk = cast<T>(b.kch), p = cast<T>(b.params);
  std::vector<T> out(b.Lq * W, T(-1));
  auto fn = reinterpret_cast<jit::ForwardFn<T>>(k.forward());
  int64_t r = fn(s.data(), out.data(), q.data(), kk.data(), p.data(), b.Lq, b.Lk, head);
  if (bad) *bad = r;
  return std::vector<double>(out.begin(), out.end());
}

jit::AttentionSpec decaySpec(jit::DType dtype, plan::SoftmaxKind softmax, bool null_slot) {
  jit::AttentionSpec spec;
  spec.dtype = dtype;
  spec.softmax = softmax;
  spec.null_slot = null_slot;
  plan::ScoreTerm t;
  t.name = "decay";
  t.formula = decayFormula(1, 0);
  t.exempt_keys.insert(plan::TokenKind::Separator);
  spec.terms.push_back(t);
  plan::ScoreTerm t2;  // a second term on two heads only, with a query exemption
  t2.name = "alibi";
  t2.formula = decayFormula(0, 1);
  t2.heads = {1, 3};
  t2.exempt_queries.insert(plan::TokenKind::Special);
  spec.terms.push_back(t2);
  spec.learned = {true, true};
  return spec;
}

}  // namespace

class AttentionKernelTest
    : public ::testing::TestWithParam<std::tuple<plan::SoftmaxKind, bool>> {};

TEST_P(AttentionKernelTest, ForwardMatchesReferenceInF64AndF32) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  auto [softmax, null_slot] = GetParam();
  for (auto dtype : {jit::DType::F64, jit::DType::F32}) {
    auto spec = decaySpec(dtype, softmax, null_slot);
    const auto& k = jit::compileAttention(spec);
    for (int head : {0, 1}) {
      Block b = randomBlock(37, 45, 2, 7u + head);
      auto ref = referenceForward(spec, b, head);
      int64_t bad = -1;
      auto got = dtype == jit::DType::F64 ? runForward<double>(k, spec, b, head, &bad)
                                          : runForward<float>(k, spec, b, head, &bad);
      EXPECT_EQ(bad, 0);
      const double tol = dtype == jit::DType::F64 ? 1e-13 : 2e-6;
      for (size_t i = 0; i < ref.size(); ++i)
        ASSERT_NEAR(got[i], ref[i], tol * (1 + std::fabs(ref[i]))) << "entry " << i;
    }
  }
}

TEST_P(AttentionKernelTest, BackwardMatchesFiniteDifferencesInF64) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  auto [softmax, null_slot] = GetParam();
  auto spec = decaySpec(jit::DType::F64, softmax, null_slot);
  const auto& k = jit::compileAttention(spec);
  const int head = 3;
  Block b = randomBlock(9, 13, 2, 99);
  const int W = b.Lk + (null_slot ? 1 : 0);
  std::mt19937 rng(5);
  std::normal_distribution<double> normal;
  std::vector<double> w(b.Lq * W);
  for (auto& x : w) x = normal(rng);
  auto loss = [&](const Block& bb) {
    auto p = referenceForward(spec, bb, head);
    double l = 0;
    for (size_t i = 0; i < p.size(); ++i) l += w[i] * p[i];
    return l;
  };
  auto probs = runForward<double>(k, spec, b, head);
  std::vector<double> gscores(b.Lq * b.Lk, -7.0), gparams = {0.5, 0.0};
  reinterpret_cast<jit::BackwardFn<double>>(k.backward())(
      b.scores.data(), probs.data(), w.data(), gscores.data(), gparams.data(), b.qch.data(),
      b.kch.data(), b.params.data(), b.Lq, b.Lk, head);
  const double h = 1e-6;
  for (int idx = 0; idx < b.Lq * b.Lk; ++idx) {
    Block bp = b, bm = b;
    bp.scores[idx] += h;
    bm.scores[idx] -= h;
    double fd = (loss(bp) - loss(bm)) / (2 * h);
    ASSERT_NEAR(gscores[idx], fd, 1e-8) << "score " << idx;
  }
  for (int p = 0; p < 2; ++p) {
    Block bp = b, bm = b;
    bp.params[p] += h;
    bm.params[p] -= h;
    double fd = (loss(bp) - loss(bm)) / (2 * h);
    // gparams accumulates: param 0 started at 0.5.
    EXPECT_NEAR(gparams[p] - (p == 0 ? 0.5 : 0.0), fd, 1e-8) << "param " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Softmaxes, AttentionKernelTest,
    ::testing::Combine(::testing::Values(plan::SoftmaxKind::Standard, plan::SoftmaxKind::Softmax1),
                       ::testing::Bool()));

TEST(CompiledAttention, CountsRowsWithNonFiniteScores) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  auto spec = decaySpec(jit::DType::F32, plan::SoftmaxKind::Standard, false);
  const auto& k = jit::compileAttention(spec);
  Block b = randomBlock(5, 5, 2, 3);
  b.scores[2 * 5 + 1] = NAN;  // row 2 sees key 1
  b.scores[4 * 5 + 0] = INFINITY;
  int64_t bad = -1;
  runForward<float>(k, spec, b, 0, &bad);
  EXPECT_EQ(bad, 2);
}

TEST(CompiledAttention, CachedBySpecialisation) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  auto spec = decaySpec(jit::DType::F32, plan::SoftmaxKind::Standard, false);
  const auto& a = jit::compileAttention(spec);
  size_t n = jit::compiledFunctionCount();
  const auto& b = jit::compileAttention(spec);
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(jit::compiledFunctionCount(), n);
  spec.dtype = jit::DType::F64;
  const auto& c = jit::compileAttention(spec);
  EXPECT_NE(&a, &c);
  EXPECT_NE(a.hash, c.hash);
  EXPECT_EQ(jit::compiledFunctionCount(), n + 1);
  // The optimised IR calls libmvec's vector exp: the row passes vectorised.
  const std::string ir = jit::attentionIR(spec);
  EXPECT_NE(ir.find("_ZGV"), std::string::npos) << ir;
}

// libmvec against libm, through a compiled map. glibc documents at most 4 ulp
// for its vector exp, log, sin and cos; the bound asserted here is that.
TEST(CompiledMap, VectorMathWithinFourUlpOfLibm) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  struct Case {
    Op op;
    double lo, hi;
    double (*libm)(double);
  };
  const Case cases[] = {{Op::Exp, -700, 700, [](double x) { return std::exp(x); }},
                        {Op::Log, 1e-300, 1e300, [](double x) { return std::log(x); }},
                        {Op::Sin, -1e4, 1e4, [](double x) { return std::sin(x); }},
                        {Op::Cos, -1e4, 1e4, [](double x) { return std::cos(x); }},
                        // tanh through libmvec where glibc has it (2.35+); near 0 the
                        // exp formula it replaces was off by ~1e-16 absolute, i.e.
                        // millions of ulp of tanh(1e-10).
                        {Op::Tanh, -20, 20, [](double x) { return std::tanh(x); }},
                        {Op::Tanh, -1e-3, 1e-3, [](double x) { return std::tanh(x); }}};
  std::mt19937_64 rng(11);
  for (const auto& c : cases) {
    if (c.op == Op::Tanh && !jit::hasVectorLibm235()) continue;  // older glibc: the exp formula
    formula::Graph g;
    NodeId root = g.unary(c.op, g.leaf(Op::Var, 0));
    const auto& k = jit::compileMap(g, root, 1);
    EXPECT_NE(jit::mapIR(g, root, 1).find("_ZGV"), std::string::npos) << formula::opName(c.op);
    const int n = 200000;
    std::vector<double> x(n), y(n);
    for (int i = 0; i < n; ++i) {
      double u = std::uniform_real_distribution<double>(0, 1)(rng);
      x[i] = c.op == Op::Log ? std::exp(std::log(c.lo) + u * (std::log(c.hi) - std::log(c.lo)))
                             : c.lo + u * (c.hi - c.lo);
    }
    const double* vars[] = {x.data()};
    k.fn(vars, y.data(), n);
    double max_ulp = 0;
    for (int i = 0; i < n; ++i) {
      double ref = c.libm(x[i]);
      double ulp = std::nextafter(std::fabs(ref), INFINITY) - std::fabs(ref);
      max_ulp = std::max(max_ulp, std::fabs(y[i] - ref) / ulp);
    }
    EXPECT_LE(max_ulp, 4.0) << formula::opName(c.op);
    RecordProperty(formula::opName(c.op), std::to_string(max_ulp));
  }
}

TEST(CompiledMap, SixteenTermCosineSumMatchesInterpreter) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  formula::Graph g;
  NodeId d = g.leaf(Op::Var, 0), sum = g.constant(0.0);
  for (int t = 1; t <= 16; ++t)
    sum = g.binary(Op::Add, sum,
                   g.binary(Op::Mul, g.constant(1.0 / t),
                            g.unary(Op::Cos, g.binary(Op::Mul, g.constant(0.1 * t), d))));
  const auto& k = jit::compileMap(g, sum, 1);
  std::vector<double> x(1001), y(1001);
  for (int i = 0; i < 1001; ++i) x[i] = i * 0.37;
  const double* vars[] = {x.data()};
  k.fn(vars, y.data(), 1001);
  for (int i = 0; i < 1001; ++i) {
    formula::Env e;
    e.vars = {x[i]};
    ASSERT_NEAR(y[i], formula::interpret(g, sum, e), 1e-13) << i;
  }
  formula::Graph bad;
  EXPECT_THROW(jit::compileMap(bad, bad.leaf(Op::Score), 1), std::invalid_argument);
}

// Grid kernels: cosines and sines of affine arguments by rotation, the rest on
// vectors through libmvec. The reference is the formula interpreter (libm) at
// the same distances d0 + i h.
namespace {

struct GridCase {
  formula::Graph g;
  NodeId root = -1;
  int affine_arguments = 0;
};

// The benchmark's 16-term RoPE-like kernel, a sine sharing one cosine's
// argument, a non-affine cosine and a decay envelope (left to libmvec).
GridCase mixedKernel() {
  GridCase c;
  auto& g = c.g;
  NodeId d = g.leaf(Op::Var, 0), sum = g.constant(0.0);
  for (int m = 0; m < 16; ++m) {
    NodeId arg = g.binary(Op::Add, g.binary(Op::Mul, g.constant(std::pow(10000.0, -m / 16.0)), d),
                          g.constant(0.1 * m));
    sum = g.binary(Op::Add, sum, g.binary(Op::Mul, g.constant(1.0 + 0.25 * m), g.unary(Op::Cos, arg)));
  }
  // 3 sin(2 pi d / 6 - 1): the same argument form through Div and Sub.
  NodeId arg6 = g.binary(Op::Sub, g.binary(Op::Div, g.binary(Op::Mul, g.constant(2 * M_PI), d), g.constant(6.0)),
                         g.constant(1.0));
  sum = g.binary(Op::Add, sum, g.binary(Op::Mul, g.constant(3.0), g.unary(Op::Sin, arg6)));
  sum = g.binary(Op::Add, sum, g.unary(Op::Cos, arg6));  // shares the rotation of the sine
  // cos(1e-4 d^2): not affine, a libmvec call.
  sum = g.binary(Op::Add, sum, g.unary(Op::Cos, g.binary(Op::Mul, g.constant(1e-4), g.binary(Op::Mul, d, d))));
  c.root = g.binary(Op::Mul, sum, g.unary(Op::Exp, g.binary(Op::Mul, g.constant(-1e-5), g.unary(Op::Abs, d))));
  c.affine_arguments = 17;
  return c;
}

double worstGridError(const GridCase& c, double d0, double h, int64_t n) {
  const auto& k = jit::compileGrid(c.g, c.root);
  std::vector<double> y(static_cast<size_t>(n) + 1, 12345.0);  // one guard value past the end
  k.fn(d0, h, y.data(), n);
  EXPECT_EQ(y.back(), 12345.0) << "wrote past n = " << n;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    formula::Env e;
    e.vars = {d0 + static_cast<double>(i) * h};
    worst = std::max(worst, std::fabs(y[static_cast<size_t>(i)] - formula::interpret(c.g, c.root, e)));
  }
  return worst;
}

}  // namespace

TEST(CompiledGrid, RotationMatchesLibmOverTheBenchmarkRange) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  GridCase c = mixedKernel();
  const auto& k = jit::compileGrid(c.g, c.root);
  EXPECT_EQ(k.rotated, c.affine_arguments);
  EXPECT_TRUE(k.width == 2 || k.width == 4 || k.width == 8) << k.width;
  // Amplitudes sum to ~55; arguments reach 3.3e4 rad, where one ulp of the
  // argument is 7e-12 and the two sides round it differently.
  EXPECT_LT(worstGridError(c, -32768, 1.0, 65536), 1e-10);  // measured 2.4e-11
  // A step that is not a whole number, and lengths that end mid-vector and
  // mid-block; a grid of one point; an empty grid.
  EXPECT_LT(worstGridError(c, -500.25, 0.37, 3001), 1e-11);
  EXPECT_LT(worstGridError(c, 17, 1.0, 515), 1e-11);
  EXPECT_LT(worstGridError(c, 3, 2.0, 1), 1e-12);
  EXPECT_EQ(worstGridError(c, 3, 2.0, 0), 0.0);
}

TEST(CompiledGrid, KernelsWithoutAffineTrigAndCachingByFormula) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  GridCase c;
  NodeId d = c.g.leaf(Op::Var, 0);
  c.root = c.g.binary(Op::Mul, c.g.unary(Op::Exp, c.g.binary(Op::Mul, c.g.constant(-0.05), c.g.unary(Op::Abs, d))),
                      c.g.select(c.g.binary(Op::Gt, d, c.g.constant(0.0)), c.g.unary(Op::Log, c.g.binary(Op::Add, d, c.g.constant(1.0))), d));
  c.root = c.g.binary(Op::Add, c.root, c.g.unary(Op::Tanh, c.g.binary(Op::Mul, c.g.constant(0.01), d)));
  const auto& k = jit::compileGrid(c.g, c.root);
  EXPECT_EQ(k.rotated, 0);
  EXPECT_LT(worstGridError(c, -100, 0.5, 401), 1e-12);
  EXPECT_EQ(&jit::compileGrid(c.g, c.root), &k);
  formula::Graph bad;
  EXPECT_THROW(jit::compileGrid(bad, bad.binary(Op::Add, bad.leaf(Op::Var, 0), bad.leaf(Op::Var, 1))),
               std::invalid_argument);
  EXPECT_NE(jit::gridIR(c.g, c.root).find("define void @posc_grid_"), std::string::npos);
}

TEST(CompiledAttention, BackwardCompiledOnFirstUse) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  auto spec = decaySpec(jit::DType::F64, plan::SoftmaxKind::Standard, true);
  spec.terms[0].formula.nodes[4].op = plan::FormulaNode::Op::Add;  // q.c + k.c: a formula no other test compiles
  const auto& k = jit::compileAttention(spec);
  EXPECT_NE(k.forward(), nullptr);
  EXPECT_EQ(k.backwardCompileMs(), 0.0);
  void* b = k.backward();
  EXPECT_NE(b, nullptr);
  EXPECT_GT(k.backwardCompileMs(), 0.0);
  EXPECT_EQ(k.backward(), b);
}

// The quick tier (cheap machine-code generation) and the optimised tier that
// replaces it compile the same IR, so they must compute the same bits.
TEST(CompiledAttention, QuickAndOptimisedTiersAgreeBitForBit) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  for (auto dtype : {jit::DType::F32, jit::DType::F64}) {
    auto spec = decaySpec(dtype, plan::SoftmaxKind::Softmax1, true);
    spec.terms[1].formula.nodes[4].op = plan::FormulaNode::Op::Add;  // a formula no other test compiles
    const auto& k = jit::compileAttention(spec);
    ASSERT_NE(k.quickForward(), nullptr);
    jit::finishBackgroundCompiles();
    ASSERT_NE(k.optimisedForward(), nullptr);
    EXPECT_NE(k.optimisedForward(), k.quickForward());
    EXPECT_EQ(k.forward(), k.optimisedForward());
    EXPECT_GT(k.optimisedCompileMs(), 0.0);
    Block b = randomBlock(41, 57, 2, 21);
    const int W = b.Lk + 1;
    auto run = [&](void* fn) {
      if (dtype == jit::DType::F64) {
        std::vector<double> out(b.Lq * W);
        reinterpret_cast<jit::ForwardFn<double>>(fn)(b.scores.data(), out.data(), b.qch.data(), b.kch.data(),
                                                     b.params.data(), b.Lq, b.Lk, 1);
        return std::vector<unsigned char>(reinterpret_cast<unsigned char*>(out.data()),
                                          reinterpret_cast<unsigned char*>(out.data() + out.size()));
      }
      auto s = cast<float>(b.scores), q = cast<float>(b.qch), kk = cast<float>(b.kch), p = cast<float>(b.params);
      std::vector<float> out(b.Lq * W);
      reinterpret_cast<jit::ForwardFn<float>>(fn)(s.data(), out.data(), q.data(), kk.data(), p.data(), b.Lq, b.Lk, 1);
      return std::vector<unsigned char>(reinterpret_cast<unsigned char*>(out.data()),
                                        reinterpret_cast<unsigned char*>(out.data() + out.size()));
    };
    EXPECT_EQ(run(k.quickForward()), run(k.optimisedForward())) << (dtype == jit::DType::F64 ? "f64" : "f32");
  }
}
