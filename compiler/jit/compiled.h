// Functions compiled by LLVM's ORC JIT: fused attention over score formulas,
// elementwise maps and grid sweeps of formula expressions.
//
// (Naming: in posc a "kernel" is a head's score as a function of distance,
// runtime/analysis; what this stage produces is machine code, so its types
// are Compiled*: CompiledAttention, CompiledMap, CompiledGrid.)
//
// The tensor-op lowering (runtime/model/score_formula) runs one LibTorch
// operation per formula node, each a full pass over the (B, H, Lq, Lk) scores.
// Here an attention's whole chain of score terms, their exemptions and head
// selections, the causal mask and the row softmax (standard or softmax1, with
// or without a null slot) become one generated function per (batch, head)
// block, optimised with loop vectorisation for the host CPU; a second
// generated function is its backward pass, built from symbolic derivatives of
// the term chain (compiler/formula), compiled the first time it is needed
// (evaluation and probes never need it; a new formula's forward function is
// ready in about half the time of the pair). exp, log, sin, cos and pow vectorise
// through glibc's libmvec (LLVM's LIBMVEC-X86 vector-library mapping); its
// documented maximum error is 4 ulp, and tests/jit checks it against libm.
//
// The functions work on raw arrays, so this stage includes neither LibTorch
// nor, in its header, LLVM. One long-lived LLJIT serves the process; compiled
// functions are cached by the canonical text of their specialisation (formula
// graph, dtype, softmax kind, null slot, which parameters are learned, table
// sizes), so a second request for the same attention costs a hash-map lookup.
//
// Built without LLVM (POSC_WITH_LLVM=OFF), available() is false and every
// compile function throws std::runtime_error saying so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/formula/formula.h"
#include "compiler/plan/plan.h"

namespace posc::jit {

bool available();

enum class DType : uint8_t { F32, F64 };

// Everything a fused attention kernel is specialised on.
struct AttentionSpec {
  DType dtype = DType::F32;
  plan::SoftmaxKind softmax = plan::SoftmaxKind::Standard;
  bool null_slot = false;
  std::vector<plan::ScoreTerm> terms;  // applied in order
  std::vector<bool> learned;           // one per attention param: gradient wanted
  // One per attention param: the values a head sees (1 for a value, the
  // entries of a table); empty means 1 each. A head's params are laid out
  // one after another in that order (see offset()).
  std::vector<int> widths;
  int width(size_t param) const { return param < widths.size() ? widths[param] : 1; }
  // Where param `param` starts in a head's params array.
  int offset(size_t param) const {
    int o = 0;
    for (size_t p = 0; p < param; ++p) o += width(p);
    return o;
  }
};

// The spec a model with these plans uses: its score terms, softmax, null
// slot and learned parameters, in `dtype`.
AttentionSpec attentionSpecFor(const plan::ModelPlan& model, const plan::AttentionPlan& attention,
                               DType dtype);

// Builds the term chain of `spec` as one expression of the score s:
// t_n(... t_1(s)), where each t_i is select(keep_i, s_prev, formula_i(s_prev))
// and keep_i tests the exempt key kinds, exempt query kinds and heads.
formula::NodeId buildTermChain(formula::Graph& g, const std::vector<plan::ScoreTerm>& terms);

// The generated functions, for T = float (F32) or double (F64). One call
// handles one (batch, head) block; callers spread blocks over threads.
//
//   scores  Lq x Lk raw scores of the block (after 1/sqrt(d), before terms)
//   probs   Lq x W output probabilities, W = Lk + (null_slot ? 1 : 0); the
//           null slot's probability is column Lk. Query i sees keys
//           j <= Lk - Lq + i; masked entries are 0.
//   qch     kChannelCount x Lq channel values of the queries (channel-major)
//   kch     kChannelCount x Lk channel values of the keys
//   params  the head's values of every attention param, one after another
//           (a table's entries in order; AttentionSpec::offset)
//   head    the head index
// forward returns the number of rows whose softmax denominator or maximum is
// not finite (0 when every value is finite).
//
//   gprobs   Lq x W gradient into probs
//   gscores  Lq x Lk gradient into the raw scores (written)
//   gparams  laid out as params; the block's gradient is ADDED (only
//            learned params; others are left alone)
template <typename T>
using ForwardFn = int64_t (*)(const T* scores, T* probs, const T* qch, const T* kch,
                              const T* params, int64_t Lq, int64_t Lk, int64_t head);
template <typename T>
using BackwardFn = void (*)(const T* scores, const T* probs, const T* gprobs, T* gscores,
                            T* gparams, const T* qch, const T* kch, const T* params, int64_t Lq,
                            int64_t Lk, int64_t head);

class CompiledAttention {
 public:
  CompiledAttention();
  ~CompiledAttention();
  CompiledAttention(const CompiledAttention&) = delete;
  CompiledAttention& operator=(const CompiledAttention&) = delete;

  std::string key;          // the canonical specialisation text
  uint64_t hash = 0;        // hashText(key)
  double compile_ms = 0.0;  // until the first forward function was ready

  // ForwardFn<T>. A new kernel's forward function is first compiled at the
  // quick tier (the same optimised IR, cheaper machine-code generation) and
  // recompiled at the optimised tier on the JIT's background thread; this
  // returns the optimised code once it is in place. Both compute the same
  // values (tests/jit checks they agree bit for bit).
  void* forward() const;
  void* quickForward() const { return quick_forward; }
  void* optimisedForward() const;  // null until the background compile is done
  double optimisedCompileMs() const;

  // BackwardFn<T>, compiled (optimised tier) on the first call; thread-safe,
  // later calls cost an atomic load. Throws std::runtime_error if LLVM fails.
  void* backward() const;
  // Time the backward function took to compile; 0 until it has been.
  double backwardCompileMs() const;

  struct Lazy;  // the spec, and the functions compiled later (attention_codegen.cpp)
  std::unique_ptr<Lazy> lazy;
  void* quick_forward = nullptr;
};

// Compiles (or finds in the cache) the forward kernel for `spec`; its
// backward follows on demand. Thread-safe. The reference stays valid for the
// life of the process.
const CompiledAttention& compileAttention(const AttentionSpec& spec);

// The optimised LLVM IR of the forward and backward functions for `spec`
// (`posc emit llvm`, tests). Generated afresh, not cached, not linked.
std::string attentionIR(const AttentionSpec& spec);

// A compiled elementwise map of one formula expression over variable arrays
// (for the REPL): out[i] = f(vars[0][i], vars[1][i], ...), i < n, in double
// precision. The expression may use Var leaves (index < var_count), Const and
// any operation; Score, channels, Head and Param leaves are rejected with
// std::invalid_argument. Vectorised like the attention kernels.
struct CompiledMap {
  using Fn = void (*)(const double* const* vars, double* out, int64_t n);
  Fn fn = nullptr;
  uint64_t hash = 0;
  double compile_ms = 0.0;
};
const CompiledMap& compileMap(const formula::Graph& g, formula::NodeId root, int var_count);
// The optimised IR of that map (not cached, not linked).
std::string mapIR(const formula::Graph& g, formula::NodeId root, int var_count);

// A compiled sweep of one expression of variable 0 over an evenly spaced
// grid, in double precision: out[i] = f(d0 + i * step), i < n. The kernel
// sweeps of `posc repl` and `posc analyze` are of this kind, and a head's
// kernel is mostly cosines of arguments affine in the distance,
// cos(w d + phi), which a grid makes cheap: consecutive values differ by a
// fixed rotation. So every cos or sin whose argument is affine in the
// variable (slope w and offset phi constant after folding) is computed by
// rotation instead of a call: the generated code works on vectors of V
// points (V = 8 doubles on AVX-512 hosts, 4 on AVX2, else 2), computes
// cos/sin directly (libm) at the start of each block of 64 vectors, spreads
// them over the V lanes with one exact rotation, and steps each vector to the
// next by the angle-addition formulas (4 multiplications, 2 additions per
// term). Rounding from at most 64 rotations is a few 1e-15 of the term's
// amplitude (tests/jit compares against libm). Everything else in the
// expression is evaluated on the vectors, its exp/log/sin/cos/pow through
// libmvec's variants of width V.
struct CompiledGrid {
  using Fn = void (*)(double d0, double step, double* out, int64_t n);
  Fn fn = nullptr;
  uint64_t hash = 0;
  double compile_ms = 0.0;
  int rotated = 0;  // distinct trig arguments computed by rotation
  int width = 0;    // V
};
const CompiledGrid& compileGrid(const formula::Graph& g, formula::NodeId root);
std::string gridIR(const formula::Graph& g, formula::NodeId root);

// Number of distinct kernels compiled so far (attention and map), for tests
// of the cache.
size_t compiledFunctionCount();

// Whether tanh and log1p in kernels go to libmvec's vector versions (glibc
// 2.35 and later: within 4 ulp of libm); otherwise tanh is
// 1 - 2 / (exp(2x) + 1) and log1p a scalar libm call.
bool hasVectorLibm235();

// Blocks until the background recompilations requested so far are done (so
// benchmarks time optimised code from their first iteration).
void finishBackgroundCompiles();

}  // namespace posc::jit
