// Choosing OpenBLAS's kernels before any work is done.
//
// Debian's OpenBLAS 0.3.21 picks its kernels from the CPU model at load time
// and falls back to the generic "Prescott" (SSE3) kernels on CPUs it does not
// know, which includes recent Xeons. Matrix products then run several times
// slower than they can (measured here: a 6 x 384 training step took 5.2 s
// with Prescott kernels and 1.4 s with SkylakeX kernels). The choice can only
// be made through OPENBLAS_CORETYPE before the library loads, so when posc
// finds the generic kernels on a CPU that supports AVX2+FMA (or AVX-512) it
// sets OPENBLAS_CORETYPE and runs itself again, once.
//
// Nothing happens when OPENBLAS_CORETYPE is already set (the user's or the
// machine's choice wins), when POSC_KEEP_BLAS is set, or when the BLAS is not
// OpenBLAS.
#pragma once

#include <string>

namespace posc::tools {

// The OpenBLAS core in use ("SkylakeX", "Prescott", ...), or "" if the BLAS
// is not OpenBLAS.
std::string blasCoreName();

// Re-executes the process with a better OPENBLAS_CORETYPE if that helps;
// returns only when it does not (or when the re-exec fails). Remembers argv
// for ensurePassiveOpenMp.
void chooseBlasKernels(char** argv);

// With more than one CPU thread, LibTorch's OpenMP team and OpenBLAS's
// threads take turns on the same cores, and libgomp's default is to spin
// between parallel regions: measured on 2 cores, a 6 x 384 training step took
// 1.20 s with 2 threads and 0.62 s with OMP_WAIT_POLICY=PASSIVE (1 thread:
// 0.99 s). libgomp reads the policy only when it loads, so when it is unset
// this sets it and runs the remembered command line again; returns only when
// the policy is already set (or the re-exec fails, or nothing was remembered).
void ensurePassiveOpenMp();

}  // namespace posc::tools
