// Sweep throughput of a 16-term cosine kernel, the shape of a rotary head's
// score over distance: k(d) = sum_m A_m cos(omega_m d + phi_m) with RoPE's
// geometric frequencies omega_m = 10000^(-m/16).
//
//   Sweep/tree:     the tree-walking interpreter (one point at a time) - the baseline
//   Sweep/block:    the block interpreter (each node over 256 points at a time)
//   Sweep/compiled: the kernel compiled by LLVM into one vectorised loop over
//                   an array of distances (libmvec's cos for every term)
//   Sweep/compiled-grid: the kernel compiled by LLVM for an evenly spaced grid,
//                   each cosine by rotation (jit::compileGrid) - what the
//                   sweeps of `posc repl` and `posc analyze` use
//
// Each evaluates 65,536 distances (-32768 .. 32767, step 1) per iteration on
// one thread; the counter is evaluations per second, and the ratio lines
// compare each with the tree interpreter in the same run.
//
// Run: build/bench/kernel_sweep_bench
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "runtime/analysis/kernel.h"
#include "runtime/analysis/sweep.h"

namespace {

using namespace posc::analysis;

KernelProgram sixteenTerms() {
  std::vector<double> a, w, phi;
  for (int m = 0; m < 16; ++m) {
    a.push_back(1.0 + 0.25 * m);
    w.push_back(std::pow(10000.0, -m / 16.0));
    phi.push_back(0.1 * m);
  }
  return cosineSum(a, w, phi);
}

enum class Backend { Tree, Block, Compiled, CompiledGrid };

void SweepKernel(benchmark::State& state, Backend backend) {
  const KernelProgram program = sixteenTerms();
  std::unique_ptr<KernelEvaluator> kernel;
  if (backend == Backend::Block) kernel = std::make_unique<BlockInterpreter>(program);
  else if (backend == Backend::Tree) kernel = std::make_unique<TreeInterpreter>(program);
  else kernel = makeCompiledEvaluator(program);
  if (!kernel) {
    state.SkipWithError("built without LLVM: no compiled kernels");
    return;
  }
  const std::vector<double> d = distanceGrid(-32768, 32767);
  std::vector<double> out(d.size());
  for (auto _ : state) {
    if (backend == Backend::CompiledGrid) kernel->evaluateGrid(d.front(), 1.0, out.data(), d.size());
    else kernel->evaluate(d.data(), out.data(), d.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["evaluations/s"] =
      benchmark::Counter(static_cast<double>(d.size()) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// Prints each backend's throughput as a multiple of the tree interpreter's.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) times_[r.run_name.function_name] = r.GetAdjustedRealTime();
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    auto tree = times_.find("Sweep/tree");
    if (tree == times_.end()) return;
    for (const char* other : {"Sweep/block", "Sweep/compiled", "Sweep/compiled-grid"})
      if (auto it = times_.find(other); it != times_.end() && it->second > 0)
        std::printf("ratio (same run): %s is %.2fx the throughput of Sweep/tree\n", other, tree->second / it->second);
  }

 private:
  std::map<std::string, double> times_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("Sweep/tree", SweepKernel, Backend::Tree)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
  benchmark::RegisterBenchmark("Sweep/block", SweepKernel, Backend::Block)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
  benchmark::RegisterBenchmark("Sweep/compiled", SweepKernel, Backend::Compiled)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
  benchmark::RegisterBenchmark("Sweep/compiled-grid", SweepKernel, Backend::CompiledGrid)
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(1.0);
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
