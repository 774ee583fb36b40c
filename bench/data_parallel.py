#!/usr/bin/env python3
"""Data-parallel training step time: 2 ranks against 1 process, same global batch.

Runs `posc run` of one experiment three ways, alternating them `--rounds`
times so that all see the same machine, and prints medians of the training
throughput each run reports (rank 0's "training throughput" line: tokens of
the global batch per second of training, evaluation and checkpoints
excluded):

  one     1 process, 1 thread
  ranks   2 ranks on loopback (Gloo), 1 thread each
  threads 1 process, 2 threads (the other way to use 2 cores)

and the ratios  step(one) / step(ranks)   (ideal: 2 on 2 idle cores)
and             step(threads) / step(ranks).

    python3 bench/data_parallel.py [--posc build/posc] [--rounds 3]
        [--file examples/addition/rope2d_decay.pos] [--preset mini] [--steps 300]

Needs 2 idle cores; the global batch (train.batch) must be even.
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def throughput(stderr):
    m = re.search(r"training throughput: ([0-9.]+) tokens/s", stderr)
    if not m:
        sys.exit("no throughput line in:\n" + stderr[-2000:])
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--posc", default="build/posc")
    ap.add_argument("--file", default="examples/addition/rope2d_decay.pos")
    ap.add_argument("--preset", default="mini")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="posc-ddp-bench-")
    base = [a.posc, "run", a.file, "--preset", a.preset, "--seed", "0", "--steps", str(a.steps), "--no-progress",
            "--fresh", "--set", "train.checkpoint_every=0", "--set", "eval.every=0"]

    def one(threads):
        r = subprocess.run(base + ["--threads", str(threads), "--out", os.path.join(work, f"one{threads}")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(r.stderr[-2000:])
        return throughput(r.stderr)

    def ranks():
        port = free_port()
        procs = [subprocess.Popen(base + ["--threads", "1", "--out", os.path.join(work, "ranks")],
                                  env=dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                                           MASTER_PORT=str(port)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
        outs = [p.communicate() for p in procs]
        if any(p.returncode != 0 for p in procs):
            sys.exit(outs[0][1][-2000:] + outs[1][1][-2000:])
        return throughput(outs[0][1])

    rates = {"one": [], "ranks": [], "threads": []}
    for i in range(a.rounds):
        rates["one"].append(one(1))
        rates["ranks"].append(ranks())
        rates["threads"].append(one(2))
        print(f"round {i + 1}: " + ", ".join(f"{k} {v[-1]:.0f} tok/s" for k, v in rates.items()), flush=True)
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"\n{a.file} --preset {a.preset}, {a.steps} steps, medians of {a.rounds} rounds (tokens/s):")
    for k, label in (("one", "1 process, 1 thread"), ("ranks", "2 ranks, 1 thread each"),
                     ("threads", "1 process, 2 threads")):
        print(f"  {label:26s} {med[k]:10.0f}")
    print(f"  step time 1 process / 2 ranks:           {med['ranks'] / med['one']:.2f}x  (ideal 2)")
    print(f"  step time 1 process 2 threads / 2 ranks: {med['ranks'] / med['threads']:.2f}x")


if __name__ == "__main__":
    main()
