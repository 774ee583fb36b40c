// The process-wide LLJIT and its optimisation pipeline (internal to compiler/jit).
//
// One LLJIT for the life of the process, created on first use for the host CPU
// (JITTargetMachineBuilder::detectHost). Modules are optimised with the new
// pass manager at O3, loop and SLP vectorisation on, with glibc's libmvec
// registered as the vector library so that calls to exp/log/sin/cos/pow in
// vectorised loops become calls to its SIMD variants; libmvec.so.1 is loaded
// into the JIT's symbol search. Only code that includes LLVM uses this header.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>
#include <vector>

namespace posc::jit {

class Engine {
 public:
  static Engine& get();
  // Prepares a fresh module for the host (triple, data layout).
  std::unique_ptr<llvm::Module> newModule(llvm::LLVMContext& ctx, const std::string& name);
  // Optimises `m` (O3, vectorisers, libmvec), returns its printed IR, hands it
  // to the JIT and returns the addresses of `symbols`, in order.
  std::vector<void*> optimiseAndLink(std::unique_ptr<llvm::LLVMContext> ctx,
                                     std::unique_ptr<llvm::Module> m,
                                     const std::vector<std::string>& symbols, std::string& ir);
  bool vectorMathAvailable() const { return libmvec_; }

 private:
  Engine();
  struct Impl;
  std::shared_ptr<Impl> impl_;
  bool libmvec_ = false;
};

}  // namespace posc::jit
