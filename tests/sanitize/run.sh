#!/usr/bin/env bash
# The sanitizer run of posc's LibTorch parts: builds posc with GCC (the
# compiler of Debian's LibTorch) under AddressSanitizer and
# UndefinedBehaviorSanitizer (-DPOSC_SANITIZE=ON, -O1 with line tables), then
# runs the unit tests of the model and its attention core, training and the
# fused optimiser, evaluation, probes, the JIT, the expression table in every
# evaluator, hand-set models and studies, and the posc program on a shortened
# quick start. The parts without LibTorch are sanitized (and fuzzed) by
# tests/fuzz/run.sh with clang.
#
#   bash tests/sanitize/run.sh [BUILD_DIR] [torch2]
#
# With `torch2` it builds against LibTorch 2.x, the library inside PyPI's
# torch wheel (tools/python_env.sh installs it; as tools/torch2_build.sh
# does), instead of Debian's 1.13: CI's run, which so compiles and tests
# posc's LibTorch parts against 2.x and under the sanitizers in one build.
# The wheel is a CUDA build, so this also compiles and links what only CUDA
# builds have: NCCL data-parallel training (runtime/distributed) and the CUDA
# tests (test_cuda, which skip without a GPU).
#
# Exit status: non-zero on a sanitizer report (every check aborts the test
# that trips it) or a failed test.
#
# Left out, each for a reason: the tests whose point is a training run's
# accuracy or wall time within a bound (TrainEndToEnd.*: minutes under the
# sanitizers, and its code paths are the steps the other tests take a few
# times);
# BlasSanity.KernelsPoscChooses, the ONNX export checks, the data-parallel
# check, the Slurm sweep, the differential test, the Python package and
# TensorBoard checks and the two studies stopped by a signal
# (StudyStop.*PoscStudy*) (they run the posc program, not built here).
# Leak detection is off: LibTorch's global state (allocators, the dispatcher's
# tables) is never freed and would be reported.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build-asan}"
torch=()
if [ "${2:-}" = torch2 ]; then
  bash tools/python_env.sh
  torch=(-DCMAKE_PREFIX_PATH="$(.venv-torch/bin/python -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')")
  export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"  # as tools/torch2_build.sh: no GPU to detect
fi
targets=(posc test_runtime test_jit test_probe test_handset test_study test_expr)
[ "${2:-}" = torch2 ] && targets+=(test_cuda)

cmake -S . -B "$build" -G Ninja -DPOSC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Sanitize "${torch[@]}" \
  -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1" -DCMAKE_C_FLAGS_SANITIZE="-O1 -g1" >/dev/null
cmake --build "$build" --target "${targets[@]}"
if [ "${2:-}" = torch2 ]; then
  # What a CUDA LibTorch build has that Debian's has not: said, so CI's log shows it.
  grep -q 'POSC_NCCL_INCLUDE_DIR:PATH=/' "$build/CMakeCache.txt" && nm -C "$build/posc" | grep -c 'c10d::ProcessGroupNCCL::ProcessGroupNCCL' >/dev/null \
    && echo "sanitize: posc links c10d::ProcessGroupNCCL (data-parallel training on CUDA over NCCL)" \
    || { echo "sanitize: this LibTorch 2.x build has no NCCL in posc" >&2; exit 1; }
fi

export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
slow='TrainEndToEnd\.|BlasSanity\.KernelsPoscChooses|HandsetOnnx\.|DataParallel\.|Slurm\.|DifferentialTraining\.|PythonPackage\.|TensorBoard\.|StudyStop\..*PoscStudy'
ctest --test-dir "$build" -j2 --output-on-failure -E "_NOT_BUILT|${slow}"

# The posc program itself, sanitized, on the quick start cut short: compile,
# JIT, train, evaluate, write and report a results folder.
rm -rf "$build/smoke"
"$build/posc" run examples/quickstart.pos --no-progress --threads 2 --out "$build/smoke" \
  --set train.steps=30 --set 'task.test_digits=[3]' --set task.problems_per_length=10
"$build/posc" report "$build/smoke" >/dev/null
echo "sanitized posc run: $(tail -n 1 "$build/smoke/accuracy.csv")"
