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
  // How tanh is computed on vectors (the grid kernels' libmvec call); unset,
  // vector tanh uses the exp formula.
  void setVectorTanh(std::function<llvm::Value*(llvm::Value*)> f) { vector_tanh_ = std::move(f); }

  llvm::Value* emit(NodeId id) {
    if (auto it = values_.find(id); it != values_.end()) return it->second;
    const Node& n = g_.node(id);
    llvm::Value* r = nullptr;
    auto a = [&] { return emit(n.a); };
    auto bb = [&] { return emit(n.b); };
    auto call = [&](llvm::Intrinsic::ID iid, std::vector<llvm::Value*> args) -> llvm::Value* {
      if (math_ && iid != llvm::Intrinsic::fabs && iid != llvm::Intrinsic::sqrt) return math_(iid, args);
      auto* f = llvm::Intrinsic::getDeclaration(&m_, iid, {t_});
      return b_.CreateCall(f, args);
    };
    auto c = [&](double v) { return llvm::ConstantFP::get(t_, v); };  // splat for vectors
    auto indicator = [&](llvm::Value* cond) { return b_.CreateUIToFP(cond, t_); };
    switch (n.op) {
      case Op::Const: r = c(n.value); break;
      case Op::Score: case Op::QChannel: case Op::KChannel: case Op::Head: case Op::Param:
      case Op::Var:
        r = leaf_(n);
        break;
      case Op::Neg: r = b_.CreateFNeg(a()); break;
      case Op::Abs: r = call(llvm::Intrinsic::fabs, {a()}); break;
      case Op::Exp: r = call(llvm::Intrinsic::exp, {a()}); break;
      case Op::Log: r = call(llvm::Intrinsic::log, {a()}); break;
      case Op::Sqrt: r = call(llvm::Intrinsic::sqrt, {a()}); break;
      case Op::Cos: r = call(llvm::Intrinsic::cos, {a()}); break;
      case Op::Sin: r = call(llvm::Intrinsic::sin, {a()}); break;
      case Op::Tanh: {
        auto* x = a();
        if ((r = tanhCall(x))) break;
        // Without libmvec's tanh: tanh(x) = 1 - 2 / (exp(2x) + 1), exact
        // limits at +-inf, but an absolute error of a few ulp of 1 near 0.
        auto* e = call(llvm::Intrinsic::exp, {b_.CreateFMul(c(2.0), x)});
        r = b_.CreateFSub(c(1.0), b_.CreateFDiv(c(2.0), b_.CreateFAdd(e, c(1.0))));
        break;
      }
      case Op::Sigmoid: {
        auto* e = call(llvm::Intrinsic::exp, {b_.CreateFNeg(a())});
        r = b_.CreateFDiv(c(1.0), b_.CreateFAdd(c(1.0), e));
        break;
      }
      case Op::Relu: {
        auto* x = a();
        r = b_.CreateSelect(b_.CreateFCmpOGT(x, c(0.0)), x, c(0.0));
        break;
      }
      case Op::Add: r = b_.CreateFAdd(a(), bb()); break;
      case Op::Sub: r = b_.CreateFSub(a(), bb()); break;
      case Op::Mul: r = b_.CreateFMul(a(), bb()); break;
      case Op::Div: r = b_.CreateFDiv(a(), bb()); break;
      case Op::Pow: r = call(llvm::Intrinsic::pow, {a(), bb()}); break;
      case Op::Min: {
        auto *x = a(), *y = bb();
        r = b_.CreateSelect(b_.CreateFCmpOLE(x, y), x, y);
        break;
      }
      case Op::Max: {
        auto *x = a(), *y = bb();
        r = b_.CreateSelect(b_.CreateFCmpOGE(x, y), x, y);
        break;
      }
      case Op::Lt: r = indicator(b_.CreateFCmpOLT(a(), bb())); break;
      case Op::Le: r = indicator(b_.CreateFCmpOLE(a(), bb())); break;
      case Op::Gt: r = indicator(b_.CreateFCmpOGT(a(), bb())); break;
      case Op::Ge: r = indicator(b_.CreateFCmpOGE(a(), bb())); break;
      case Op::Eq: r = indicator(b_.CreateFCmpOEQ(a(), bb())); break;
      case Op::Ne: r = indicator(b_.CreateFCmpUNE(a(), bb())); break;
      case Op::Select: {
        auto* cond = b_.CreateFCmpUNE(a(), c(0.0));
        auto* x = bb();
        auto* y = emit(n.c);
        r = b_.CreateSelect(cond, x, y);
        break;
      }
    }
    values_[id] = r;
    return r;
  }

 private:
  llvm::IRBuilder<>& b_;
  llvm::Module& m_;
  llvm::Type* t_;
  const Graph& g_;
  std::function<llvm::Value*(const Node&)> leaf_;
  Math math_;
  std::function<llvm::Value*(llvm::Value*)> vector_tanh_;
  std::unordered_map<NodeId, llvm::Value*> values_;

  // libm's tanh (double) or tanhf (float), declared free of side effects so
  // the loop vectoriser maps it onto libmvec's vector tanh (registered by
  // the engine when this glibc has it, 2.35 and later); null without it.
  llvm::Value* tanhCall(llvm::Value* x) {
    if (!Engine::get().vectorTanh()) return nullptr;
    if (t_->isVectorTy()) return vector_tanh_ ? vector_tanh_(x) : nullptr;
    const char* name = t_->isFloatTy() ? "tanhf" : "tanh";
    auto callee = m_.getOrInsertFunction(name, llvm::FunctionType::get(t_, {t_}, false));
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

// Counts kernels compiled in this process (compiledKernelCount()).
void noteCompiled();

}  // namespace posc::jit::detail
