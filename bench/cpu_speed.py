#!/usr/bin/env python3
"""posc's CPU training step against its Python peer, and against itself.

Runs build/bench/train_eval_bench and bench/peer/gpt.py (Debian's python3-torch:
the same LibTorch build and the same OpenBLAS as posc), alternating the two
`--rounds` times so that both see the same machine, and prints every ratio
from medians measured in this run:

  study step, f32, 1 thread     posc tokens/s / peer tokens/s      target >= 1.15
  small step, f32, 1 thread     posc tokens/s / peer tokens/s      target >= 2
  study step, 2 threads         posc 1-thread time / 2-thread time target >= 1.6
  small step, 2 threads         posc 1-thread time / 2-thread time target >= 1.0
  study step, bf16_mixed        posc f32 time / bf16 time          target >= 1.8 (AVX512_BF16 or AMX)
  whole quick start, 1 thread   peer wall time / posc wall time    target >= 2
                                (posc run examples/quickstart.pos against
                                bench/peer/quickstart.py: 2,000 steps, then
                                5 lengths x 90 problems decoded greedily)

Both sides get the same OpenBLAS: the kernels posc chooses (OPENBLAS_CORETYPE
from `posc --blas-kernels`) and the build it loads (its folder first on
LD_LIBRARY_PATH, from `posc --blas-library`: the OpenMP build where it is
installed), and the same thread count (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS;
with 2 threads on the pthread build OMP_WAIT_POLICY=PASSIVE, as posc run sets
it). tokens = batch x padded length on both sides. The
peer's batches are made before timing; posc's step includes making them.

With --torch2, the same run also times the peer under PyTorch 2.x (the
git-ignored .venv-torch of tools/python_env.sh), eager and torch.compile'd,
beside the 1.13 peer, at 1 and 2 threads, and prints posc's tokens/s over each
(no targets: these rows are what a researcher would pick instead of posc, with
PyTorch 2.x's own BLAS and compiler):

  small and study step, 1 and 2 threads   posc tokens/s / peer tokens/s
        for the peers: torch 1.13 eager, torch 2.x eager, torch 2.x compiled

    python3 bench/cpu_speed.py [--build build] [--rounds 3] [--markdown] [--torch2]

--markdown prints the table for the README's speed section.
"""
import argparse
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch
TORCH2_PYTHON = os.path.join(ROOT, ".venv-torch", "bin", "python")  # tools/python_env.sh


def cpu_description():
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    shown = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile") if f in flags]
    return model, shown, os.cpu_count()


@functools.lru_cache(maxsize=None)
def posc_says(build, flag):
    """What `posc FLAG` prints (asked once a run: it starts posc)."""
    return subprocess.run([os.path.join(build, "posc"), flag], capture_output=True, text=True).stdout.strip()


def environment(build, threads):
    """The environment of both sides, and a line naming the BLAS."""
    env = dict(os.environ)
    kernels, library = posc_says(build, "--blas-kernels"), posc_says(build, "--blas-library")
    env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads), POSC_KEEP_BLAS="1")
    openmp = os.path.basename(os.path.dirname(library)) == "openblas-openmp"
    if threads > 1 and not openmp:  # as posc run sets it (tools/posc/blas_kernels.h): no spinning
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if kernels:
        env["OPENBLAS_CORETYPE"] = kernels
    if library:
        env["LD_LIBRARY_PATH"] = os.path.dirname(library) + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env, f"{kernels or 'unknown'} kernels, {library or 'unknown library'}"


def posc_step(build, name, threads):
    """(ms a step, tokens/s) of one train_eval_bench benchmark."""
    env, _ = environment(build, threads)
    pattern = "^" + name.replace("+", r"\+") + f"/threads:{threads}/"
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([os.path.join(build, "bench", "train_eval_bench"), f"--benchmark_filter={pattern}",
                        f"--benchmark_out={out.name}", "--benchmark_out_format=json"],
                       stdout=subprocess.DEVNULL, env=env, check=True)
        runs = json.load(out)["benchmarks"]
    if not runs:
        sys.exit(f"train_eval_bench has no benchmark {pattern}")
    return runs[0]["real_time"], runs[0]["tokens/s"]


def peer_step(build, size, threads, steps, python=PYTHON, compiled=False):
    """(ms a step, tokens/s) of bench/peer/gpt.py under `python` (eager, or
    torch.compile'd: its compiles happen before timing)."""
    env, _ = environment(build, threads)
    out = subprocess.run([python, os.path.join(HERE, "peer", "gpt.py"), "--size", size, "--steps", str(steps),
                          "--threads", str(threads), "--json"] + (["--compile"] if compiled else []),
                         capture_output=True, text=True, env=env, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["step_ms"], r["tokens_per_s"]


def posc_quickstart(build, threads):
    """Wall seconds of `posc run examples/quickstart.pos` on `threads` threads."""
    env, _ = environment(build, threads)
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        subprocess.run([os.path.join(build, "posc"), "run", os.path.join(ROOT, "examples", "quickstart.pos"),
                        "--threads", str(threads), "--out", os.path.join(out, "run"), "--no-progress"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
        return time.perf_counter() - t0


def peer_quickstart(build, threads):
    env, _ = environment(build, threads)
    t0 = time.perf_counter()
    subprocess.run([PYTHON, os.path.join(HERE, "peer", "quickstart.py"), "--threads", str(threads), "--json"],
                   stdout=subprocess.DEVNULL, env=env, check=True)
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--no-quickstart", action="store_true", help="leave out the whole quick start (about 2.5 min a round)")
    p.add_argument("--torch2", action="store_true",
                   help="also the peer under PyTorch 2.x (.venv-torch), eager and compiled, 1 and 2 threads")
    args = p.parse_args()
    if args.torch2 and not os.path.exists(TORCH2_PYTHON):
        sys.exit(f"--torch2 needs {TORCH2_PYTHON}: run bash tools/python_env.sh")
    model, flags, cores = cpu_description()
    _, kernels = environment(args.build, 1)
    torch_version = subprocess.run([PYTHON, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    print(f"CPU: {model}, {cores} cores, flags: {' '.join(flags) or 'none of avx2/avx512/amx'}")
    print(f"OpenBLAS: {kernels}; Python peer: torch {torch_version}", flush=True)
    if args.torch2:
        torch2_version = subprocess.run([TORCH2_PYTHON, "-c", "import torch; print(torch.__version__)"],
                                        capture_output=True, text=True).stdout.strip()
        print(f"PyTorch 2.x peer: torch {torch2_version} (its own BLAS and inductor)", flush=True)
    torch2_peers = [("1.13 eager", PYTHON, False), ("2.x eager", TORCH2_PYTHON, False),
                    ("2.x compiled", TORCH2_PYTHON, True)]
    steps = {"small": 100, "study": 8}

    cases = {  # name: list of (ms, tokens/s), one per round
        "posc small": [], "peer small": [], "posc study": [], "peer study": [],
        "posc small 2t": [], "posc study 2t": [], "posc study bf16": [],
        "posc quick start": [], "peer quick start": [],
    }

    def peer_case(size, peer, threads):
        """The case of a --torch2 row; 1.13 eager on one thread is the targeted rows' peer, measured once."""
        return f"peer {size}" if (peer, threads) == ("1.13 eager", 1) else f"peer {size} {peer} {threads}t"

    if args.torch2:
        for size in steps:
            for threads in (1, 2):
                for peer, _, _ in torch2_peers:
                    cases.setdefault(peer_case(size, peer, threads), [])
    for r in range(args.rounds):
        print(f"round {r + 1} of {args.rounds} ...", file=sys.stderr, flush=True)
        cases["posc small"].append(posc_step(args.build, "TrainStep/small/rope2d_decay+jit", 1))
        cases["peer small"].append(peer_step(args.build, "small", 1, steps["small"]))
        cases["posc study"].append(posc_step(args.build, "TrainStep/study/rope2d_decay+jit", 1))
        cases["peer study"].append(peer_step(args.build, "study", 1, steps["study"]))
        cases["posc small 2t"].append(posc_step(args.build, "TrainStep/small/rope2d_decay+jit", 2))
        cases["posc study 2t"].append(posc_step(args.build, "TrainStep/study/rope2d_decay+jit", 2))
        cases["posc study bf16"].append(posc_step(args.build, "TrainStep/study/rope2d_decay+jit+bf16", 1))
        if args.torch2:
            for size in steps:
                for threads in (1, 2):
                    for peer, python, compiled in torch2_peers:
                        if peer_case(size, peer, threads) != f"peer {size}":
                            cases[peer_case(size, peer, threads)].append(
                                peer_step(args.build, size, threads, steps[size], python, compiled))
        if not args.no_quickstart:
            cases["posc quick start"].append((posc_quickstart(args.build, 1), 0))
            cases["peer quick start"].append((peer_quickstart(args.build, 1), 0))

    def med(name, i):
        return statistics.median(x[i] for x in cases[name])

    def spread(name, i):
        xs = [x[i] for x in cases[name]]
        return f"{min(xs):,.0f}-{max(xs):,.0f}"

    has_bf16 = "avx512_bf16" in flags or "amx_bf16" in flags
    rows = [
        ("study step (6 x 384), f32, 1 thread: posc / peer tokens/s",
         med("posc study", 1) / med("peer study", 1), 1.15,
         f"posc {spread('posc study', 1)}, peer {spread('peer study', 1)} tokens/s"),
        ("small step (2 x 64), f32, 1 thread: posc / peer tokens/s",
         med("posc small", 1) / med("peer small", 1), 2.0,
         f"posc {spread('posc small', 1)}, peer {spread('peer small', 1)} tokens/s"),
        ("study step: 1-thread / 2-thread time",
         med("posc study", 0) / med("posc study 2t", 0), 1.6,
         f"{med('posc study', 0):,.0f} ms / {med('posc study 2t', 0):,.0f} ms"),
        ("small step: 1-thread / 2-thread time",
         med("posc small", 0) / med("posc small 2t", 0), 1.0,
         f"{med('posc small', 0):.1f} ms / {med('posc small 2t', 0):.1f} ms"),
        ("study step: f32 / bf16_mixed time" + ("" if has_bf16 else " (no AVX512_BF16/AMX: no target)"),
         med("posc study", 0) / med("posc study bf16", 0), 1.8 if has_bf16 else None,
         f"{med('posc study', 0):,.0f} ms / {med('posc study bf16', 0):,.0f} ms"),
    ]
    if not args.no_quickstart:
        rows.append(("whole quick start, 1 thread: peer / posc wall time",
                     med("peer quick start", 0) / med("posc quick start", 0), 2.0,
                     f"posc {spread('posc quick start', 0)} s, peer {spread('peer quick start', 0)} s"))
    if args.torch2:
        for size, shape in (("small", "2 x 64"), ("study", "6 x 384")):
            for threads in (1, 2):
                for peer, _, _ in torch2_peers:
                    name, ours = peer_case(size, peer, threads), f"posc {size}" + (" 2t" if threads == 2 else "")
                    rows.append((f"{size} step ({shape}), {threads} thread{'s' if threads > 1 else ''}: "
                                 f"posc / peer on torch {peer}",
                                 med(ours, 1) / med(name, 1), None,
                                 f"posc {spread(ours, 1)}, peer {spread(name, 1)} tokens/s"))
    print()
    if args.markdown:
        print("| ratio (medians of %d rounds, same run) | measured | target | figures |" % args.rounds)
        print("|---|---|---|---|")
    for label, ratio, target, detail in rows:
        verdict = "" if target is None else ("met" if ratio >= target else "NOT met")
        tgt = "-" if target is None else f">= {target:g}"
        if args.markdown:
            print(f"| {label} | {ratio:.2f} | {tgt} {verdict} | {detail} |")
        else:
            print(f"{label:<62} {ratio:6.2f}  {tgt:>8} {verdict:<8} {detail}")


if __name__ == "__main__":
    sys.exit(main())
