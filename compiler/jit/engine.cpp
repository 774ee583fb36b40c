// The process-wide LLJIT: see engine.h.
#include "compiler/jit/engine.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <stdexcept>

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

struct Engine::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
};

Engine& Engine::get() {
  static Engine engine;
  return engine;
}

Engine::Engine() : impl_(std::make_shared<Impl>()) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto jtmb = check(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host CPU");
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Default);
  impl_->tm = check(jtmb.createTargetMachine(), "creating the target machine");
  impl_->jit = check(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(),
                     "creating the LLJIT");
  auto& main = impl_->jit->getMainJITDylib();
  const char prefix = impl_->jit->getDataLayout().getGlobalPrefix();
  main.addGenerator(check(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix),
                          "searching the process for symbols"));
  auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix);
  if (mvec) {
    main.addGenerator(std::move(*mvec));
    libmvec_ = true;
  } else {
    llvm::consumeError(mvec.takeError());  // scalar libm calls still work
  }
}

std::unique_ptr<llvm::Module> Engine::newModule(llvm::LLVMContext& ctx, const std::string& name) {
  auto m = std::make_unique<llvm::Module>(name, ctx);
  m->setDataLayout(impl_->tm->createDataLayout());
  m->setTargetTriple(impl_->tm->getTargetTriple().str());
  return m;
}

std::vector<void*> Engine::optimiseAndLink(std::unique_ptr<llvm::LLVMContext> ctx,
                                           std::unique_ptr<llvm::Module> m,
                                           const std::vector<std::string>& symbols,
                                           std::string& ir) {
  std::string verify_errors;
  llvm::raw_string_ostream verify_os(verify_errors);
  if (llvm::verifyModule(*m, &verify_os))
    throw std::logic_error("score-formula JIT generated invalid IR: " + verify_os.str());

  auto& tm = *impl_->tm;
  // On AVX-512 hosts, LLVM prefers 256-bit vectors unless told otherwise;
  // the kernels' loops are long and math-bound, so ask for 512 bits and map
  // the math onto libmvec's 8-double / 16-float variants (below).
  const bool avx512 = tm.getTargetFeatureString().contains("+avx512f");
  for (auto& f : *m) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", tm.getTargetCPU());
    f.addFnAttr("target-features", tm.getTargetFeatureString());
    if (avx512) f.addFnAttr("prefer-vector-width", "512");
  }
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
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
    if (avx512) {
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
  }
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  auto mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  mpm.run(*m, mam);

  ir.clear();
  llvm::raw_string_ostream os(ir);
  m->print(os, nullptr);
  os.flush();

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
