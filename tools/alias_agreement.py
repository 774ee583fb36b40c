#!/usr/bin/env python3
"""How well `posc check --aliases` predicts the kernel probe of trained runs.

usage: tools/alias_agreement.py [--posc build/posc] RUN_DIR...

Each RUN_DIR is a finished `posc run` folder whose experiment declares the
kernel probe (the study's presets do): its plan.txt names the source file and
preset, probes/kernel.csv the lookup head the probe chose and its measured
far-window maximum, probes/kernel-windows.csv every window. For each run this
runs the alias check on the same source and preset, with both head models,
and prints, per run:

  measured      the probe's best far window as a fraction of the target, over
                both sides of the sweep (kernel.csv's best_far_fraction) and over
                the keys before the query only (negative offsets: the side
                attention can see, which is all the check sweeps)
  predicted     the check's best far window for the probe's head, fitted and
                aligned models

then Spearman's rank correlation (ties averaged) between each prediction and
each measurement across the runs. Only the standard library is needed.
"""
import argparse
import csv
import io
import os
import subprocess
import sys


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(x, y):
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else float("nan")


def number(cell):
    try:
        return float(cell)
    except ValueError:
        return float("nan")


def run_info(run):
    source, preset = None, ""
    with open(os.path.join(run, "plan.txt")) as f:
        for line in f:
            if line.startswith("# source ") and source is None:
                source = line.split(" ", 2)[2].strip()
            if line.strip().startswith("preset "):
                preset = line.split()[1]
    return source, preset


def measured(run):
    with open(os.path.join(run, "probes", "kernel.csv")) as f:
        row = list(csv.DictReader(f))[0]
    head, far = int(row["head"]), number(row["best_far_fraction"])
    with open(os.path.join(run, "probes", "kernel-windows.csv")) as f:
        windows = list(csv.DictReader(f))
    return head, far, windows


def predicted(posc, source, preset, model, head):
    cmd = [posc, "check", "--aliases", "--csv", "--model", model, source] + (["--preset", preset] if preset else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    return number(rows[head]["best far window (fraction)"]), max(number(r["best far window (fraction)"]) for r in rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--posc", default="build/posc")
    parser.add_argument("--far", type=int, default=100, help="the probe's far distance (the study's presets: 100)")
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()
    table = []
    for run in args.runs:
        source, preset = run_info(run)
        head, far_both, windows = measured(run)
        before = [number(w["fraction_of_target"]) for w in windows if int(w["window_end"]) <= -args.far]
        far_before = max(before) if before else float("nan")
        fitted, fitted_any = predicted(args.posc, source, preset, "fitted", head)
        aligned, aligned_any = predicted(args.posc, source, preset, "aligned", head)
        table.append((os.path.basename(os.path.normpath(run)), head, far_both, far_before, fitted, aligned, fitted_any,
                      aligned_any))
    print("| run | probe's head | measured far (both sides) | measured far (keys before the query) | "
          "predicted, fitted | predicted, aligned | fitted, any head | aligned, any head |")
    print("|---|---|---|---|---|---|---|---|")
    for r in table:
        print("| {} | {} | {:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.3g} |".format(*r))
    print()
    for name, col in (("both sides", 2), ("keys before the query", 3)):
        for model, p in (("fitted", 4), ("aligned", 5)):
            rho = spearman([r[p] for r in table], [r[col] for r in table])
            print(f"Spearman rank correlation, {model} prediction vs measured ({name}): {rho:.3f} over {len(table)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
