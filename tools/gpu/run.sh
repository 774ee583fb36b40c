#!/usr/bin/env bash
# Builds posc against the CUDA LibTorch of the machine's Python PyTorch, runs
# the CUDA tests and the GPU benchmark, then (optionally) the study on the
# GPU. Everything it installs goes under a prefix in the build folder, never
# into /. Written to fit one call of at most 9 minutes on a 16-core machine:
# each stage has a time limit, and a stage that runs out says so.
#
#   bash tools/gpu/run.sh CARRY [STAGES]
#
# CARRY: the folder made by tools/gpu/prepare.sh (parser/ and debs/).
# STAGES (default "build test bench"): any of build, test, bench, study.
# Output goes to $OUT when set (a folder that comes back), else gpu-out/.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
carry=$(cd "${1:?usage: run.sh CARRY [STAGES]}" && pwd)
stages=${2:-build test bench}
out=${OUT:-$root/gpu-out}
build=$root/build-gpu
prefix=$build/prefix
mkdir -p "$out" "$build"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$out/run.log"; }

for tool in g++ cmake ninja python3 nvidia-smi; do
  command -v "$tool" >/dev/null || { log "missing: $tool"; exit 2; }
done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' \
  | tee -a "$out/run.log"

if [[ " $stages " == *" build "* ]]; then
  log "unpacking $(ls "$carry"/debs/*.deb | wc -l) packages into $prefix"
  for deb in "$carry"/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
  log "configuring"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix/usr;$prefix/usr/lib/x86_64-linux-gnu/cmake;$torch_prefix" \
    -DPOSC_PARSER_DIR="$carry/parser" -DPOSC_WITH_LLVM=OFF -DPOSC_WITH_ONNX=OFF -DPOSC_WITH_LIBEDIT=OFF \
    >"$out/configure.log" 2>&1 || { log "configure failed"; tail -40 "$out/configure.log"; exit 1; }
  log "building with $(nproc) cores"
  timeout 360 cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 \
    || { log "build failed or timed out"; grep -m 20 -A5 "error" "$out/build.log"; exit 1; }
  "$build/posc" --version | tee -a "$out/run.log"
fi
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if [[ " $stages " == *" test "* ]]; then
  log "CUDA tests"
  timeout 240 ctest --test-dir "$build" -L cuda --output-on-failure >"$out/ctest_cuda.log" 2>&1
  log "ctest -L cuda exit $?"; tail -5 "$out/ctest_cuda.log"
fi

if [[ " $stages " == *" bench "* ]]; then
  log "GPU step benchmark (posc against the Python FlexAttention peer)"
  timeout 200 python3 "$root/bench/gpu/step_bench.py" --posc "$build/posc" --out "$out" 2>&1 | tee "$out/bench.log"
fi

if [[ " $stages " == *" study "* ]]; then
  log "study: rope2d_decay seed 0 (16k steps), its sink warm start (4k), evaluation to 200 digits"
  (cd "$root" && timeout 520 "$build/posc" study examples/addition/rope2d_decay.pos \
     examples/addition/rope2d_decay_sink.pos --seeds 0 --device cuda --jit off --out "$out/study") >"$out/study.log" 2>&1
  log "study exit $?"; tail -20 "$out/study.log"
fi
