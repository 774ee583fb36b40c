// Sweeps of one expression over an evenly spaced grid, with cosines and sines
// of affine arguments computed by rotation: see compiled.h (CompiledGrid).
//
// The generated function, for V doubles per vector and K = 64 vectors per
// block:
//
//   entry:   for each rotated argument r (w_r d + phi_r):
//              lane rotations  (cos, sin)(w_r h l), l < V      (vector libmvec)
//              step rotation   (cos, sin)(w_r h V)             (scalar libm)
//   block:   for i0 = 0, V K, 2 V K, ... < n:
//              for each r: (C, S) = (cos, sin)(w_r (d0 + i0 h) + phi_r)  (libm)
//                          lanes = (C, S) rotated by the lane rotations
//   vector:    for k < K while i0 + k V < n:
//                d = d0 + (i0 + k V + l) h for the V lanes
//                out[...] = f(d) with cos/sin of argument r read from the lanes
//                (a masked store for the last, partial vector)
//                lanes of r rotated by the step rotation
//
// The explicit vectors make the recurrence a register-carried loop that the
// loop vectoriser would not produce; the math left in f goes to libmvec's
// variant of width V directly (only the vectorisers use LLVM's mapping).
#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "compiler/formula/affine.h"
#include "compiler/jit/emit.h"
#include "compiler/jit/engine.h"
#include "compiler/jit/compiled.h"

namespace posc::jit {

namespace {

using namespace detail;

constexpr int kVectorsPerBlock = 64;

using formula::Affine;

// The cos/sin nodes computed by rotation, grouped by argument node.
struct Rotation {
  NodeId argument = -1;
  Affine coefficients;
  NodeId cos_node = -1, sin_node = -1;
};

std::vector<Rotation> rotationsIn(const Graph& g, NodeId root) {
  formula::AffineInVariable affine(g);
  std::map<NodeId, Rotation> by_argument;
  for (NodeId id : g.reachable({root})) {
    const Node& n = g.node(id);
    if (n.op != Op::Cos && n.op != Op::Sin) continue;
    auto a = affine(n.a);
    if (!a || a->slope == 0) continue;
    Rotation& r = by_argument[n.a];
    r.argument = n.a;
    r.coefficients = *a;
    (n.op == Op::Cos ? r.cos_node : r.sin_node) = id;
  }
  std::vector<Rotation> out;
  for (auto& [arg, r] : by_argument) out.push_back(r);
  return out;
}

void checkVariable(const Graph& g, NodeId root) {
  for (NodeId id : g.reachable({root})) {
    const Node& n = g.node(id);
    if ((formula::arity(n.op) == 0 || expr::isRead(n.op)) && n.op != Op::Const &&
        (n.op != Op::Var || n.index != 0))
      throw std::invalid_argument(fmt::format(
          "compileGrid: the expression reads '{}'; a grid kernel has one variable", g.render(id)));
  }
}

class GridGenerator {
 public:
  GridGenerator(llvm::Module& m, const Graph& g, NodeId root, int width, bool libmvec)
      : m_(m), ctx_(m.getContext()), b_(ctx_), g_(g), root_(root), width_(width), libmvec_(libmvec) {
    f64_ = llvm::Type::getDoubleTy(ctx_);
    i64_ = llvm::Type::getInt64Ty(ctx_);
    vt_ = llvm::FixedVectorType::get(f64_, static_cast<unsigned>(width));
  }

  int generate(const std::string& name) {
    auto* fn = declare(m_, name, llvm::Type::getVoidTy(ctx_),
                       {f64_, f64_, llvm::PointerType::getUnqual(f64_), i64_}, 0);
    fn->addParamAttr(2, llvm::Attribute::NoAlias);
    FunctionBuilder fb(fn, b_);
    llvm::Value *d0 = fn->getArg(0), *h = fn->getArg(1), *out = fn->getArg(2), *n = fn->getArg(3);
    const auto rotations = rotationsIn(g_, root_);

    std::vector<double> lane_index(static_cast<size_t>(width_));
    for (int l = 0; l < width_; ++l) lane_index[static_cast<size_t>(l)] = l;
    llvm::Value* iota = llvm::ConstantDataVector::get(ctx_, lane_index);

    struct State {
      llvm::Value *lane_cos, *lane_sin, *step_cos, *step_sin;  // rotations
      llvm::AllocaInst *c, *s;                                 // the lanes' current cos, sin
    };
    std::vector<State> st;
    for (const auto& r : rotations) {
      State x{};
      auto* theta = b_.CreateFMul(c(r.coefficients.slope), h);
      auto* lane_angle = b_.CreateFMul(iota, splat(theta));
      x.lane_cos = vectorMath(llvm::Intrinsic::cos, {lane_angle});
      x.lane_sin = vectorMath(llvm::Intrinsic::sin, {lane_angle});
      auto* step = b_.CreateFMul(theta, c(width_));
      x.step_cos = splat(scalarMath(llvm::Intrinsic::cos, step));
      x.step_sin = splat(scalarMath(llvm::Intrinsic::sin, step));
      x.c = fb.local(vt_, "cos", llvm::ConstantFP::get(vt_, 0.0));
      x.s = fb.local(vt_, "sin", llvm::ConstantFP::get(vt_, 0.0));
      st.push_back(x);
    }

    const int64_t per_block = static_cast<int64_t>(width_) * kVectorsPerBlock;
    auto* blocks = b_.CreateUDiv(b_.CreateAdd(n, i64c(per_block - 1)), i64c(per_block));
    fb.loop(i64c(0), blocks, "block", [&](llvm::Value* block) {
      auto* i0 = b_.CreateMul(block, i64c(per_block));
      auto* d_i0 = b_.CreateFAdd(d0, b_.CreateFMul(b_.CreateSIToFP(i0, f64_), h));
      for (size_t k = 0; k < rotations.size(); ++k) {
        const auto& co = rotations[k].coefficients;
        auto* x0 = b_.CreateFAdd(b_.CreateFMul(c(co.slope), d_i0), c(co.offset));
        auto* C = splat(scalarMath(llvm::Intrinsic::cos, x0));
        auto* S = splat(scalarMath(llvm::Intrinsic::sin, x0));
        // cos(x0 + t) = C cos t - S sin t;  sin(x0 + t) = S cos t + C sin t
        b_.CreateStore(b_.CreateFSub(b_.CreateFMul(C, st[k].lane_cos), b_.CreateFMul(S, st[k].lane_sin)), st[k].c);
        b_.CreateStore(b_.CreateFAdd(b_.CreateFMul(S, st[k].lane_cos), b_.CreateFMul(C, st[k].lane_sin)), st[k].s);
      }
      auto* remaining = b_.CreateSub(n, i0);
      auto* vectors = b_.CreateUDiv(b_.CreateAdd(remaining, i64c(width_ - 1)), i64c(width_));
      auto* in_block = b_.CreateSelect(b_.CreateICmpSLT(vectors, i64c(kVectorsPerBlock)), vectors,
                                       i64c(kVectorsPerBlock));
      fb.loop(i64c(0), in_block, "vector", [&](llvm::Value* k) {
        auto* base = b_.CreateAdd(i0, b_.CreateMul(k, i64c(width_)));
        auto* index = b_.CreateFAdd(splat(b_.CreateSIToFP(base, f64_)), iota);
        auto* d = b_.CreateFAdd(splat(d0), b_.CreateFMul(index, splat(h)));
        ExprEmitter ee(
            b_, m_, vt_, g_, [&](const Node&) -> llvm::Value* { return d; },
            [&](llvm::Intrinsic::ID iid, const std::vector<llvm::Value*>& args) { return vectorMath(iid, args); });
        if (libmvec_ && Engine::get().vectorLibm235())
          ee.setVectorLibm([&](const char* base, llvm::Value* x) { return libmvecCall(base, {x}); });
        std::vector<llvm::Value*> cur_c, cur_s;
        for (size_t r = 0; r < rotations.size(); ++r) {
          cur_c.push_back(b_.CreateLoad(vt_, st[r].c));
          cur_s.push_back(b_.CreateLoad(vt_, st[r].s));
          if (rotations[r].cos_node >= 0) ee.bind(rotations[r].cos_node, cur_c.back());
          if (rotations[r].sin_node >= 0) ee.bind(rotations[r].sin_node, cur_s.back());
        }
        storeLanes(ee.emit(root_), out, base, n);
        for (size_t r = 0; r < rotations.size(); ++r) {
          auto *cc = cur_c[r], *ss = cur_s[r];
          b_.CreateStore(fma(cc, st[r].step_cos, b_.CreateFNeg(b_.CreateFMul(ss, st[r].step_sin))), st[r].c);
          b_.CreateStore(fma(ss, st[r].step_cos, b_.CreateFMul(cc, st[r].step_sin)), st[r].s);
        }
      });
    });
    b_.CreateRetVoid();
    return static_cast<int>(rotations.size());
  }

 private:
  llvm::Constant* c(double v) { return llvm::ConstantFP::get(f64_, v); }
  llvm::Constant* i64c(int64_t v) { return llvm::ConstantInt::get(i64_, static_cast<uint64_t>(v)); }
  llvm::Value* splat(llvm::Value* x) { return b_.CreateVectorSplat(static_cast<unsigned>(width_), x); }

  // x * y + z for the rotation's recurrence: llvm.fmuladd, one FMA
  // instruction where the host has FMA, a multiply and an add otherwise.
  llvm::Value* fma(llvm::Value* x, llvm::Value* y, llvm::Value* z) {
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::fmuladd, {vt_}), {x, y, z});
  }

  llvm::Value* scalarMath(llvm::Intrinsic::ID iid, llvm::Value* x) {
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, iid, {f64_}), {x});
  }

  // exp/log/sin/cos/pow on a vector: libmvec's variant of this width, or the
  // intrinsic (which the backend splits into scalar libm calls) without it.
  llvm::Value* vectorMath(llvm::Intrinsic::ID iid, const std::vector<llvm::Value*>& args) {
    const char* base = iid == llvm::Intrinsic::cos   ? "cos"
                       : iid == llvm::Intrinsic::sin ? "sin"
                       : iid == llvm::Intrinsic::exp ? "exp"
                       : iid == llvm::Intrinsic::log ? "log"
                       : iid == llvm::Intrinsic::pow ? "pow"
                                                     : nullptr;
    if (!libmvec_ || !base)
      return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, iid, {vt_}), args);
    return libmvecCall(base, args);
  }

  // libmvec's variant of `base` ("cos", "tanh", ...) for this vector width.
  llvm::Value* libmvecCall(const char* base, const std::vector<llvm::Value*>& args) {
    const char isa = width_ == 8 ? 'e' : width_ == 4 ? 'd' : 'b';
    const std::string name =
        fmt::format("_ZGV{}N{}{}_{}", isa, width_, args.size() == 2 ? "vv" : "v", base);
    std::vector<llvm::Type*> params(args.size(), vt_);
    auto callee = m_.getOrInsertFunction(name, llvm::FunctionType::get(vt_, params, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      f->setDoesNotThrow();
      f->setDoesNotAccessMemory();
    }
    return b_.CreateCall(callee, args);
  }

  // out[base + l] = v[l] for the lanes below n: a plain store when the whole
  // vector is in range, a masked store for the last one.
  void storeLanes(llvm::Value* v, llvm::Value* out, llvm::Value* base, llvm::Value* n) {
    auto* fn = b_.GetInsertBlock()->getParent();
    auto* full = llvm::BasicBlock::Create(ctx_, "full", fn);
    auto* partial = llvm::BasicBlock::Create(ctx_, "partial", fn);
    auto* done = llvm::BasicBlock::Create(ctx_, "stored", fn);
    auto* ptr = b_.CreateBitCast(b_.CreateGEP(f64_, out, base), llvm::PointerType::getUnqual(vt_));
    b_.CreateCondBr(b_.CreateICmpSLE(b_.CreateAdd(base, i64c(width_)), n), full, partial);
    b_.SetInsertPoint(full);
    b_.CreateAlignedStore(v, ptr, llvm::Align(8));
    b_.CreateBr(done);
    b_.SetInsertPoint(partial);
    std::vector<llvm::Constant*> lanes;
    for (int l = 0; l < width_; ++l) lanes.push_back(llvm::ConstantInt::get(i64_, static_cast<uint64_t>(l)));
    auto* lane = llvm::ConstantVector::get(lanes);
    auto* mask = b_.CreateICmpSLT(lane, b_.CreateVectorSplat(static_cast<unsigned>(width_), b_.CreateSub(n, base)));
    b_.CreateMaskedStore(v, ptr, llvm::Align(8), mask);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const Graph& g_;
  NodeId root_;
  int width_;
  bool libmvec_;
  llvm::Type *f64_, *i64_;
  llvm::FixedVectorType* vt_;
};

std::string keyFor(const Graph& g, NodeId root, int width) {
  return fmt::format("grid width={}\n{}", width, g.canonical({root}));
}

std::mutex g_mutex;
std::unordered_map<std::string, std::unique_ptr<CompiledGrid>> g_grids;

}  // namespace

const CompiledGrid& compileGrid(const Graph& g, NodeId root) {
  auto t0 = std::chrono::steady_clock::now();
  checkVariable(g, root);
  auto& engine = Engine::get();
  const int width = engine.vectorDoubles();
  const std::string key = keyFor(g, root, width);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto it = g_grids.find(key); it != g_grids.end()) return *it->second;
  auto kernel = std::make_unique<CompiledGrid>();
  kernel->hash = formula::hashText(key);
  kernel->width = width;
  const std::string name = fmt::format("posc_grid_{:016x}", kernel->hash);
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = engine.newModule(*ctx, name);
  kernel->rotated = GridGenerator(*m, g, root, width, engine.vectorMathAvailable()).generate(name);
  engine.optimise(*m);
  kernel->fn = reinterpret_cast<CompiledGrid::Fn>(engine.link(std::move(ctx), std::move(m), {name})[0]);
  kernel->compile_ms = msSince(t0);
  detail::noteCompiled();
  auto& ref = *kernel;
  g_grids.emplace(key, std::move(kernel));
  return ref;
}

std::string gridIR(const Graph& g, NodeId root) {
  checkVariable(g, root);
  auto& engine = Engine::get();
  const int width = engine.vectorDoubles();
  const std::string name = fmt::format("posc_grid_{:016x}", formula::hashText(keyFor(g, root, width)));
  llvm::LLVMContext ctx;
  auto m = engine.newModule(ctx, name);
  GridGenerator(*m, g, root, width, engine.vectorMathAvailable()).generate(name);
  engine.optimise(*m);
  return Engine::print(*m);
}

}  // namespace posc::jit
