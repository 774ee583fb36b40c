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
std::string attentionIR(const AttentionSpec&) { unavailable(); }
const MapKernel& compileMap(const formula::Graph&, formula::NodeId, int) { unavailable(); }
std::string mapIR(const formula::Graph&, formula::NodeId, int) { unavailable(); }
const GridKernel& compileGrid(const formula::Graph&, formula::NodeId) { unavailable(); }
std::string gridIR(const formula::Graph&, formula::NodeId) { unavailable(); }

// No AttentionKernel is ever made here; these keep the class complete.
struct AttentionKernel::Lazy {};
AttentionKernel::AttentionKernel() = default;
AttentionKernel::~AttentionKernel() = default;
void* AttentionKernel::backward() const { unavailable(); }
void* AttentionKernel::forward() const { unavailable(); }
void* AttentionKernel::optimisedForward() const { return nullptr; }
double AttentionKernel::optimisedCompileMs() const { return 0.0; }
void finishBackgroundCompiles() {}
bool hasVectorLibm235() { return false; }
double AttentionKernel::backwardCompileMs() const { return 0.0; }
size_t compiledKernelCount() { return 0; }

}  // namespace posc::jit
