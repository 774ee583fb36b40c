// The process-wide LLJIT: see engine.h.
#include "compiler/jit/engine.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace posc::jit {

namespace {

[[noreturn]] void fail(const std::string& what, llvm::Error e) {
  throw std::runtime_error("score-formula JIT: " + what + ": " + llvm::toString(std::move(e)));
}

template <typename T>
T check(llvm::Expected<T> v, const std::string& what) {
  if (!v) fail(what, v.takeError());
  return std::move(*v);
}

}  // namespace

namespace {

// The module flag that tells the compiler below which tier a module is for.
constexpr const char* kTierFlag = "posc.tier";

// Machine-code generation at the tier a module asks for: CodeGenOpt::None for
// Tier::Quick (no machine-level optimisation, the fast register allocator;
// about half the time of the default), CodeGenOpt::Default for
// Tier::Optimised. A TargetMachine is not safe for concurrent use, so each
// tier's is used under its own lock (the background thread and a caller may
// compile at the same time).
class TieredCompiler final : public llvm::orc::IRCompileLayer::IRCompiler {
 public:
  explicit TieredCompiler(llvm::orc::JITTargetMachineBuilder jtmb)
      : IRCompiler(llvm::orc::irManglingOptionsFromTargetOptions(jtmb.getOptions())) {
    jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::None);
    quick_ = check(jtmb.createTargetMachine(), "creating the quick-tier target machine");
    jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Default);
    optimised_ = check(jtmb.createTargetMachine(), "creating the target machine");
  }

  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> operator()(llvm::Module& m) override {
    auto* flag = llvm::mdconst::extract_or_null<llvm::ConstantInt>(m.getModuleFlag(kTierFlag));
    const bool quick = flag && flag->getZExtValue() == static_cast<uint64_t>(Engine::Tier::Quick);
    std::lock_guard<std::mutex> lock(quick ? quick_mutex_ : optimised_mutex_);
    return llvm::orc::SimpleCompiler(quick ? *quick_ : *optimised_)(m);
  }

 private:
  std::unique_ptr<llvm::TargetMachine> quick_, optimised_;
  std::mutex quick_mutex_, optimised_mutex_;
};

}  // namespace

struct Engine::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;

  // The background thread and its queue.
  std::mutex mutex;
  std::condition_variable wake, idle;
  std::deque<std::function<void()>> jobs;
  bool busy = false, stopping = false;
  std::thread worker;

  void work() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      wake.wait(lock, [&] { return stopping || !jobs.empty(); });
      if (jobs.empty()) return;  // stopping, and nothing left
      auto job = std::move(jobs.front());
      jobs.pop_front();
      busy = true;
      lock.unlock();
      job();  // jobs catch their own errors
      lock.lock();
      busy = false;
      if (jobs.empty()) idle.notify_all();
    }
  }
};

Engine& Engine::get() {
  static Engine engine;
  return engine;
}

Engine::~Engine() {
  // Queued jobs finish before the JIT they compile into goes away.
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
}

void Engine::background(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->jobs.push_back(std::move(job));
    if (!impl_->worker.joinable()) impl_->worker = std::thread([impl = impl_.get()] { impl->work(); });
  }
  impl_->wake.notify_one();
}

void Engine::waitForBackground() {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->idle.wait(lock, [&] { return impl_->jobs.empty() && !impl_->busy; });
}

Engine::Engine() : impl_(std::make_shared<Impl>()) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto jtmb = check(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host CPU");
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Default);
  impl_->tm = check(jtmb.createTargetMachine(), "creating the target machine");
  impl_->jit = check(llvm::orc::LLJITBuilder()
                         .setJITTargetMachineBuilder(jtmb)
                         .setCompileFunctionCreator([](llvm::orc::JITTargetMachineBuilder b)
                                                        -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                           return std::make_unique<TieredCompiler>(std::move(b));
                         })
                         .create(),
                     "creating the LLJIT");
  auto& main = impl_->jit->getMainJITDylib();
  const char prefix = impl_->jit->getDataLayout().getGlobalPrefix();
  main.addGenerator(check(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix),
                          "searching the process for symbols"));
  // glibc's libmvec, on x86-64 only: its x86 names (_ZGVdN4v_cos, ...) are
  // the ones mapped here. Without it the math stays scalar libm calls.
  if (impl_->tm->getTargetTriple().getArch() == llvm::Triple::x86_64) {
    auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix);
    if (mvec) {
      main.addGenerator(std::move(*mvec));
      libmvec_ = true;
      vector_libm_235_ = llvm::sys::DynamicLibrary::SearchForAddressOfSymbol("_ZGVbN2v_tanh") != nullptr &&
                         llvm::sys::DynamicLibrary::SearchForAddressOfSymbol("_ZGVbN2v_log1p") != nullptr;
    } else {
      llvm::consumeError(mvec.takeError());
    }
  }
}

std::unique_ptr<llvm::Module> Engine::newModule(llvm::LLVMContext& ctx, const std::string& name) {
  auto m = std::make_unique<llvm::Module>(name, ctx);
  m->setDataLayout(impl_->tm->createDataLayout());
  m->setTargetTriple(impl_->tm->getTargetTriple().str());
  return m;
}

int Engine::vectorDoubles() const {
  const auto features = impl_->tm->getTargetFeatureString();
  return features.contains("+avx512f") ? 8 : features.contains("+avx2") ? 4 : 2;
}

// The optimisation pipeline. The generators emit plain loops (counters and
// accumulators in allocas, no calls but math intrinsics), so the full O2
// module pipeline mostly runs passes with nothing to do: its inliner, its
// inter-procedural passes and its second round of scalar clean-ups took ~10 of
// the ~23 ms a forward attention kernel took to compile. This pipeline keeps
// what the kernels need: SROA turns the allocas into registers, instcombine
// and simplifycfg clean up, loop rotation and LICM hoist what depends only on
// the query row and head out of the key loops, the TLI mappings tell the loop
// vectoriser about libmvec, and a last clean-up follows it. The kernels it
// produces ran as fast as O2's (same process, alternating, 600x600 and 40x40
// blocks: forward and backward within 3%, bench/jit_bench measures them).
constexpr const char* kPipeline =
    "function(sroa,instcombine,simplifycfg,loop-mssa(loop-rotate,licm),inject-tli-mappings,"
    "loop-vectorize,instcombine,simplifycfg)";

void Engine::optimise(llvm::Module& m) {
  std::string verify_errors;
  llvm::raw_string_ostream verify_os(verify_errors);
  if (llvm::verifyModule(m, &verify_os))
    throw std::logic_error("score-formula JIT generated invalid IR: " + verify_os.str());

  auto& tm = *impl_->tm;
  // On AVX-512 hosts, LLVM prefers 256-bit vectors unless told otherwise;
  // the kernels' loops are long and math-bound, so ask for 512 bits and map
  // the math onto libmvec's 8-double / 16-float variants (below).
  const bool wide = vectorDoubles() == 8;
  for (auto& f : m) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", tm.getTargetCPU());
    f.addFnAttr("target-features", tm.getTargetFeatureString());
    if (wide) f.addFnAttr("prefer-vector-width", "512");
  }
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.LoopUnrolling = false;  // the vectoriser interleaves; unrolling mostly costs compile time
  llvm::PassBuilder pb(&tm, pto);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::TargetLibraryInfoImpl tlii(tm.getTargetTriple());
  if (libmvec_) {
    tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86);
    // LLVM 14's libmvec table stops at AVX2 (4 doubles, 8 floats); glibc
    // also has the AVX-512 variants, with the same documented 4-ulp bound.
    if (wide) {
      static const llvm::VecDesc kAvx512[] = {
          {"llvm.sin.f64", "_ZGVeN8v_sin", llvm::ElementCount::getFixed(8)},
          {"llvm.cos.f64", "_ZGVeN8v_cos", llvm::ElementCount::getFixed(8)},
          {"llvm.exp.f64", "_ZGVeN8v_exp", llvm::ElementCount::getFixed(8)},
          {"llvm.log.f64", "_ZGVeN8v_log", llvm::ElementCount::getFixed(8)},
          {"llvm.pow.f64", "_ZGVeN8vv_pow", llvm::ElementCount::getFixed(8)},
          {"llvm.sin.f32", "_ZGVeN16v_sinf", llvm::ElementCount::getFixed(16)},
          {"llvm.cos.f32", "_ZGVeN16v_cosf", llvm::ElementCount::getFixed(16)},
          {"llvm.exp.f32", "_ZGVeN16v_expf", llvm::ElementCount::getFixed(16)},
          {"llvm.log.f32", "_ZGVeN16v_logf", llvm::ElementCount::getFixed(16)},
          {"llvm.pow.f32", "_ZGVeN16vv_powf", llvm::ElementCount::getFixed(16)},
      };
      tlii.addVectorizableFunctions(kAvx512);
    }
    if (vector_libm_235_) {
      static const llvm::VecDesc k235[] = {
          {"tanh", "_ZGVbN2v_tanh", llvm::ElementCount::getFixed(2)},
          {"tanh", "_ZGVdN4v_tanh", llvm::ElementCount::getFixed(4)},
          {"tanhf", "_ZGVbN4v_tanhf", llvm::ElementCount::getFixed(4)},
          {"tanhf", "_ZGVdN8v_tanhf", llvm::ElementCount::getFixed(8)},
          {"log1p", "_ZGVbN2v_log1p", llvm::ElementCount::getFixed(2)},
          {"log1p", "_ZGVdN4v_log1p", llvm::ElementCount::getFixed(4)},
          {"log1pf", "_ZGVbN4v_log1pf", llvm::ElementCount::getFixed(4)},
          {"log1pf", "_ZGVdN8v_log1pf", llvm::ElementCount::getFixed(8)},
      };
      static const llvm::VecDesc k235Avx512[] = {
          {"tanh", "_ZGVeN8v_tanh", llvm::ElementCount::getFixed(8)},
          {"tanhf", "_ZGVeN16v_tanhf", llvm::ElementCount::getFixed(16)},
          {"log1p", "_ZGVeN8v_log1p", llvm::ElementCount::getFixed(8)},
          {"log1pf", "_ZGVeN16v_log1pf", llvm::ElementCount::getFixed(16)},
      };
      tlii.addVectorizableFunctions(k235);
      if (wide) tlii.addVectorizableFunctions(k235Avx512);
    }
  }
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (auto e = pb.parsePassPipeline(mpm, kPipeline)) fail("building the pass pipeline", std::move(e));
  mpm.run(m, mam);
}

std::string Engine::print(const llvm::Module& m) {
  std::string ir;
  llvm::raw_string_ostream os(ir);
  m.print(os, nullptr);
  os.flush();
  return ir;
}

std::vector<void*> Engine::link(std::unique_ptr<llvm::LLVMContext> ctx,
                                std::unique_ptr<llvm::Module> m,
                                const std::vector<std::string>& symbols, Tier tier) {
  m->addModuleFlag(llvm::Module::Warning, kTierFlag, static_cast<uint32_t>(tier));
  auto& jit = *impl_->jit;
  if (auto e = jit.addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    fail("adding a module", std::move(e));
  std::vector<void*> out;
  for (const auto& s : symbols) {
    auto addr = check(jit.lookup(s), "looking up " + s);
    out.push_back(reinterpret_cast<void*>(addr.getAddress()));
  }
  return out;
}

}  // namespace posc::jit
