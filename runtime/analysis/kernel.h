// Kernels over distance: score(d) as an expression of the formula IR, and the
// evaluators that sweep it over many distances.
//
// A kernel is what the study calls a head's view of distance: for example
// k(d) = 20*cos(2*pi*d/6) + 5*cos(2*pi*d/40 + 0.3). `posc repl` and `posc
// analyze` lower expressions into a KernelProgram - a formula::Graph (the IR
// of score formulas, compiler/formula) whose one variable, Var 0, is the
// distance d - and evaluate it through the one seam
// `KernelEvaluator::evaluate(d, out, n)`.
//
// Three evaluators: a tree-walking interpreter (one point at a time,
// recursion over the operands: simple, and the benchmark's baseline), a block
// interpreter that runs each node over a block of points, the loops being
// plain arrays that the compiler vectorises, and the kernel compiled by LLVM
// (compiler/jit's elementwise maps and, for sweeps over evenly spaced
// distances, its grid kernels), which makeEvaluator prefers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "compiler/expr/ops.h"
#include "compiler/formula/formula.h"
#include "compiler/formula/kernel_program.h"

namespace posc::analysis {

using formula::NodeId;

// A kernel: the graph and its result node (compiler/formula/kernel_program.h).
using formula::KernelProgram;

// One step of the block interpreter's flat program: the reachable nodes of a
// kernel in topological order, operands as indices of earlier steps.
struct KernelNode {
  using Op = expr::Op;
  Op op = Op::Const;
  int a = -1, b = -1, c = -1;
  double value = 0;  // Const
};

// The seam between analyses and evaluation backends.
class KernelEvaluator {
 public:
  virtual ~KernelEvaluator() = default;
  // out[i] = kernel(d[i]) for i < n.
  virtual void evaluate(const double* d, double* out, size_t n) const = 0;
  // out[i] = kernel(d0 + i * step) for i < n: a sweep over an evenly spaced
  // grid (the distances are those distanceGrid makes). By default the grid is
  // written out and evaluate() called; the compiled kernel has a faster path.
  virtual void evaluateGrid(double d0, double step, double* out, size_t n) const;
  virtual std::string name() const = 0;
};

// One point at a time, recursing from the result node (no memoisation: a
// node used twice is evaluated twice, as in an AST walker).
class TreeInterpreter final : public KernelEvaluator {
 public:
  explicit TreeInterpreter(KernelProgram program) : program_(std::move(program)) {}
  void evaluate(const double* d, double* out, size_t n) const override;
  std::string name() const override { return "tree interpreter"; }
  double at(double d) const;

 private:
  double node(NodeId i, double d) const;
  KernelProgram program_;
};

// Runs each node over a block of kBlock points (one scratch array per node),
// so every operation is a tight loop over contiguous doubles.
//
// Sweeps are usually over evenly spaced distances. When a block's distances
// are (d0, d0 + h, d0 + 2h, ...) a cosine or sine of an affine argument
// a d + b is computed by rotation instead of by cos/sin: the first 8 values
// directly, then each from the one 8 points earlier by the angle-addition
// formulas (4 multiplications and 2 additions, 8 independent lanes). Each
// block restarts from directly computed values, so at most 31 rotations
// accumulate rounding (measured against the tree interpreter: < 1e-9 on
// arguments up to 3e4; see tests/analysis).
class BlockInterpreter final : public KernelEvaluator {
 public:
  static constexpr size_t kBlock = 256;
  explicit BlockInterpreter(const KernelProgram& program);
  void evaluate(const double* d, double* out, size_t n) const override;
  std::string name() const override { return "block interpreter"; }

  // Per node: the argument of a Cos/Sin node as slope * d + offset, when it
  // is affine in d (compiler/formula/affine.h, as the JIT's grid kernels).
  struct Affine {
    bool affine = false;
    double slope = 0, offset = 0;
  };

 private:
  std::vector<KernelNode> steps_;   // the kernel's reachable nodes; the last is the result
  std::vector<Affine> trig_args_;  // per step (meaningful for Cos and Sin)
  std::vector<char> unused_when_rotating_;  // per step: only feeds rotated Cos/Sin steps
};

// The kernel compiled by LLVM into one vectorised loop (jit_evaluator.cpp),
// or null when this build has no LLVM.
std::unique_ptr<KernelEvaluator> makeCompiledEvaluator(const KernelProgram& program);

// The fastest evaluator this build has: the compiled kernel, else the block
// interpreter.
std::unique_ptr<KernelEvaluator> makeEvaluator(const KernelProgram& program);

// A sum of cosines, sum_m amplitude_m * cos(omega_m * d + phase_m), as a program.
KernelProgram cosineSum(const std::vector<double>& amplitude, const std::vector<double>& omega,
                        const std::vector<double>& phase);

}  // namespace posc::analysis
