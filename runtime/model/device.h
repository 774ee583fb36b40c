// Where a model computes: the device a run names and the CPU threads it uses.
//
// Training, evaluation, probes and the benchmarks all pick a device and a
// thread count the same way; these are the one place that does it.
#pragma once

#include <torch/types.h>

#include <string>

#include "compiler/plan/plan.h"

namespace posc::model {

// "cpu", "cuda" or "cuda:N"; throws runtime::UserError when CUDA is asked for
// but LibTorch sees no device, or the name is unknown.
torch::Device resolveDevice(const std::string& name);

// Sets LibTorch's intra-op thread count and, when LibTorch's BLAS is
// OpenBLAS, OpenBLAS's own thread pool as well (LibTorch does not size it:
// left alone it starts one busy-waiting thread per core, which on a shared or
// small machine can cost a factor of 3-4 in throughput). n <= 0 does nothing.
// Returns the previous BLAS thread count, or 0 if the BLAS is not OpenBLAS.
int setThreads(int n);

// The CPU threads worth using for a model's training step on `cores` cores.
// When the BLAS runs on LibTorch's OpenMP team (`blas_shares_threads`:
// OpenBLAS's OpenMP build), all of them: on a 2-core AVX-512 machine
// (bench/cpu_speed.py) two threads made the 6 x 384 step (10.6M) 1.6-1.8x
// faster and the 2 x 64 step (0.1M) faster too. With OpenBLAS's own pthreads
// the two pools fight: all cores only for models of at least 2M weights in
// the blocks, else one (two threads made the 2 x 64 step 2.5x slower there;
// the threshold between the two measured sizes is a choice, not a
// measurement).
int usefulThreads(const plan::ModelPlan& model, int cores, bool blas_shares_threads);

// The cores this process may run on (its CPU affinity), at least 1.
int availableCores();

}  // namespace posc::model
