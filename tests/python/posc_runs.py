"""Running posc from the Python package's test (check_package.py), and what it reports.

posc's logits are read through its training loss: a run warm-started from a
checkpoint with a learning rate of 1e-30 leaves every f64 weight unchanged
(each update is below the weights' rounding) and logs, for each step, the
mean cross-entropy of its answer tokens on that step's batch, which
--dump-training writes out. The same loss computed in Python from the same
batch must agree to rounding; the final weights of such a run must equal
the ones it started from, bit for bit.
"""
import csv
import json
import os
import shutil
import subprocess

TINY_STEP = "1e-30"


class Posc:
    def __init__(self, binary, scratch):
        self.binary, self.scratch = binary, scratch

    def run(self, name, pos, *settings, steps=None, dump=False, flags=()):
        """Runs `posc run` into scratch/name (fresh); returns the folder."""
        out = os.path.join(self.scratch, name)
        shutil.rmtree(out, ignore_errors=True)
        cmd = [self.binary, "run", pos, "--threads", "1", "--no-progress", "--seed", "0", "--out", out] + list(flags)
        if dump:
            cmd += ["--dump-training", os.path.join(out, "dump")]
        for s in list(settings) + ([f"train.steps={steps}"] if steps is not None else []):  # the last one wins
            cmd += ["--set", s]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"posc run failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
        return out

    def emit_flex(self, pos, path, *settings, flags=()):
        cmd = [self.binary, "emit", "flex", pos] + list(flags)
        for s in settings:
            cmd += ["--set", s]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        with open(path, "w") as f:
            f.write(done.stdout)
        return path

    def evaluate(self, name, pos, checkpoint, *settings, steps=2, flags=()):
        """Warm-starts `steps` steps at lr 1e-30 from checkpoint with the
        batches dumped: the folder, its per-step losses."""
        out = self.run(name, pos, f'train.init_from="{os.path.abspath(checkpoint)}"', f"train.lr={TINY_STEP}",
                       "train.log_every=1", "train.warmup=0", *settings, steps=steps, dump=True, flags=flags)
        return out, losses(out)


def losses(run):
    """The training losses of metrics.jsonl, one per step (log_every = 1)."""
    with open(os.path.join(run, "metrics.jsonl")) as f:
        return [json.loads(line)["loss"] for line in f if '"loss"' in line]


def accuracy(run):
    """{digits: (correct, total)} of accuracy.csv."""
    with open(os.path.join(run, "accuracy.csv")) as f:
        return {int(r["digits"]): (int(r["correct"]), int(r["total"])) for r in csv.DictReader(f)}


def protocol(run):
    with open(os.path.join(run, "protocol.csv")) as f:
        return list(csv.DictReader(f))
