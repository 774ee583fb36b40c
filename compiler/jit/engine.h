// The process-wide LLJIT and its optimisation pipeline (internal to compiler/jit).
//
// One LLJIT for the life of the process, created on first use for the host CPU
// (JITTargetMachineBuilder::detectHost). Modules are optimised with the new
// pass manager through a short function pipeline written for the IR that
// the generators (*_codegen.cpp) emit (see kPipeline in engine.cpp), with glibc's libmvec
// registered as the vector library so that calls to exp/log/sin/cos/pow in
// vectorised loops become calls to its SIMD variants; libmvec.so.1 is loaded
// into the JIT's symbol search. Machine code is generated at one of two
// tiers (Tier below), and one background thread runs recompilations (the
// optimised tier of a forward kernel first compiled quickly). Only code that
// includes LLVM uses this header.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace posc::jit {

class Engine {
 public:
  static Engine& get();
  // Prepares a fresh module for the host (triple, data layout).
  std::unique_ptr<llvm::Module> newModule(llvm::LLVMContext& ctx, const std::string& name);
  // Verifies and optimises `m` in place (the pipeline above, libmvec).
  void optimise(llvm::Module& m);
  // How much work machine-code generation does. The IR is optimised the same
  // way for both, so both tiers compute the same values (no fast-math
  // contraction anywhere); Quick code is slower to run (the fast register
  // allocator spills), Optimised slower to produce.
  enum class Tier : uint32_t { Quick = 0, Optimised = 1 };
  // Hands an optimised module to the JIT, compiles it to machine code at
  // `tier` and returns the addresses of `symbols`, in order.
  std::vector<void*> link(std::unique_ptr<llvm::LLVMContext> ctx, std::unique_ptr<llvm::Module> m,
                          const std::vector<std::string>& symbols, Tier tier = Tier::Optimised);
  // Runs `job` on the engine's one background thread, in order of
  // submission. Jobs must not throw. Pending jobs finish before the process
  // exits (the engine's destructor waits for them).
  void background(std::function<void()> job);
  // Blocks until every background job submitted so far has finished.
  void waitForBackground();
  ~Engine();
  // The module's IR as text.
  static std::string print(const llvm::Module& m);
  bool vectorMathAvailable() const { return libmvec_; }
  // libmvec has glibc 2.35's functions (tanh, log1p): the kernels then call
  // libm's, vectorised onto them (tanh otherwise becomes an exp formula,
  // log1p a scalar call).
  bool vectorLibm235() const { return vector_libm_235_; }
  // Doubles per vector register the kernels use: 8 on AVX-512 hosts (where
  // 512-bit vectors are preferred), 4 with AVX2, else 2.
  int vectorDoubles() const;

 private:
  Engine();
  struct Impl;
  std::shared_ptr<Impl> impl_;
  bool libmvec_ = false;
  bool vector_libm_235_ = false;
};

}  // namespace posc::jit
