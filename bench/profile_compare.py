#!/usr/bin/env python3
"""Two profiles of a training step, operation by operation.

Reads the Chrome traces written by build/bench/step_profile (posc) and
bench/peer/gpt.py --trace (the Python peer), computes each operation's self
time (its own time minus the operations it called), divides by the number of
profiled steps (the "step" ranges), and prints the operations that differ
most, then the totals: time in matrix products (BLAS), in everything else
inside LibTorch operations, and outside any operation (the caller's own code:
Python, or posc's C++ and generated kernels).

    python3 bench/profile_compare.py posc.json peer.json [--top 30]
"""
import argparse
import collections
import json
import sys

MATMUL = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addmv", "aten::mv",
          "aten::mkldnn_matmul"}


def self_times(path):
    """{name: self microseconds per step}, steps, step microseconds."""
    with open(path) as f:
        events = [e for e in json.load(f) if e.get("ph") == "X"]
    steps = [e for e in events if e["name"] == "step"]
    if not steps:
        sys.exit(f"{path}: no 'step' ranges")
    per_thread = collections.defaultdict(list)
    for e in events:
        per_thread[e.get("tid")].append(e)
    totals = collections.Counter()
    for evs in per_thread.values():
        evs.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack = []  # (end, name, child time)
        def close(until):
            while stack and stack[-1][0] <= until:
                end, name, start, child = stack.pop()
                own = (end - start) - child
                totals[name] += own
                if stack:
                    stack[-1][3] += end - start
        for e in evs:
            ts, dur = float(e["ts"]), float(e["dur"])
            close(ts)
            stack.append([ts + dur, e["name"], ts, 0.0])
        close(float("inf"))
    n = len(steps)
    step_us = sum(float(e["dur"]) for e in steps) / n
    return {k: v / n for k, v in totals.items()}, n, step_us


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("posc")
    p.add_argument("peer")
    p.add_argument("--top", type=int, default=30)
    args = p.parse_args()
    a, na, step_a = self_times(args.posc)
    b, nb, step_b = self_times(args.peer)
    print(f"posc: {na} steps, {step_a / 1e3:.1f} ms a step; peer: {nb} steps, {step_b / 1e3:.1f} ms a step")
    print(f"\n{'operation (self time a step)':<44}{'posc ms':>10}{'peer ms':>10}{'diff':>10}")
    names = sorted(set(a) | set(b), key=lambda k: -abs(a.get(k, 0) - b.get(k, 0)))
    for k in names[: args.top]:
        print(f"{k[:43]:<44}{a.get(k, 0) / 1e3:>10.2f}{b.get(k, 0) / 1e3:>10.2f}{(a.get(k, 0) - b.get(k, 0)) / 1e3:>+10.2f}")

    def split(t):
        mm = sum(v for k, v in t.items() if k in MATMUL)
        step_own = t.get("step", 0.0)
        other = sum(v for k, v in t.items() if k not in MATMUL and k != "step")
        return mm, other, step_own
    print(f"\n{'':<44}{'posc ms':>10}{'peer ms':>10}")
    for label, x, y in zip(["matrix products", "other LibTorch operations", "outside operations"],
                           split(a), split(b)):
        print(f"{label:<44}{x / 1e3:>10.1f}{y / 1e3:>10.1f}")


if __name__ == "__main__":
    sys.exit(main())
