// The block interpreter's inner loops (see kernel.h). Each node runs over a
// block of points held in its own scratch row; every case is a plain loop
// over contiguous doubles, which GCC vectorises. This file is compiled with
// -fno-math-errno and OpenMP SIMD pragmas; on x86-64 glibc, cos, sin, exp and
// log are declared SIMD-callable below (as glibc's own header does under
// -ffast-math), so their loops call the vector math library (libmvec, at most
// 4 ulp) without the rest of -ffast-math (NaN and infinity stay meaningful).
// The block loop is cloned for AVX-512 and AVX2 and picked at load time.
#include <algorithm>
#include <cmath>
#include <vector>

#include "compiler/expr/ops.h"
#include "runtime/analysis/kernel.h"

#if defined(__x86_64__) && defined(__GLIBC__)
extern "C" {
__attribute__((simd("notinbranch"))) double cos(double) noexcept;
__attribute__((simd("notinbranch"))) double sin(double) noexcept;
__attribute__((simd("notinbranch"))) double exp(double) noexcept;
__attribute__((simd("notinbranch"))) double log(double) noexcept;
}
#endif

namespace posc::analysis {

using Op = KernelNode::Op;
using expr::maximum;  // the names the fold columns of ops.def use
using expr::minimum;

namespace {

template <class F>
inline void map1(const double* __restrict a, double* __restrict r, size_t n, F f) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) r[i] = f(a[i]);
}

template <class F>
inline void map2(const double* __restrict a, const double* __restrict b, double* __restrict r, size_t n, F f) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) r[i] = f(a[i], b[i]);
}

template <class F>
inline void map3(const double* __restrict a, const double* __restrict b, const double* __restrict c,
                 double* __restrict r, size_t n, F f) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) r[i] = f(a[i], b[i], c[i]);
}

constexpr size_t kLanes = 8;

// r[j] = cos(theta + j delta) (or sin) for j < m: 8 values directly, then
// each from the one 8 earlier, turned by 8 delta.
inline void rotate(double theta, double delta, double* __restrict r, size_t m, bool sine) {
  double c[BlockInterpreter::kBlock], s[BlockInterpreter::kBlock];
  for (size_t j = 0; j < kLanes; ++j) {
    const double angle = theta + static_cast<double>(j) * delta;
    c[j] = std::cos(angle);
    s[j] = std::sin(angle);
  }
  const double c8 = std::cos(kLanes * delta), s8 = std::sin(kLanes * delta);
  for (size_t j = kLanes; j < m; j += kLanes)
#pragma omp simd
    for (size_t l = 0; l < kLanes; ++l) {
      c[j + l] = c[j + l - kLanes] * c8 - s[j + l - kLanes] * s8;
      s[j + l] = s[j + l - kLanes] * c8 + c[j + l - kLanes] * s8;
    }
  std::copy(sine ? s : c, (sine ? s : c) + m, r);
}

// Whether x[0..m) is x[0] + j h with h = (x[m-1] - x[0]) / (m - 1), to rounding.
bool evenlySpaced(const double* x, size_t m) {
  if (m < 2) return false;
  const double h = (x[m - 1] - x[0]) / static_cast<double>(m - 1);
  const double tolerance = 1e-12 * (std::fabs(x[0]) + std::fabs(x[m - 1]) + std::fabs(h));
  for (size_t j = 0; j < m; ++j)
    if (std::fabs(x[j] - (x[0] + static_cast<double>(j) * h)) > tolerance) return false;
  return true;
}

// Runs every node over one block of m points. Cloned for AVX-512 and AVX2
// (chosen once at load time by the CPU), so the vector math is 8 or 4 lanes
// wide where the machine has them and 2 (SSE2) elsewhere.
__attribute__((target_clones("avx512f", "avx2", "default")))
void runBlock(const KernelNode* nodes, const BlockInterpreter::Affine* trig, const char* unused_when_rotating,
              size_t count, double* scratch, size_t stride, const double* x, size_t m, bool evenly_spaced) {
  auto row = [&](int i) { return scratch + static_cast<size_t>(i) * stride; };
  const double h = m > 1 ? (x[m - 1] - x[0]) / static_cast<double>(m - 1) : 0.0;
  for (size_t i = 0; i < count; ++i) {
    const KernelNode& node = nodes[i];
    double* r = row(static_cast<int>(i));
    const bool rotating = evenly_spaced && m > kLanes;
    if (rotating && unused_when_rotating[i]) continue;
    if (rotating && trig[i].affine) {
      rotate(trig[i].slope * x[0] + trig[i].offset, trig[i].slope * h, r, m, node.op == Op::Sin);
      continue;
    }
    const double* a = node.a >= 0 ? row(node.a) : nullptr;
    const double* b = node.b >= 0 ? row(node.b) : nullptr;
    const double* c = node.c >= 0 ? row(node.c) : nullptr;
    // Every operation is a loop of its `fold` column in ops.def.
    switch (node.op) {
      case Op::Const: break;
      case Op::Var: std::copy(x, x + m, r); break;
#define POSC_OP_UNARY(Name, name, symbol, function, precedence, type, fold, ...) \
  case Op::Name:                                                                 \
    map1(a, r, m, [](double a) { return fold; });                                \
    break;
#define POSC_OP_BINARY(Name, name, symbol, function, precedence, commutative, type, fold, ...) \
  case Op::Name:                                                                               \
    map2(a, b, r, m, [](double a, double b) { return fold; });                                 \
    break;
#define POSC_OP_TERNARY(Name, name, symbol, function, precedence, type, fold, ...) \
  case Op::Name:                                                                   \
    map3(a, b, c, r, m, [](double a, double b, double c) { return fold; });        \
    break;
#include "compiler/expr/ops.def"
      default: break;
    }
  }
}

}  // namespace

void BlockInterpreter::evaluate(const double* d, double* out, size_t n) const {
  const size_t count = steps_.size();
  // Constants are broadcast once per call; the scratch rows live for the call.
  std::vector<double> scratch(count * kBlock);
  for (size_t i = 0; i < count; ++i)
    if (steps_[i].op == Op::Const)
      std::fill(scratch.data() + i * kBlock, scratch.data() + (i + 1) * kBlock, steps_[i].value);
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t m = std::min(kBlock, n - start);
    runBlock(steps_.data(), trig_args_.data(), unused_when_rotating_.data(), count, scratch.data(), kBlock, d + start, m,
             evenlySpaced(d + start, m));
    const double* result = scratch.data() + (count - 1) * kBlock;
    std::copy(result, result + m, out + start);
  }
}

KernelProgram cosineSum(const std::vector<double>& amplitude, const std::vector<double>& omega,
                        const std::vector<double>& phase) {
  KernelProgram p;
  NodeId d = p.distance();
  NodeId sum = -1;
  for (size_t m = 0; m < amplitude.size(); ++m) {
    NodeId angle = p.binary(Op::Mul, p.constant(omega[m]), d);
    if (phase[m] != 0) angle = p.binary(Op::Add, angle, p.constant(phase[m]));
    NodeId term = p.binary(Op::Mul, p.constant(amplitude[m]), p.unary(Op::Cos, angle));
    sum = sum < 0 ? term : p.binary(Op::Add, sum, term);
  }
  if (sum < 0) sum = p.constant(0);
  return p;
}

}  // namespace posc::analysis
