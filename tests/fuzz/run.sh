#!/usr/bin/env bash
# Builds the fuzzing and sanitizer tree (clang, POSC_FUZZ=ON: the parts of
# posc without LibTorch, under AddressSanitizer and UndefinedBehaviorSanitizer),
# runs those parts' unit tests sanitized, then each libFuzzer harness for
# SECONDS (default 60), seeded with every .pos file in the tree, the REPL
# and run-folder seeds and the checked-in corpus (the language's harnesses
# with the grammar dictionary).
#
#   bash tests/fuzz/run.sh [SECONDS] [BUILD_DIR]
#
# Exit status: non-zero on a sanitizer report, a crash or a failed test. New
# corpus entries go to BUILD_DIR/corpus (merge them into tests/fuzz/corpus
# with -merge=1 when they add coverage).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
build="${2:-build-fuzz}"
# clang and its runtime (libFuzzer, the sanitizers); Debian 12, as root.
for p in clang-14 libclang-rt-14-dev; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev >/dev/null
    break
  fi
done

CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DPOSC_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build"
ctest --test-dir "$build" -j2 --output-on-failure

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for harness in front_end repl run_folder; do
  work="$build/corpus/$harness"
  mkdir -p "$work"
  seeds=()
  [ -d "tests/fuzz/corpus/$harness" ] && seeds+=("tests/fuzz/corpus/$harness")
  if [ "$harness" = front_end ]; then
    mkdir -p "$build/seeds/front_end"
    find examples stdlib tests/golden tests/onnx -name '*.pos' -exec cp {} "$build/seeds/front_end/" \; 2>/dev/null || true
    seeds+=("$build/seeds/front_end")
  else
    seeds+=("tests/fuzz/seeds/$harness")
  fi
  echo "fuzzing $harness for ${seconds}s"
  dict=()
  [ "$harness" != run_folder ] && dict=(-dict=tests/fuzz/pos.dict)  # the language's words
  "$build/tests/fuzz/${harness}_fuzzer" "$work" "${seeds[@]}" "${dict[@]}" \
    -max_total_time="$seconds" -max_len=4096 -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/${harness}-" 2>&1 | grep -E "^(INFO: Loaded|#[0-9]+ +DONE|stat::|==[0-9]+==ERROR|SUMMARY)" || true
  if ls "$build/${harness}-"* >/dev/null 2>&1; then
    echo "fuzz: $harness found a failing input: $(ls "$build/${harness}-"*)" >&2
    exit 1
  fi
done
