// Devices and CPU threads: see runtime/model/device.h.
#include "runtime/model/device.h"

#include <dlfcn.h>
#include <sched.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "runtime/results/errors.h"

namespace posc::model {

torch::Device resolveDevice(const std::string& name) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
    if (!torch::cuda::is_available())
      throw runtime::UserError(
          "--device " + name +
          ": no CUDA device is visible to LibTorch (is this a CPU-only LibTorch build, or is "
          "CUDA_VISIBLE_DEVICES empty?); use --device cpu");
    torch::Device device(name);
    if (device.has_index() && device.index() >= static_cast<int>(torch::cuda::device_count()))
      throw runtime::UserError(fmt::format("--device {}: only {} CUDA device(s) are visible", name,
                                           torch::cuda::device_count()));
    return device;
  }
  throw runtime::UserError("--device " + name + ": unknown device (expected cpu, cuda or cuda:N)");
}

int setThreads(int n) {
  if (n <= 0) return 0;
  torch::set_num_threads(n);
  // Looked up at run time so that nothing depends on which BLAS is installed.
  using GetFn = int (*)();
  using SetFn = void (*)(int);
  auto get = reinterpret_cast<GetFn>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  auto set = reinterpret_cast<SetFn>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (!get || !set) return 0;
  const int previous = get();
  set(n);
  return previous;
}

int usefulThreads(const plan::ModelPlan& model, int cores, bool blas_shares_threads) {
  if (blas_shares_threads) return std::max(1, cores);
  const double block_weights = 12.0 * model.layers * static_cast<double>(model.width) * model.width;
  return block_weights >= 2e6 ? std::max(1, cores) : 1;
}

int availableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace posc::model
