// How many CPU threads a run uses: see runtime/train/run_experiment.h.
#include <sched.h>

#include <algorithm>
#include <thread>

#include "runtime/train/run_experiment.h"

namespace posc::runtime {

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

}  // namespace posc::runtime
