#!/usr/bin/env bash
# The Python peers' environment: PyTorch 2.x (tools/python-requirements.txt,
# the one place that pins its version) from PyPI in a git-ignored virtual
# environment, beside Debian's python3-torch 1.13 that tools/setup.sh
# installs. The flex tests run every emitted module under both when this
# environment exists (tests/flex), and bench/ measures both peers.
#
#   bash tools/python_env.sh [VENV_DIR]     (default: .venv-torch)
#
# Not part of the README's commands: PyPI's torch wheel is a CUDA build
# (5.4 GB installed with its nvidia-* packages); CI installs it (.ci/run).
# Does nothing when the environment already holds these requirements.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv-torch}"
requirements=tools/python-requirements.txt
if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$venv/posc-requirements.txt"; then
  exit 0
fi
# The interpreter: pyenv's or another python3 that is not Debian's. torch's
# inductor links its CPU kernels against the interpreter's library folder
# first; Debian's (/usr/lib/x86_64-linux-gnu) holds Debian's LibTorch 1.13,
# whose libtorch_cpu then shadows the wheel's and torch.compile fails on the
# CPU (undefined Sleef symbols). Debian's python3 is the fallback.
python=""
for candidate in $(which -a python3.11 python3 2>/dev/null); do
  resolved="$("$candidate" -c 'import sys; print(sys.base_prefix)' 2>/dev/null || true)"
  if [ -n "$resolved" ] && [ "$resolved" != /usr ] && "$candidate" -m venv --help >/dev/null 2>&1; then
    python="$candidate"
    break
  fi
done
if [ -z "$python" ]; then
  python=/usr/bin/python3
  if ! "$python" -m ensurepip --version >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  fi
fi
start=$(date +%s)
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q -r "$requirements"
cp "$requirements" "$venv/posc-requirements.txt"
echo "python_env: $("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)') in $venv" \
     "($(du -sh "$venv" | cut -f1), $(( $(date +%s) - start )) s, from $python)"
