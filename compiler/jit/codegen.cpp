// LLVM IR generation for fused attention kernels and elementwise maps, and the
// kernel cache: see kernels.h. The IR is written plainly (loop counters and
// accumulators in allocas, one loop per pass over a row) and left to the O3
// pipeline: SROA makes registers of the allocas, LICM hoists what depends
// only on the query and head, the loop vectoriser widens each pass and maps
// exp/log/sin/cos/pow onto libmvec.
#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "compiler/jit/engine.h"
#include "compiler/jit/kernels.h"

namespace posc::jit {

bool available() { return true; }

namespace {

using formula::Graph;
using formula::Node;
using formula::NodeId;
using formula::Op;

// Emits reachable nodes of a graph as IR values of one floating type. Leaves
// come from a callback; values are memoised, so shared subexpressions are
// emitted once per emitter (one emitter per loop body).
class ExprEmitter {
 public:
  ExprEmitter(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Type* t, const Graph& g,
              std::function<llvm::Value*(const Node&)> leaf)
      : b_(b), m_(m), t_(t), g_(g), leaf_(std::move(leaf)) {}

  llvm::Value* emit(NodeId id) {
    if (auto it = values_.find(id); it != values_.end()) return it->second;
    const Node& n = g_.node(id);
    llvm::Value* r = nullptr;
    auto a = [&] { return emit(n.a); };
    auto bb = [&] { return emit(n.b); };
    auto call = [&](llvm::Intrinsic::ID iid, std::vector<llvm::Value*> args) -> llvm::Value* {
      auto* f = llvm::Intrinsic::getDeclaration(&m_, iid, {t_});
      return b_.CreateCall(f, args);
    };
    auto c = [&](double v) { return llvm::ConstantFP::get(t_, v); };
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
        // tanh(x) = 1 - 2 / (exp(2x) + 1): exact limits at +-inf, absolute
        // error a few ulp of 1 near 0 (libmvec has no vector tanh in LLVM 14).
        auto* e = call(llvm::Intrinsic::exp, {b_.CreateFMul(c(2.0), a())});
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
  std::unordered_map<NodeId, llvm::Value*> values_;
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

llvm::FastMathFlags reductionFlags() {
  llvm::FastMathFlags f;
  f.setAllowReassoc();
  f.setNoSignedZeros();
  return f;
}

llvm::Function* declare(llvm::Module& m, const std::string& name, llvm::Type* ret,
                        const std::vector<llvm::Type*>& params, int pointer_count) {
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(ret, params, false),
                                    llvm::Function::ExternalLinkage, name, m);
  for (int i = 0; i < pointer_count; ++i) fn->addParamAttr(i, llvm::Attribute::NoAlias);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  return fn;
}

// The kernel's formulas: the term chain and its derivatives.
struct KernelFormulas {
  Graph g;
  NodeId chain = -1;
  NodeId d_score = -1;
  std::vector<std::pair<int, NodeId>> d_params;  // (param index, derivative) of learned params
};

struct Leaves {
  llvm::Value* q_base;  // qch
  llvm::Value* k_base;  // kch
  llvm::Value* params;
  llvm::Value* head_fp;
  llvm::Value* Lq;
  llvm::Value* Lk;
};

class AttentionGenerator {
 public:
  AttentionGenerator(const AttentionSpec& spec, const KernelFormulas& kf, llvm::Module& m)
      : spec_(spec), kf_(kf), m_(m), ctx_(m.getContext()), b_(ctx_) {
    t_ = spec.dtype == DType::F32 ? llvm::Type::getFloatTy(ctx_) : llvm::Type::getDoubleTy(ctx_);
    i64_ = llvm::Type::getInt64Ty(ctx_);
    ptr_ = llvm::PointerType::getUnqual(t_);
  }

  void forward(const std::string& name) {
    auto* fn = declare(m_, name, i64_, {ptr_, ptr_, ptr_, ptr_, ptr_, i64_, i64_, i64_}, 5);
    FunctionBuilder fb(fn, b_);
    auto args = argList(fn);
    llvm::Value *scores = args[0], *probs = args[1];
    Leaves lv{args[2], args[3], args[4], b_.CreateSIToFP(args[7], t_), args[5], args[6]};
    llvm::Value *Lq = args[5], *Lk = args[6];
    auto* width = b_.CreateAdd(Lk, llvm::ConstantInt::get(i64_, spec_.null_slot ? 1 : 0));
    auto* past = b_.CreateSub(Lk, Lq);
    auto* bad_rows = fb.local(i64_, "bad_rows", llvm::ConstantInt::get(i64_, 0));
    const bool floor_zero = spec_.null_slot || spec_.softmax == plan::SoftmaxKind::Softmax1;
    auto* minus_inf = llvm::ConstantFP::getInfinity(t_, true);
    auto* zero = llvm::ConstantFP::get(t_, 0.0);
    auto* maxnum = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::maxnum, {t_});
    auto* expf = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::exp, {t_});
    auto* fabs = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::fabs, {t_});
    fb.loop(llvm::ConstantInt::get(i64_, 0), Lq, "i", [&](llvm::Value* i) {
      auto* srow = b_.CreateGEP(t_, scores, b_.CreateMul(i, Lk));
      auto* prow = b_.CreateGEP(t_, probs, b_.CreateMul(i, width));
      auto* limit = b_.CreateAdd(b_.CreateAdd(past, i), llvm::ConstantInt::get(i64_, 1));
      // Pass 1: terms, row maximum (0 when the null slot or softmax1 adds exp(0)).
      auto* mx = fb.local(t_, "max", floor_zero ? zero : minus_inf);
      fb.loop(llvm::ConstantInt::get(i64_, 0), limit, "j", [&](llvm::Value* j) {
        auto* s = b_.CreateLoad(t_, b_.CreateGEP(t_, srow, j));
        ExprEmitter ee(b_, m_, t_, kf_.g, leafFn(lv, i, j, s));
        auto* v = ee.emit(kf_.chain);
        b_.CreateStore(v, b_.CreateGEP(t_, prow, j));
        auto* call = b_.CreateCall(maxnum, {b_.CreateLoad(t_, mx), v});
        auto flags = reductionFlags();
        flags.setNoNaNs();  // a NaN score still poisons the sum below
        call->setFastMathFlags(flags);
        b_.CreateStore(call, mx);
      });
      auto* m = b_.CreateLoad(t_, mx);
      // Pass 2: exponentials and their sum.
      auto* sum = fb.local(t_, "sum", zero);
      fb.loop(llvm::ConstantInt::get(i64_, 0), limit, "j", [&](llvm::Value* j) {
        auto* p = b_.CreateGEP(t_, prow, j);
        auto* e = b_.CreateCall(expf, {b_.CreateFSub(b_.CreateLoad(t_, p), m)});
        b_.CreateStore(e, p);
        b_.setFastMathFlags(reductionFlags());
        b_.CreateStore(b_.CreateFAdd(b_.CreateLoad(t_, sum), e), sum);
        b_.clearFastMathFlags();
      });
      llvm::Value* total = b_.CreateLoad(t_, sum);
      auto* e0 = b_.CreateCall(expf, {b_.CreateFNeg(m)});  // exp(0 - m)
      if (spec_.null_slot) total = b_.CreateFAdd(total, e0);
      if (spec_.softmax == plan::SoftmaxKind::Softmax1) total = b_.CreateFAdd(total, e0);
      auto* inv = b_.CreateFDiv(llvm::ConstantFP::get(t_, 1.0), total);
      // Pass 3: normalise; masked keys get 0.
      fb.loop(llvm::ConstantInt::get(i64_, 0), limit, "j", [&](llvm::Value* j) {
        auto* p = b_.CreateGEP(t_, prow, j);
        b_.CreateStore(b_.CreateFMul(b_.CreateLoad(t_, p), inv), p);
      });
      fb.loop(limit, Lk, "j", [&](llvm::Value* j) {
        b_.CreateStore(zero, b_.CreateGEP(t_, prow, j));
      });
      if (spec_.null_slot) b_.CreateStore(b_.CreateFMul(e0, inv), b_.CreateGEP(t_, prow, Lk));
      auto* finite = b_.CreateFCmpONE(b_.CreateCall(fabs, {total}),
                                      llvm::ConstantFP::getInfinity(t_));
      b_.CreateStore(b_.CreateAdd(b_.CreateLoad(i64_, bad_rows),
                                  b_.CreateZExt(b_.CreateNot(finite), i64_)),
                     bad_rows);
    });
    b_.CreateRet(b_.CreateLoad(i64_, bad_rows));
  }

  void backward(const std::string& name) {
    auto* voidt = llvm::Type::getVoidTy(ctx_);
    auto* fn = declare(m_, name, voidt,
                       {ptr_, ptr_, ptr_, ptr_, ptr_, ptr_, ptr_, ptr_, i64_, i64_, i64_}, 8);
    FunctionBuilder fb(fn, b_);
    auto args = argList(fn);
    llvm::Value *scores = args[0], *probs = args[1], *gprobs = args[2], *gscores = args[3],
                *gparams = args[4];
    Leaves lv{args[5], args[6], args[7], b_.CreateSIToFP(args[10], t_), args[8], args[9]};
    llvm::Value *Lq = args[8], *Lk = args[9];
    auto* width = b_.CreateAdd(Lk, llvm::ConstantInt::get(i64_, spec_.null_slot ? 1 : 0));
    auto* past = b_.CreateSub(Lk, Lq);
    auto* zero = llvm::ConstantFP::get(t_, 0.0);
    std::vector<llvm::AllocaInst*> block_acc;
    for (size_t k = 0; k < kf_.d_params.size(); ++k)
      block_acc.push_back(fb.local(t_, "gparam", zero));
    fb.loop(llvm::ConstantInt::get(i64_, 0), Lq, "i", [&](llvm::Value* i) {
      auto* srow = b_.CreateGEP(t_, scores, b_.CreateMul(i, Lk));
      auto* gsrow = b_.CreateGEP(t_, gscores, b_.CreateMul(i, Lk));
      auto* prow = b_.CreateGEP(t_, probs, b_.CreateMul(i, width));
      auto* grow = b_.CreateGEP(t_, gprobs, b_.CreateMul(i, width));
      auto* limit = b_.CreateAdd(b_.CreateAdd(past, i), llvm::ConstantInt::get(i64_, 1));
      // dot = sum_j g_j p_j over every output column of the row.
      auto* dot = fb.local(t_, "dot", zero);
      fb.loop(llvm::ConstantInt::get(i64_, 0), limit, "j", [&](llvm::Value* j) {
        auto* gp = b_.CreateFMul(b_.CreateLoad(t_, b_.CreateGEP(t_, grow, j)),
                                 b_.CreateLoad(t_, b_.CreateGEP(t_, prow, j)));
        b_.setFastMathFlags(reductionFlags());
        b_.CreateStore(b_.CreateFAdd(b_.CreateLoad(t_, dot), gp), dot);
        b_.clearFastMathFlags();
      });
      llvm::Value* d = b_.CreateLoad(t_, dot);
      if (spec_.null_slot)
        d = b_.CreateFAdd(d, b_.CreateFMul(b_.CreateLoad(t_, b_.CreateGEP(t_, grow, Lk)),
                                           b_.CreateLoad(t_, b_.CreateGEP(t_, prow, Lk))));
      std::vector<llvm::AllocaInst*> row_acc;
      for (size_t k = 0; k < kf_.d_params.size(); ++k) row_acc.push_back(fb.local(t_, "gp", zero));
      fb.loop(llvm::ConstantInt::get(i64_, 0), limit, "j", [&](llvm::Value* j) {
        auto* p = b_.CreateLoad(t_, b_.CreateGEP(t_, prow, j));
        auto* g = b_.CreateLoad(t_, b_.CreateGEP(t_, grow, j));
        auto* dpost = b_.CreateFMul(p, b_.CreateFSub(g, d));  // d loss / d post-term score
        auto* s = b_.CreateLoad(t_, b_.CreateGEP(t_, srow, j));
        ExprEmitter ee(b_, m_, t_, kf_.g, leafFn(lv, i, j, s));
        b_.CreateStore(b_.CreateFMul(dpost, ee.emit(kf_.d_score)), b_.CreateGEP(t_, gsrow, j));
        for (size_t k = 0; k < kf_.d_params.size(); ++k) {
          auto* contrib = b_.CreateFMul(dpost, ee.emit(kf_.d_params[k].second));
          b_.setFastMathFlags(reductionFlags());
          b_.CreateStore(b_.CreateFAdd(b_.CreateLoad(t_, row_acc[k]), contrib), row_acc[k]);
          b_.clearFastMathFlags();
        }
      });
      fb.loop(limit, Lk, "j", [&](llvm::Value* j) {
        b_.CreateStore(zero, b_.CreateGEP(t_, gsrow, j));
      });
      for (size_t k = 0; k < kf_.d_params.size(); ++k)
        b_.CreateStore(b_.CreateFAdd(b_.CreateLoad(t_, block_acc[k]),
                                     b_.CreateLoad(t_, row_acc[k])),
                       block_acc[k]);
    });
    for (size_t k = 0; k < kf_.d_params.size(); ++k) {
      auto* slot = b_.CreateGEP(t_, gparams, llvm::ConstantInt::get(i64_, kf_.d_params[k].first));
      b_.CreateStore(b_.CreateFAdd(b_.CreateLoad(t_, slot), b_.CreateLoad(t_, block_acc[k])), slot);
    }
    b_.CreateRetVoid();
  }

 private:
  std::vector<llvm::Value*> argList(llvm::Function* fn) {
    std::vector<llvm::Value*> out;
    for (auto& a : fn->args()) out.push_back(&a);
    return out;
  }

  std::function<llvm::Value*(const Node&)> leafFn(const Leaves& lv, llvm::Value* i, llvm::Value* j,
                                                  llvm::Value* s) {
    return [this, lv, i, j, s](const Node& n) -> llvm::Value* {
      auto channel = [&](llvm::Value* base, llvm::Value* len, llvm::Value* idx) {
        auto* off = b_.CreateAdd(b_.CreateMul(llvm::ConstantInt::get(i64_, n.index), len), idx);
        return b_.CreateLoad(t_, b_.CreateGEP(t_, base, off));
      };
      switch (n.op) {
        case Op::Score: return s;
        case Op::QChannel: return channel(lv.q_base, lv.Lq, i);
        case Op::KChannel: return channel(lv.k_base, lv.Lk, j);
        case Op::Head: return lv.head_fp;
        case Op::Param:
          return b_.CreateLoad(t_, b_.CreateGEP(t_, lv.params, llvm::ConstantInt::get(i64_, n.index)));
        default: throw std::invalid_argument("attention kernel: a formula reads a free variable");
      }
    };
  }

  const AttentionSpec& spec_;
  const KernelFormulas& kf_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  llvm::Type* t_;
  llvm::Type* i64_;
  llvm::PointerType* ptr_;
};

std::mutex g_mutex;
std::unordered_map<std::string, std::unique_ptr<AttentionKernel>> g_attention;
std::unordered_map<std::string, std::unique_ptr<MapKernel>> g_maps;

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

const AttentionKernel& compileAttention(const AttentionSpec& spec) {
  auto t0 = std::chrono::steady_clock::now();
  KernelFormulas kf;
  kf.chain = buildTermChain(kf.g, spec.terms);
  std::string key = fmt::format("attention {} softmax={} null={} learned=",
                                spec.dtype == DType::F32 ? "f32" : "f64",
                                spec.softmax == plan::SoftmaxKind::Softmax1 ? 1 : 0,
                                spec.null_slot ? 1 : 0);
  for (bool l : spec.learned) key += l ? '1' : '0';
  key += "\n" + kf.g.canonical({kf.chain});
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto it = g_attention.find(key); it != g_attention.end()) return *it->second;

  kf.d_score = kf.g.derivative(kf.chain, formula::Wrt::score());
  for (size_t p = 0; p < spec.learned.size(); ++p) {
    if (!spec.learned[p]) continue;
    NodeId d = kf.g.derivative(kf.chain, formula::Wrt::param(static_cast<int>(p)));
    if (!kf.g.isConst(d, 0.0)) kf.d_params.emplace_back(static_cast<int>(p), d);
  }
  auto kernel = std::make_unique<AttentionKernel>();
  kernel->key = key;
  kernel->hash = formula::hashText(key);
  const std::string fwd = fmt::format("posc_attention_fwd_{:016x}", kernel->hash);
  const std::string bwd = fmt::format("posc_attention_bwd_{:016x}", kernel->hash);
  auto& engine = Engine::get();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = engine.newModule(*ctx, fmt::format("attention_{:016x}", kernel->hash));
  AttentionGenerator gen(spec, kf, *m);
  gen.forward(fwd);
  gen.backward(bwd);
  auto addrs = engine.optimiseAndLink(std::move(ctx), std::move(m), {fwd, bwd}, kernel->ir);
  kernel->forward = addrs[0];
  kernel->backward = addrs[1];
  kernel->compile_ms = msSince(t0);
  auto& ref = *kernel;
  g_attention.emplace(key, std::move(kernel));
  return ref;
}

const MapKernel& compileMap(const Graph& g, NodeId root, int var_count) {
  auto t0 = std::chrono::steady_clock::now();
  for (NodeId id : g.reachable({root})) {
    const Node& n = g.node(id);
    if (formula::arity(n.op) == 0 && n.op != Op::Const &&
        (n.op != Op::Var || n.index < 0 || n.index >= var_count))
      throw std::invalid_argument(fmt::format(
          "compileMap: the expression reads '{}', which is not one of its {} variables",
          g.render(id), var_count));
  }
  std::string key = fmt::format("map vars={}\n{}", var_count, g.canonical({root}));
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto it = g_maps.find(key); it != g_maps.end()) return *it->second;
  auto kernel = std::make_unique<MapKernel>();
  kernel->hash = formula::hashText(key);
  const std::string name = fmt::format("posc_map_{:016x}", kernel->hash);
  auto& engine = Engine::get();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = engine.newModule(*ctx, name);
  {
    llvm::IRBuilder<> b(*ctx);
    auto* t = llvm::Type::getDoubleTy(*ctx);
    auto* i64 = llvm::Type::getInt64Ty(*ctx);
    auto* ptr = llvm::PointerType::getUnqual(t);
    auto* fn = declare(*m, name, llvm::Type::getVoidTy(*ctx),
                       {llvm::PointerType::getUnqual(ptr), ptr, i64}, 2);
    FunctionBuilder fb(fn, b);
    auto* vars = fn->getArg(0);
    auto* out = fn->getArg(1);
    std::vector<llvm::Value*> bases;
    for (int v = 0; v < var_count; ++v)
      bases.push_back(b.CreateLoad(ptr, b.CreateGEP(ptr, vars, llvm::ConstantInt::get(i64, v))));
    fb.loop(llvm::ConstantInt::get(i64, 0), fn->getArg(2), "i", [&](llvm::Value* i) {
      ExprEmitter ee(b, *m, t, g, [&](const Node& n) -> llvm::Value* {
        return b.CreateLoad(t, b.CreateGEP(t, bases.at(static_cast<size_t>(n.index)), i));
      });
      b.CreateStore(ee.emit(root), b.CreateGEP(t, out, i));
    });
    b.CreateRetVoid();
  }
  auto addrs = engine.optimiseAndLink(std::move(ctx), std::move(m), {name}, kernel->ir);
  kernel->fn = reinterpret_cast<MapKernel::Fn>(addrs[0]);
  kernel->compile_ms = msSince(t0);
  auto& ref = *kernel;
  g_maps.emplace(key, std::move(kernel));
  return ref;
}

size_t compiledKernelCount() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_attention.size() + g_maps.size();
}

}  // namespace posc::jit
