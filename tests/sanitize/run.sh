#!/usr/bin/env bash
# The sanitizer run of posc's LibTorch parts: builds posc with GCC (the
# compiler of Debian's LibTorch) under AddressSanitizer and
# UndefinedBehaviorSanitizer (-DPOSC_SANITIZE=ON, -O1 with line tables), then
# runs the unit tests of the model and its attention core, training and the
# fused optimiser, evaluation, probes, the JIT, the expression table in every
# evaluator, hand-set models and studies. The parts without LibTorch are
# sanitized (and fuzzed) by tests/fuzz/run.sh with clang.
#
#   bash tests/sanitize/run.sh [BUILD_DIR]
#
# Exit status: non-zero on a sanitizer report (every check aborts the test
# that trips it) or a failed test.
#
# Left out, each for a reason: the tests whose point is a training run's
# accuracy or wall time within a bound (TrainEndToEnd.*: minutes under the
# sanitizers, and its code paths are the steps the other tests take a few
# times);
# BlasSanity.KernelsPoscChooses, the ONNX export checks, the data-parallel
# check, the Slurm sweep, the differential test and the two studies stopped by
# a signal (StudyStop.*PoscStudy*) (they run the posc program, not built here).
# Leak detection is off: LibTorch's global state (allocators, the dispatcher's
# tables) is never freed and would be reported.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build-asan}"
targets=(test_runtime test_jit test_probe test_handset test_study test_expr)

cmake -S . -B "$build" -G Ninja -DPOSC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1" -DCMAKE_C_FLAGS_SANITIZE="-O1 -g1" >/dev/null
cmake --build "$build" --target "${targets[@]}"

export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
slow='TrainEndToEnd\.|BlasSanity\.KernelsPoscChooses|HandsetOnnx\.|DataParallel\.|Slurm\.|DifferentialTraining\.|StudyStop\..*PoscStudy'
ctest --test-dir "$build" -j2 --output-on-failure -E "_NOT_BUILT|${slow}"
