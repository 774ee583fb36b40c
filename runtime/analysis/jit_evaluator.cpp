// The LLVM-compiled kernel evaluator, and the choice of the fastest one.
//
// A KernelProgram becomes a formula::Graph with the distance as variable 0
// (the graph folds constants and shares common subexpressions again), and
// jit::compileMap turns it into one vectorised loop (libmvec cos/sin/exp/log
// through LLVM's vector-library mapping). Sweeps over evenly spaced distances
// go to jit::compileGrid instead, which computes cosines and sines of affine
// arguments by rotation; it is compiled on the first such sweep. Compiled
// kernels are cached by the graph's canonical text, so re-evaluating a kernel
// costs a lookup.
#include <atomic>
#include <stdexcept>

#include "compiler/formula/formula.h"
#include "compiler/jit/kernels.h"
#include "runtime/analysis/kernel.h"

namespace posc::analysis {

namespace {

using formula::Op;

formula::NodeId toGraph(const KernelProgram& program, formula::Graph& g) {
  std::vector<formula::NodeId> id(program.nodes.size(), -1);
  auto truth = [&](formula::NodeId x) { return g.binary(Op::Ne, x, g.constant(0.0)); };
  for (size_t i = 0; i < program.nodes.size(); ++i) {
    const KernelNode& n = program.nodes[i];
    auto A = [&] { return id.at(n.a); };
    auto B = [&] { return id.at(n.b); };
    using K = KernelNode::Op;
    formula::NodeId r = -1;
    switch (n.op) {
      case K::Const: r = g.constant(n.value); break;
      case K::Distance: r = g.leaf(Op::Var, 0); break;
      case K::Neg: r = g.unary(Op::Neg, A()); break;
      case K::Not: r = g.binary(Op::Eq, A(), g.constant(0.0)); break;
      case K::Abs: r = g.unary(Op::Abs, A()); break;
      case K::Exp: r = g.unary(Op::Exp, A()); break;
      case K::Log: r = g.unary(Op::Log, A()); break;
      case K::Sqrt: r = g.unary(Op::Sqrt, A()); break;
      case K::Cos: r = g.unary(Op::Cos, A()); break;
      case K::Sin: r = g.unary(Op::Sin, A()); break;
      case K::Tanh: r = g.unary(Op::Tanh, A()); break;
      case K::Sigmoid: r = g.unary(Op::Sigmoid, A()); break;
      case K::Relu: r = g.unary(Op::Relu, A()); break;
      case K::Add: r = g.binary(Op::Add, A(), B()); break;
      case K::Sub: r = g.binary(Op::Sub, A(), B()); break;
      case K::Mul: r = g.binary(Op::Mul, A(), B()); break;
      case K::Div: r = g.binary(Op::Div, A(), B()); break;
      case K::Pow: r = g.binary(Op::Pow, A(), B()); break;
      case K::Min: r = g.binary(Op::Min, A(), B()); break;
      case K::Max: r = g.binary(Op::Max, A(), B()); break;
      case K::Lt: r = g.binary(Op::Lt, A(), B()); break;
      case K::Le: r = g.binary(Op::Le, A(), B()); break;
      case K::Gt: r = g.binary(Op::Gt, A(), B()); break;
      case K::Ge: r = g.binary(Op::Ge, A(), B()); break;
      case K::Eq: r = g.binary(Op::Eq, A(), B()); break;
      case K::Ne: r = g.binary(Op::Ne, A(), B()); break;
      case K::And: r = g.binary(Op::Mul, truth(A()), truth(B())); break;
      case K::Or: r = g.binary(Op::Max, truth(A()), truth(B())); break;
      case K::Select: r = g.select(A(), B(), id.at(n.c)); break;
    }
    id[i] = r;
  }
  if (id.empty()) throw std::invalid_argument("empty kernel program");
  return id.back();
}

class JitEvaluator final : public KernelEvaluator {
 public:
  explicit JitEvaluator(const KernelProgram& program) {
    root_ = toGraph(program, graph_);
    map_ = jit::compileMap(graph_, root_, 1).fn;
  }
  void evaluate(const double* d, double* out, size_t n) const override {
    const double* vars[1] = {d};
    map_(vars, out, static_cast<int64_t>(n));
  }
  void evaluateGrid(double d0, double step, double* out, size_t n) const override {
    auto fn = grid_.load(std::memory_order_acquire);
    if (!fn) {
      fn = jit::compileGrid(graph_, root_).fn;  // cached and thread-safe in compiler/jit
      grid_.store(fn, std::memory_order_release);
    }
    fn(d0, step, out, static_cast<int64_t>(n));
  }
  std::string name() const override { return "LLVM-compiled kernel"; }

 private:
  formula::Graph graph_;
  formula::NodeId root_ = -1;
  jit::MapKernel::Fn map_ = nullptr;
  mutable std::atomic<jit::GridKernel::Fn> grid_{nullptr};
};

}  // namespace

std::unique_ptr<KernelEvaluator> makeCompiledEvaluator(const KernelProgram& program) {
  if (!jit::available()) return nullptr;
  return std::make_unique<JitEvaluator>(program);
}

std::unique_ptr<KernelEvaluator> makeEvaluator(const KernelProgram& program) {
  if (auto compiled = makeCompiledEvaluator(program)) return compiled;
  return std::make_unique<BlockInterpreter>(program);
}

}  // namespace posc::analysis
