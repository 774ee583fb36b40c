// The JIT in a build without LLVM (POSC_WITH_LLVM=OFF): it says so.
#include <stdexcept>

#include "compiler/jit/kernels.h"

namespace posc::jit {

namespace {
[[noreturn]] void unavailable() {
  throw std::runtime_error(
      "the score-formula JIT is unavailable: posc was built without LLVM (POSC_WITH_LLVM=OFF)");
}
}  // namespace

bool available() { return false; }
const AttentionKernel& compileAttention(const AttentionSpec&) { unavailable(); }
const MapKernel& compileMap(const formula::Graph&, formula::NodeId, int) { unavailable(); }
size_t compiledKernelCount() { return 0; }

}  // namespace posc::jit
