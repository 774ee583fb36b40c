#!/usr/bin/env bash
# Installs what posc needs to build and test on Debian 12 (run as root).
# Skips apt entirely when everything is already installed.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  antlr4 libantlr4-runtime-dev      # the grammar tool (Java) and its C++ runtime
  llvm-14-dev                       # LLVM, for the score-formula JIT
  libtorch-dev libopenblas0-pthread # LibTorch (CPU) and a fast BLAS under it
  libopenblas0-openmp               # the same BLAS on OpenMP: one thread pool with LibTorch (posc loads it)
  libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev                # JSON of safetensors headers
  python3                           # independent checks in tests (XML of the SVG plots)
  libonnx-dev libprotobuf-dev       # ONNX export of hand-set models (protobuf classes, checker)
  python3-onnx python3-numpy        # the independent node-by-node check of the exported graph
  python3-torch                     # the Python side of the FlexAttention check (posc emit flex)
  libedit-dev                       # line editing and history for `posc repl`
  libgloo-dev                       # Gloo's headers: data-parallel training (LibTorch's c10d includes them)
  slurm-wlm munge                   # a one-node Slurm cluster for the study sweep test (tests/slurm)
  chromium                          # headless rendering of report.html in the report test (screenshot)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
