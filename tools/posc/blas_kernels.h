// Choosing OpenBLAS's kernels and threading before any work is done.
//
// Kernels. Debian's OpenBLAS 0.3.21 picks its kernels from the CPU model at
// load time and falls back to the generic "Prescott" (SSE3) kernels on CPUs
// it does not know, which includes recent Xeons. Matrix products then run
// several times slower than they can (measured here: a 6 x 384 training step
// took 5.2 s with Prescott kernels and 1.4 s with SkylakeX kernels). The
// choice can only be made through OPENBLAS_CORETYPE before the library loads,
// so when posc finds the generic kernels on a CPU that supports AVX2+FMA (or
// AVX-512) it sets OPENBLAS_CORETYPE.
//
// Threading. Debian builds OpenBLAS twice: with its own pthreads
// (libopenblas0-pthread, the default) and on OpenMP (libopenblas0-openmp).
// LibTorch runs its own operations on an OpenMP team, so with the pthread
// build two thread pools take turns on the same cores. On a 2-core machine
// (bench/cpu_speed.py) a 6 x 384 training step took 670 ms on 2 threads with
// the pthread build and 500-570 ms with the OpenMP build (1 thread: 840-940 ms
// with either), and the 2 x 64 step became faster on 2 threads than on 1
// instead of slower. So when the pthread build is loaded and the OpenMP build
// is installed beside it, posc puts the OpenMP build's folder first on
// LD_LIBRARY_PATH.
//
// Either choice runs posc again, once (both at the same time). Nothing
// happens when POSC_KEEP_BLAS is set or the BLAS is not OpenBLAS; the kernel
// choice is also left alone when OPENBLAS_CORETYPE is set (the user's or the
// machine's choice wins).
#pragma once

#include <string>

namespace posc::tools {

// The OpenBLAS core in use ("SkylakeX", "Prescott", ...), or "" if the BLAS
// is not OpenBLAS.
std::string blasCoreName();

// Which build of OpenBLAS is loaded: "OpenMP", "pthread",
// "sequential", or "" if the BLAS is not OpenBLAS.
std::string blasThreading();

// The file of the loaded OpenBLAS with links resolved, or "" if unknown.
std::string blasLibraryPath();

// "OpenBLAS SkylakeX kernels, OpenMP build": the line posc --version and
// plan.txt give the BLAS in use, or "" if the BLAS is not OpenBLAS.
std::string blasDescription();

// True when the BLAS runs its products on LibTorch's OpenMP team (OpenBLAS's
// OpenMP build), so that more threads never means two pools fighting.
bool blasSharesTorchThreads();

// Re-executes the process with better kernels and/or the OpenMP build if that
// helps; returns only when it does not (or when the re-exec fails).
// Remembers argv for ensurePassiveOpenMp.
void chooseBlasKernels(char** argv);

// With more than one CPU thread and OpenBLAS's pthread build, LibTorch's
// OpenMP team and OpenBLAS's threads take turns on the same cores, and
// libgomp's default is to spin between parallel regions: measured on 2 cores,
// a 6 x 384 training step took 1.20 s with 2 threads and 0.62 s with
// OMP_WAIT_POLICY=PASSIVE (1 thread: 0.99 s). libgomp reads the policy only
// when it loads, so when it is unset this sets it and runs the remembered
// command line again; returns only when the policy is already set, when the
// BLAS shares LibTorch's team (spinning is then faster: one pool), or when the
// re-exec fails or nothing was remembered.
void ensurePassiveOpenMp();

}  // namespace posc::tools
