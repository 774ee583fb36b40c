// Elementwise maps of one expression over variable arrays: see compiled.h.
// One plain loop over the points, left to the loop vectoriser (libmvec for
// the math).
#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "compiler/jit/emit.h"
#include "compiler/jit/engine.h"
#include "compiler/jit/compiled.h"

namespace posc::jit {

namespace {

using namespace detail;

void checkVariables(const Graph& g, NodeId root, int var_count) {
  for (NodeId id : g.reachable({root})) {
    const Node& n = g.node(id);
    if ((formula::arity(n.op) == 0 || expr::isRead(n.op)) && n.op != Op::Const &&
        (n.op != Op::Var || n.index < 0 || n.index >= var_count))
      throw std::invalid_argument(fmt::format(
          "compileMap: the expression reads '{}', which is not one of its {} variables",
          g.render(id), var_count));
  }
}

// void name(const double* const* vars, double* out, i64 n)
void generateMap(llvm::Module& m, const std::string& name, const Graph& g, NodeId root,
                 int var_count) {
  auto& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto* t = llvm::Type::getDoubleTy(ctx);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  auto* ptr = llvm::PointerType::getUnqual(t);
  auto* fn = declare(m, name, llvm::Type::getVoidTy(ctx),
                     {llvm::PointerType::getUnqual(ptr), ptr, i64}, 2);
  FunctionBuilder fb(fn, b);
  auto* vars = fn->getArg(0);
  auto* out = fn->getArg(1);
  std::vector<llvm::Value*> bases;
  for (int v = 0; v < var_count; ++v)
    bases.push_back(b.CreateLoad(ptr, b.CreateGEP(ptr, vars, llvm::ConstantInt::get(i64, v))));
  fb.loop(llvm::ConstantInt::get(i64, 0), fn->getArg(2), "i", [&](llvm::Value* i) {
    ExprEmitter ee(b, m, t, g, [&](const Node& n) -> llvm::Value* {
      return b.CreateLoad(t, b.CreateGEP(t, bases.at(static_cast<size_t>(n.index)), i));
    });
    b.CreateStore(ee.emit(root), b.CreateGEP(t, out, i));
  });
  b.CreateRetVoid();
}

std::mutex g_mutex;
std::unordered_map<std::string, std::unique_ptr<CompiledMap>> g_maps;

}  // namespace

const CompiledMap& compileMap(const Graph& g, NodeId root, int var_count) {
  auto t0 = std::chrono::steady_clock::now();
  checkVariables(g, root, var_count);
  std::string key = fmt::format("map vars={}\n{}", var_count, g.canonical({root}));
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto it = g_maps.find(key); it != g_maps.end()) return *it->second;
  auto kernel = std::make_unique<CompiledMap>();
  kernel->hash = formula::hashText(key);
  const std::string name = fmt::format("posc_map_{:016x}", kernel->hash);
  auto& engine = Engine::get();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = engine.newModule(*ctx, name);
  generateMap(*m, name, g, root, var_count);
  engine.optimise(*m);
  kernel->fn = reinterpret_cast<CompiledMap::Fn>(engine.link(std::move(ctx), std::move(m), {name})[0]);
  kernel->compile_ms = msSince(t0);
  detail::noteCompiled();
  auto& ref = *kernel;
  g_maps.emplace(key, std::move(kernel));
  return ref;
}

std::string mapIR(const Graph& g, NodeId root, int var_count) {
  checkVariables(g, root, var_count);
  const std::string name = fmt::format(
      "posc_map_{:016x}", formula::hashText(fmt::format("map vars={}\n{}", var_count, g.canonical({root}))));
  llvm::LLVMContext ctx;
  auto m = Engine::get().newModule(ctx, name);
  generateMap(*m, name, g, root, var_count);
  Engine::get().optimise(*m);
  return Engine::print(*m);
}

}  // namespace posc::jit
