// OpenBLAS kernel selection: see blas_kernels.h.
#include "tools/posc/blas_kernels.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>

namespace posc::tools {

std::string blasCoreName() {
  using CoreName = char* (*)();
  auto fn = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (fn == nullptr) return {};
  const char* name = fn();
  return name ? name : "";
}

namespace {

bool isGeneric(std::string core) {
  for (char& c : core) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return core == "prescott" || core == "core2" || core == "katmai" || core == "coppermine" ||
         core == "northwood" || core == "banias" || core == "unknown";
}

const char* bestCore() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

}  // namespace

namespace {
char** remembered_argv = nullptr;
}

void chooseBlasKernels(char** argv) {
  remembered_argv = argv;
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("POSC_KEEP_BLAS") || std::getenv("POSC_BLAS_CHOSEN")) return;
  std::string core = blasCoreName();
  if (core.empty() || !isGeneric(core)) return;
  const char* better = bestCore();
  if (better == nullptr) return;
  setenv("OPENBLAS_CORETYPE", better, 1);
  setenv("POSC_BLAS_CHOSEN", "1", 1);  // never loop
  execv("/proc/self/exe", argv);
  // The re-exec failed: carry on with the generic kernels.
  unsetenv("OPENBLAS_CORETYPE");
}

void ensurePassiveOpenMp() {
  if (std::getenv("OMP_WAIT_POLICY") || remembered_argv == nullptr) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  execv("/proc/self/exe", remembered_argv);
  unsetenv("OMP_WAIT_POLICY");  // the re-exec failed: carry on spinning
}

}  // namespace posc::tools
