// The JIT in a build without LLVM (POSC_WITH_LLVM=OFF): it says so.
#include <stdexcept>

#include "compiler/jit/compiled.h"

namespace posc::jit {

namespace {
[[noreturn]] void unavailable() {
  throw std::runtime_error(
      "the score-formula JIT is unavailable: posc was built without LLVM (POSC_WITH_LLVM=OFF)");
}
}  // namespace

bool available() { return false; }
const CompiledAttention& compileAttention(const AttentionSpec&) { unavailable(); }
std::string attentionIR(const AttentionSpec&) { unavailable(); }
const CompiledMap& compileMap(const formula::Graph&, formula::NodeId, int) { unavailable(); }
std::string mapIR(const formula::Graph&, formula::NodeId, int) { unavailable(); }
const CompiledGrid& compileGrid(const formula::Graph&, formula::NodeId) { unavailable(); }
std::string gridIR(const formula::Graph&, formula::NodeId) { unavailable(); }

// No CompiledAttention is ever made here; these keep the class complete.
struct CompiledAttention::Lazy {};
CompiledAttention::CompiledAttention() = default;
CompiledAttention::~CompiledAttention() = default;
void* CompiledAttention::backward() const { unavailable(); }
void* CompiledAttention::forward() const { unavailable(); }
void* CompiledAttention::optimisedForward() const { return nullptr; }
double CompiledAttention::optimisedCompileMs() const { return 0.0; }
void finishBackgroundCompiles() {}
bool hasVectorLibm235() { return false; }
double CompiledAttention::backwardCompileMs() const { return 0.0; }
size_t compiledFunctionCount() { return 0; }

}  // namespace posc::jit
