// Fused attention kernels: generation, the cache, and backward functions
// compiled on first use. See compiled.h for the functions' contract.
#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "compiler/jit/emit.h"
#include "compiler/jit/engine.h"
#include "compiler/jit/compiled.h"

namespace posc::jit {

bool available() { return true; }

namespace {

using namespace detail;

// The kernel's formulas: the term chain and its derivatives.
struct KernelFormulas {
  Graph g;
  NodeId chain = -1;
  NodeId d_score = -1;
  std::vector<std::pair<int, NodeId>> d_params;  // (param index, derivative) of learned values
  // (Lookup node, derivative of the chain in the entry it read) of each
  // lookup into a learned table.
  std::vector<std::pair<NodeId, NodeId>> d_lookups;
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
        ee.setRead(readFn(lv));
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
        ee.setRead(readFn(lv));
        b_.CreateStore(b_.CreateFMul(dpost, ee.emit(kf_.d_score)), b_.CreateGEP(t_, gsrow, j));
        // A table's gradient goes to the entry each lookup read (a scatter:
        // this loop stays scalar when the chain reads a learned table).
        for (const auto& [lookup, d_entry] : kf_.d_lookups) {
          const Node& ln = kf_.g.node(lookup);
          auto* slot = b_.CreateGEP(t_, gparams, entryOffset(ln, ee.emit(ln.a)));
          auto* contrib = b_.CreateFMul(dpost, ee.emit(d_entry));
          b_.CreateStore(b_.CreateFAdd(b_.CreateLoad(t_, slot), contrib), slot);
        }
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
      auto* slot = b_.CreateGEP(t_, gparams,
                                llvm::ConstantInt::get(i64_, spec_.offset(static_cast<size_t>(kf_.d_params[k].first))));
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
          return b_.CreateLoad(t_, b_.CreateGEP(t_, lv.params,
                                                llvm::ConstantInt::get(i64_, spec_.offset(static_cast<size_t>(n.index)))));
        default: throw std::invalid_argument("attention kernel: a formula reads a free variable");
      }
    };
  }

  // Lookup: the entry expr::lookupEntry picks, read from the head's params;
  // NaN for a NaN index.
  std::function<llvm::Value*(const Node&, llvm::Value*)> readFn(const Leaves& lv) {
    return [this, lv](const Node& n, llvm::Value* index) -> llvm::Value* {
      auto* entry = b_.CreateLoad(t_, b_.CreateGEP(t_, lv.params, entryOffset(n, index)));
      return b_.CreateSelect(b_.CreateFCmpUNO(index, index), llvm::ConstantFP::getNaN(t_), entry);
    };
  }

  // The params offset of the entry a Lookup node reads at `index`: floor,
  // clamped to the table (a NaN index reads entry 0 here; readFn makes its
  // value NaN).
  llvm::Value* entryOffset(const Node& n, llvm::Value* index) {
    const int size = spec_.width(static_cast<size_t>(n.index));
    auto* fl = b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::floor, {t_}), {index});
    auto* lo = llvm::ConstantFP::get(t_, 0.0);
    auto* hi = llvm::ConstantFP::get(t_, static_cast<double>(size - 1));
    llvm::Value* e = b_.CreateSelect(b_.CreateFCmpOGT(fl, lo), fl, lo);  // NaN -> 0
    e = b_.CreateSelect(b_.CreateFCmpOLT(e, hi), e, hi);
    return b_.CreateAdd(b_.CreateFPToSI(e, i64_),
                        llvm::ConstantInt::get(i64_, spec_.offset(static_cast<size_t>(n.index))));
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

// A module holding one generated function, ready to optimise.
struct Generated {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> module;
};

enum class Pass { Forward, Backward };

Generated generate(const AttentionSpec& spec, const KernelFormulas& kf, const std::string& name,
                   const std::vector<std::pair<Pass, std::string>>& functions) {
  Generated out;
  out.ctx = std::make_unique<llvm::LLVMContext>();
  out.module = Engine::get().newModule(*out.ctx, name);
  AttentionGenerator gen(spec, kf, *out.module);
  for (const auto& [pass, fn] : functions) {
    if (pass == Pass::Forward) gen.forward(fn);
    else gen.backward(fn);
  }
  return out;
}

// The term chain of `spec` and, when asked, its derivatives.
std::unique_ptr<KernelFormulas> formulasFor(const AttentionSpec& spec) {
  auto kf = std::make_unique<KernelFormulas>();
  kf->chain = buildTermChain(kf->g, spec.terms);
  return kf;
}

void addDerivatives(const AttentionSpec& spec, KernelFormulas& kf) {
  kf.d_score = kf.g.derivative(kf.chain, formula::Wrt::score());
  for (size_t p = 0; p < spec.learned.size(); ++p) {
    if (!spec.learned[p]) continue;
    NodeId d = kf.g.derivative(kf.chain, formula::Wrt::param(static_cast<int>(p)));
    if (!kf.g.isConst(d, 0.0)) kf.d_params.emplace_back(static_cast<int>(p), d);
  }
  for (NodeId id : kf.g.reachable({kf.chain})) {
    const Node& n = kf.g.node(id);
    if (n.op != Op::Lookup || static_cast<size_t>(n.index) >= spec.learned.size() ||
        !spec.learned[static_cast<size_t>(n.index)])
      continue;
    NodeId d = kf.g.derivative(kf.chain, formula::Wrt::node(id));
    if (!kf.g.isConst(d, 0.0)) kf.d_lookups.emplace_back(id, d);
  }
}

// Generates one function of `spec` (its formulas `kf`), optimises it and
// links it at `tier`; returns its address.
void* compileFunction(const AttentionSpec& spec, const KernelFormulas& kf, Pass pass, const std::string& name,
                      Engine::Tier tier) {
  auto gen = generate(spec, kf, name, {{pass, name}});
  auto& engine = Engine::get();
  engine.optimise(*gen.module);
  return engine.link(std::move(gen.ctx), std::move(gen.module), {name}, tier)[0];
}

std::string keyFor(const AttentionSpec& spec, const KernelFormulas& kf) {
  std::string key = fmt::format("attention {} softmax={} null={} learned=",
                                spec.dtype == DType::F32 ? "f32" : "f64",
                                spec.softmax == plan::SoftmaxKind::Softmax1 ? 1 : 0,
                                spec.null_slot ? 1 : 0);
  for (bool l : spec.learned) key += l ? '1' : '0';
  if (!spec.widths.empty()) {
    key += " widths=";
    for (int w : spec.widths) key += fmt::format("{},", w);
  }
  return key + "\n" + kf.g.canonical({kf.chain});
}

std::mutex g_mutex;
std::unordered_map<std::string, std::unique_ptr<CompiledAttention>> g_attention;
std::atomic<size_t> g_compiled{0};

}  // namespace

void detail::noteCompiled() { ++g_compiled; }

size_t compiledFunctionCount() { return g_compiled.load(); }

struct CompiledAttention::Lazy {
  AttentionSpec spec;
  std::atomic<void*> optimised_forward{nullptr};
  double optimised_ms = 0.0;
  std::once_flag once;
  std::atomic<void*> backward{nullptr};
  double backward_ms = 0.0;
};

void* CompiledAttention::forward() const {
  void* fn = lazy->optimised_forward.load(std::memory_order_acquire);
  return fn ? fn : quick_forward;
}

void* CompiledAttention::optimisedForward() const { return lazy->optimised_forward.load(std::memory_order_acquire); }

double CompiledAttention::optimisedCompileMs() const { return optimisedForward() ? lazy->optimised_ms : 0.0; }

CompiledAttention::CompiledAttention() : lazy(std::make_unique<Lazy>()) {}
CompiledAttention::~CompiledAttention() = default;

void* CompiledAttention::backward() const {
  if (void* fn = lazy->backward.load(std::memory_order_acquire)) return fn;
  std::call_once(lazy->once, [&] {
    auto t0 = std::chrono::steady_clock::now();
    auto kf = formulasFor(lazy->spec);
    addDerivatives(lazy->spec, *kf);
    void* fn = compileFunction(lazy->spec, *kf, Pass::Backward, fmt::format("posc_attention_bwd_{:016x}", hash),
                               Engine::Tier::Optimised);
    lazy->backward_ms = msSince(t0);
    lazy->backward.store(fn, std::memory_order_release);
  });
  return lazy->backward.load(std::memory_order_acquire);
}

double CompiledAttention::backwardCompileMs() const {
  return lazy->backward.load(std::memory_order_acquire) ? lazy->backward_ms : 0.0;
}

const CompiledAttention& compileAttention(const AttentionSpec& spec) {
  auto t0 = std::chrono::steady_clock::now();
  auto kf = formulasFor(spec);
  std::string key = keyFor(spec, *kf);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto it = g_attention.find(key); it != g_attention.end()) return *it->second;

  auto kernel = std::make_unique<CompiledAttention>();
  kernel->key = key;
  kernel->hash = formula::hashText(key);
  kernel->lazy->spec = spec;
  kernel->quick_forward = compileFunction(spec, *kf, Pass::Forward,
                                          fmt::format("posc_attention_fwd_{:016x}", kernel->hash), Engine::Tier::Quick);
  kernel->compile_ms = msSince(t0);
  detail::noteCompiled();
  auto& ref = *kernel;
  g_attention.emplace(key, std::move(kernel));
  // The optimised tier, off the caller's path. Kernels live as long as the
  // process, and the engine finishes its jobs before it goes away.
  Engine::get().background([k = &ref, kf = std::shared_ptr<KernelFormulas>(std::move(kf))] {
    auto t1 = std::chrono::steady_clock::now();
    try {
      void* fn = compileFunction(k->lazy->spec, *kf, Pass::Forward,
                                 fmt::format("posc_attention_fwd_opt_{:016x}", k->hash), Engine::Tier::Optimised);
      k->lazy->optimised_ms = msSince(t1);
      k->lazy->optimised_forward.store(fn, std::memory_order_release);
    } catch (const std::exception&) {
      // The quick code stays in use; it computes the same values.
    }
  });
  return ref;
}

void finishBackgroundCompiles() { Engine::get().waitForBackground(); }

bool hasVectorLibm235() { return Engine::get().vectorLibm235(); }

std::string attentionIR(const AttentionSpec& spec) {
  auto kf = formulasFor(spec);
  addDerivatives(spec, *kf);
  const uint64_t hash = formula::hashText(keyFor(spec, *kf));
  auto gen = generate(spec, *kf, fmt::format("attention_{:016x}", hash),
                      {{Pass::Forward, fmt::format("posc_attention_fwd_{:016x}", hash)},
                       {Pass::Backward, fmt::format("posc_attention_bwd_{:016x}", hash)}});
  Engine::get().optimise(*gen.module);
  return Engine::print(*gen.module);
}

}  // namespace posc::jit
