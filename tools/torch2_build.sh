#!/usr/bin/env bash
# posc built against LibTorch 2.x: the LibTorch inside PyPI's torch wheel
# (tools/python_env.sh installs it; a CUDA build that also runs on the CPU),
# beside the Debian LibTorch 1.13 build of the README's commands.
#
#   bash tools/torch2_build.sh [BUILD_DIR]        (default: build-torch2)
#
# Then `ctest --test-dir BUILD_DIR -j2` runs the suite against it, and
# BUILD_DIR/posc trains on the CPU or, on a machine with a GPU, with
# --device cuda. TORCH_CUDA_ARCH_LIST (default 9.0, Hopper) names the GPU
# generation, which the wheel's CMake would otherwise detect by running a
# CUDA program (it fails on a machine without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-torch2}"
bash tools/python_env.sh
prefix="$(.venv-torch/bin/python -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}" cmake -S . -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$build"
"$build/posc" --version
