// IR-building helpers shared by the kernel generators (internal to
// compiler/jit; only code that includes LLVM uses this header): an emitter of
// formula expressions, a builder of counted loops, and function declaration.
//
// The generators write IR plainly - loop counters and accumulators in allocas,
// one loop per pass - and leave the rest to the pipeline (engine.cpp): SROA
// makes registers of the allocas, LICM hoists what depends only on the query
// and head, the loop vectoriser widens each pass and maps exp/log/sin/cos/pow
// onto libmvec.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/formula/formula.h"
#include "compiler/jit/engine.h"

namespace posc::jit::detail {

using formula::Graph;
using formula::Node;
using formula::NodeId;
using formula::Op;

// Emits reachable nodes of a graph as IR values of one floating type. Leaves
// come from a callback; values are memoised, so shared subexpressions are
// emitted once per emitter (one emitter per loop body).
//
// `t` may be a vector type (the grid kernels emit explicit vectors); `math`,
// when given, emits exp/log/sin/cos/pow instead of the LLVM intrinsic (the
// grid kernels call libmvec's variants directly, since only the vectorisers
// map intrinsics onto them). bind() fixes a node's value in advance.
class ExprEmitter {
 public:
  using Math = std::function<llvm::Value*(llvm::Intrinsic::ID, const std::vector<llvm::Value*>&)>;
  ExprEmitter(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Type* t, const Graph& g,
              std::function<llvm::Value*(const Node&)> leaf, Math math = nullptr)
      : b_(b), m_(m), t_(t), g_(g), leaf_(std::move(leaf)), math_(std::move(math)) {}

  void bind(NodeId id, llvm::Value* v) { values_[id] = v; }
  // How reads of storage (Lookup) are emitted, given the node and its
  // index's value; unset, a read is an error (maps and grids have no tables).
  using Read = std::function<llvm::Value*(const Node&, llvm::Value* index)>;
  void setRead(Read f) { read_ = std::move(f); }
  // How libm functions (tanh, log1p) are computed on vectors: the grid
  // kernels call libmvec's variant; unset, see libm().
  using VectorLibm = std::function<llvm::Value*(const char* base, llvm::Value*)>;
  void setVectorLibm(VectorLibm f) { vector_libm_ = std::move(f); }

  // Every operation lowers as its `ir` column in ops.def says, over the
  // operands' values A, B, C and the helpers below.
  llvm::Value* emit(NodeId id) {
    if (auto it = values_.find(id); it != values_.end()) return it->second;
    const Node& n = g_.node(id);
    llvm::Value* r = nullptr;
    if (formula::arity(n.op) == 0) {
      r = n.op == Op::Const ? k(n.value) : leaf_(n);
    } else if (expr::isRead(n.op)) {
      if (!read_) throw std::invalid_argument("this kernel has no table storage: " + g_.render(id));
      r = read_(n, emit(n.a));
    } else {
      llvm::Value* A = emit(n.a);
      llvm::Value* B = n.b >= 0 ? emit(n.b) : nullptr;
      llvm::Value* C = n.c >= 0 ? emit(n.c) : nullptr;
      (void)B, (void)C;
      llvm::IRBuilder<>& ir = b_;
      switch (n.op) {
#define POSC_OP_UNARY(Name, name, symbol, function, precedence, type, fold, grad, tensor, python, lowering) \
  case Op::Name:                                                                                            \
    r = lowering;                                                                                           \
    break;
#define POSC_OP_BINARY(Name, name, symbol, function, precedence, commutative, type, fold, grad, tensor, python, lowering) \
  case Op::Name:                                                                                                          \
    r = lowering;                                                                                                         \
    break;
#define POSC_OP_TERNARY(Name, name, symbol, function, precedence, type, fold, grad, tensor, python, lowering) \
  case Op::Name:                                                                                              \
    r = lowering;                                                                                             \
    break;
#include "compiler/expr/ops.def"
        default: break;
      }
    }
    values_[id] = r;
    return r;
  }

  // The helpers the `ir` column of ops.def is written in.
  llvm::Constant* k(double v) { return llvm::ConstantFP::get(t_, v); }  // a splat for vectors
  llvm::Value* ind(llvm::Value* cond) { return b_.CreateUIToFP(cond, t_); }
  llvm::Value* truth(llvm::Value* x) { return b_.CreateFCmpUNE(x, k(0.0)); }
  // NaN-propagating min and max (expr::minimum, expr::maximum).
  llvm::Value* minimum(llvm::Value* x, llvm::Value* y) {
    return b_.CreateSelect(b_.CreateOr(b_.CreateFCmpOLE(x, y), b_.CreateFCmpUNO(x, x)), x, y);
  }
  llvm::Value* maximum(llvm::Value* x, llvm::Value* y) {
    return b_.CreateSelect(b_.CreateOr(b_.CreateFCmpOGE(x, y), b_.CreateFCmpUNO(x, x)), x, y);
  }
  // An LLVM intrinsic; exp/log/sin/cos/pow go through `math` when given.
  llvm::Value* fn(llvm::Intrinsic::ID iid, llvm::Value* x, llvm::Value* y = nullptr) {
    std::vector<llvm::Value*> args = {x};
    if (y) args.push_back(y);
    const bool transcendental = iid == llvm::Intrinsic::exp || iid == llvm::Intrinsic::log ||
                                iid == llvm::Intrinsic::sin || iid == llvm::Intrinsic::cos ||
                                iid == llvm::Intrinsic::pow;
    if (math_ && transcendental) return math_(iid, args);
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, iid, {t_}), args);
  }
  // tanh: libm's where this glibc vectorises it, else 1 - 2 / (exp(2x) + 1)
  // (exact limits at +-inf, but an absolute error of a few ulp of 1 near 0).
  llvm::Value* tanh(llvm::Value* x) {
    if (Engine::get().vectorLibm235())
      if (llvm::Value* r = libm("tanh", x, /*fallback=*/false)) return r;
    auto* e = fn(llvm::Intrinsic::exp, b_.CreateFMul(k(2.0), x));
    return b_.CreateFSub(k(1.0), b_.CreateFDiv(k(2.0), b_.CreateFAdd(e, k(1.0))));
  }
  // A libm function of one argument ("log1p", "tanh"). On scalars, the C
  // library's, declared free of side effects so that the loop vectoriser
  // maps it onto libmvec (the engine registers glibc 2.35's functions where
  // this glibc has them). On vectors, the hook set by setVectorLibm (the grid
  // kernels' direct libmvec call), else one scalar call per lane; with
  // `fallback` false, null where there is no hook.
  llvm::Value* libm(const char* base, llvm::Value* x, bool fallback = true) {
    if (!t_->isVectorTy()) return scalarLibm(base, t_, x);
    if (vector_libm_) return vector_libm_(base, x);
    if (!fallback) return nullptr;
    auto* vt = llvm::cast<llvm::FixedVectorType>(t_);
    llvm::Value* out = llvm::UndefValue::get(vt);
    for (unsigned l = 0; l < vt->getNumElements(); ++l)
      out = b_.CreateInsertElement(out, scalarLibm(base, vt->getElementType(), b_.CreateExtractElement(x, l)), l);
    return out;
  }

 private:
  llvm::IRBuilder<>& b_;
  llvm::Module& m_;
  llvm::Type* t_;
  const Graph& g_;
  std::function<llvm::Value*(const Node&)> leaf_;
  Math math_;
  VectorLibm vector_libm_;
  Read read_;
  std::unordered_map<NodeId, llvm::Value*> values_;

  llvm::Value* scalarLibm(const char* base, llvm::Type* t, llvm::Value* x) {
    const std::string name = std::string(base) + (t->isFloatTy() ? "f" : "");
    auto callee = m_.getOrInsertFunction(name, llvm::FunctionType::get(t, {t}, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      f->setDoesNotAccessMemory();
      f->setDoesNotThrow();
      f->addFnAttr(llvm::Attribute::WillReturn);
    }
    return b_.CreateCall(callee, {x});
  }
};

// A function under construction: entry-block allocas and counted loops.
class FunctionBuilder {
 public:
  FunctionBuilder(llvm::Function* f, llvm::IRBuilder<>& b) : f_(f), b_(b) {
    entry_ = llvm::BasicBlock::Create(f->getContext(), "entry", f);
    b_.SetInsertPoint(entry_);
  }
  llvm::AllocaInst* local(llvm::Type* t, const char* name, llvm::Value* init) {
    llvm::IRBuilder<> eb(entry_, entry_->begin());
    auto* a = eb.CreateAlloca(t, nullptr, name);
    b_.CreateStore(init, a);
    return a;
  }
  // for (i = begin; i < end; ++i) body(i)
  // Inner loops over keys ask the vectoriser to fold the remainder into
  // masked vector iterations: rows are short (40 keys in training, fewer in
  // early rows of the causal triangle) and a scalar remainder would call
  // scalar expf for up to VF - 1 keys of every row.
  void loop(llvm::Value* begin, llvm::Value* end, const char* name,
            const std::function<void(llvm::Value*)>& body) {
    auto& ctx = f_->getContext();
    auto* i64 = llvm::Type::getInt64Ty(ctx);
    auto* counter = local(i64, name, begin);
    auto* header = llvm::BasicBlock::Create(ctx, std::string(name) + ".header", f_);
    auto* loop_body = llvm::BasicBlock::Create(ctx, std::string(name) + ".body", f_);
    auto* exit = llvm::BasicBlock::Create(ctx, std::string(name) + ".exit", f_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    auto* i = b_.CreateLoad(i64, counter);
    b_.CreateCondBr(b_.CreateICmpSLT(i, end), loop_body, exit);
    b_.SetInsertPoint(loop_body);
    body(i);
    b_.CreateStore(b_.CreateNSWAdd(b_.CreateLoad(i64, counter), llvm::ConstantInt::get(i64, 1)),
                   counter);
    auto* latch = b_.CreateBr(header);
    if (name[0] == 'j') {
      auto* fold = llvm::MDNode::get(
          ctx, {llvm::MDString::get(ctx, "llvm.loop.vectorize.predicate.enable"),
                llvm::ConstantAsMetadata::get(llvm::ConstantInt::getTrue(ctx))});
      auto* self = llvm::MDNode::getDistinct(ctx, {nullptr, fold});
      self->replaceOperandWith(0, self);
      latch->setMetadata(llvm::LLVMContext::MD_loop, self);
    }
    b_.SetInsertPoint(exit);
  }

 private:
  llvm::Function* f_;
  llvm::IRBuilder<>& b_;
  llvm::BasicBlock* entry_;
};

inline llvm::FastMathFlags reductionFlags() {
  llvm::FastMathFlags f;
  f.setAllowReassoc();
  f.setNoSignedZeros();
  return f;
}

inline llvm::Function* declare(llvm::Module& m, const std::string& name, llvm::Type* ret,
                        const std::vector<llvm::Type*>& params, int pointer_count) {
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(ret, params, false),
                                    llvm::Function::ExternalLinkage, name, m);
  for (int i = 0; i < pointer_count; ++i) fn->addParamAttr(i, llvm::Attribute::NoAlias);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  return fn;
}

inline double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Counts kernels compiled in this process (compiledFunctionCount()).
void noteCompiled();

}  // namespace posc::jit::detail
