// The LLVM-compiled kernel evaluator, and the choice of the fastest one.
//
// A KernelProgram is a formula::Graph with the distance as variable 0, and
// jit::compileMap turns it into one vectorised loop (libmvec cos/sin/exp/log
// through LLVM's vector-library mapping). Sweeps over evenly spaced distances
// go to jit::compileGrid instead, which computes cosines and sines of affine
// arguments by rotation; it is compiled on the first such sweep. Compiled
// kernels are cached by the graph's canonical text, so re-evaluating a kernel
// costs a lookup.
#include <atomic>
#include <stdexcept>

#include "compiler/formula/formula.h"
#include "compiler/jit/compiled.h"
#include "runtime/analysis/kernel.h"

namespace posc::analysis {

namespace {

class JitEvaluator final : public KernelEvaluator {
 public:
  explicit JitEvaluator(const KernelProgram& program) : graph_(program.graph), root_(program.root) {
    if (root_ < 0) throw std::invalid_argument("empty kernel program");
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
  jit::CompiledMap::Fn map_ = nullptr;
  mutable std::atomic<jit::CompiledGrid::Fn> grid_{nullptr};
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
