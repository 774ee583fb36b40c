"""TensorBoard's own reader on posc's event files: a tiny `posc run` with
evaluation during training; every loss, learning rate and accuracy in
metrics.jsonl must be read back by tensorboard's EventAccumulator under
seed<N>/..., at the same step, to float precision.

    python check_tensorboard.py POSC OUT_DIR     (exit 77: tensorboard missing)
"""
import json
import math
import os
import subprocess
import sys

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
except ImportError as e:
    print(f"skipped: tensorboard is not installed ({e}); bash tools/python_env.sh")
    sys.exit(77)

posc, out = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
source = os.path.join(here, "..", "python", "gpt2_layout.pos")
run = os.path.join(out, "run")
subprocess.run([posc, "run", source, "--out", run, "--fresh", "--threads", "1", "--set", "train.steps=120",
                "--set", "train.log_every=20", "--set", "eval.every=60", "--no-progress"], check=True)

acc = EventAccumulator(os.path.join(run, "tensorboard"), size_guidance={"scalars": 0})
acc.Reload()
tags = set(acc.Tags()["scalars"])
metrics = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
checked = 0
for m in metrics:
    seed = m["seed"]
    wanted = {}
    if "loss" in m:
        wanted = {f"seed{seed}/loss": m["loss"], f"seed{seed}/lr": m["lr"], f"seed{seed}/tokens_per_s": None}
    else:
        wanted = {f"seed{seed}/accuracy/{k}d": v for k, v in m["eval"].items()}
    for tag, value in wanted.items():
        assert tag in tags, f"{tag} not among {sorted(tags)}"
        events = {e.step: e.value for e in acc.Scalars(tag)}
        assert m["step"] in events, f"{tag}: no event at step {m['step']} ({sorted(events)})"
        if value is not None:
            assert math.isclose(events[m["step"]], value, rel_tol=1e-6, abs_tol=1e-7), (tag, events[m["step"]], value)
        checked += 1
assert checked >= 20, checked
print(f"tensorboard read {checked} scalars of posc's run, every one equal to metrics.jsonl")
