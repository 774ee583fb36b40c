// OpenBLAS kernel and threading selection: see blas_kernels.h.
#include "tools/posc/blas_kernels.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace posc::tools {

namespace {

// The OpenBLAS symbol `name`, or nullptr.
void* openblasSymbol(const char* name) { return dlsym(RTLD_DEFAULT, name); }

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

// The folder of OpenBLAS's OpenMP build beside the loaded pthread build
// (Debian: .../openblas-pthread/libopenblas.so.0 -> .../openblas-openmp/), or
// "" when the loaded build is not the pthread one or the other is not there.
std::string openMpBuildFolder() {
  if (blasThreading() != "pthread") return {};
  const std::filesystem::path loaded = blasLibraryPath();
  if (loaded.empty() || loaded.parent_path().filename() != "openblas-pthread") return {};
  const std::filesystem::path folder = loaded.parent_path().parent_path() / "openblas-openmp";
  std::error_code ec;
  for (const char* lib : {"libopenblas.so.0", "libblas.so.3", "liblapack.so.3"})
    if (!std::filesystem::exists(folder / lib, ec)) return {};
  return folder.string();
}

char** remembered_argv = nullptr;

}  // namespace

std::string blasCoreName() {
  using CoreName = char* (*)();
  auto fn = reinterpret_cast<CoreName>(openblasSymbol("openblas_get_corename"));
  if (fn == nullptr) return {};
  const char* name = fn();
  return name ? name : "";
}

std::string blasThreading() {
  using GetParallel = int (*)();
  auto fn = reinterpret_cast<GetParallel>(openblasSymbol("openblas_get_parallel"));
  if (fn == nullptr) return {};
  switch (fn()) {
    case 0: return "sequential";
    case 1: return "pthread";
    case 2: return "OpenMP";
    default: return "unknown";
  }
}

std::string blasLibraryPath() {
  void* symbol = openblasSymbol("openblas_get_corename");
  Dl_info info;
  if (symbol == nullptr || dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  const std::filesystem::path resolved = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::string(info.dli_fname) : resolved.string();
}

std::string blasDescription() {
  const std::string core = blasCoreName();
  return core.empty() ? "" : "OpenBLAS " + core + " kernels, " + blasThreading() + " build";
}

bool blasSharesTorchThreads() { return blasThreading() == "OpenMP"; }

void chooseBlasKernels(char** argv) {
  remembered_argv = argv;
  if (std::getenv("POSC_KEEP_BLAS") || std::getenv("POSC_BLAS_CHOSEN")) return;
  const std::string core = blasCoreName();
  if (core.empty()) return;  // not OpenBLAS
  const char* better = std::getenv("OPENBLAS_CORETYPE") || !isGeneric(core) ? nullptr : bestCore();
  const std::string openmp = openMpBuildFolder();
  if (better == nullptr && openmp.empty()) return;
  const char* old_path = std::getenv("LD_LIBRARY_PATH");
  const bool had_path = old_path != nullptr;
  const std::string kept_path = had_path ? old_path : "";  // setenv may free what getenv returned
  if (better) setenv("OPENBLAS_CORETYPE", better, 1);
  if (!openmp.empty()) setenv("LD_LIBRARY_PATH", (kept_path.empty() ? openmp : openmp + ":" + kept_path).c_str(), 1);
  setenv("POSC_BLAS_CHOSEN", "1", 1);  // never loop
  execv("/proc/self/exe", argv);
  // The re-exec failed: carry on with the BLAS as loaded.
  if (better) unsetenv("OPENBLAS_CORETYPE");
  if (had_path) setenv("LD_LIBRARY_PATH", kept_path.c_str(), 1);
  else unsetenv("LD_LIBRARY_PATH");
  unsetenv("POSC_BLAS_CHOSEN");
}

void ensurePassiveOpenMp() {
  if (std::getenv("OMP_WAIT_POLICY") || remembered_argv == nullptr || blasSharesTorchThreads()) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  execv("/proc/self/exe", remembered_argv);
  unsetenv("OMP_WAIT_POLICY");  // the re-exec failed: carry on spinning
}

}  // namespace posc::tools
