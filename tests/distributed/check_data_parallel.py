#!/usr/bin/env python3
"""Data-parallel training of `posc run` across processes (runtime/distributed).

usage: check_data_parallel.py POSC WORK_DIR [cuda]

1. Two ranks on loopback (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set by
   hand, as any launcher does) train 20 steps of the small rope2d_decay
   preset; their weights equal one process's trained on the same global batch
   within 1e-6 (f32, the preset's schedule) and 1e-12 (f64, at lr 3e-3 without
   warm-up), and so do the logged losses. The ranks sum their halves of each
   gradient where one process sums the whole batch at once; in f32 that
   different order of additions changes the last bits, and AdamW turns a
   last-bit change of a near-zero gradient into a step of up to lr. So f32 at
   lr 3e-3 without warm-up is held to a looser 1e-4 (measured: 5.8e-6), the
   same run in f64 to 1e-12.
2. The same under torchrun (`torchrun --no_python --standalone`) where Debian's
   python3-torch provides it: equal to the hand-launched run.
3. A rank killed mid-training (SIGKILL) ends the other with exit status 1 and
   an error naming its rank and step, well within POSC_DIST_TIMEOUT; rank 0's
   status.json records the failure. A rank that stops answering (SIGSTOP)
   ends the other at the timeout.
4. Launches that cannot work are refused before anything starts (exit 2):
   RANK without WORLD_SIZE, a batch that does not split across the ranks.
5. Ranks launched on a run that one process stopped at a resume point are
   refused before they join (exit 2), and the resume point is kept.

Exits 77 (skipped) when this posc was built without Gloo.

With `cuda` (CTest label cuda): step 1 alone, each rank on its own GPU
(cuda:LOCAL_RANK) over NCCL against one process on cuda:0, with the same
tolerances; exits 77 with fewer than 2 GPUs (NCCL takes one GPU per rank) or
when the posc build has no NCCL. Not yet run on a GPU.
"""
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

POSC, WORK = sys.argv[1], sys.argv[2]
DEVICE = sys.argv[3] if len(sys.argv) > 3 else "cpu"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPERIMENT = os.path.join(ROOT, "examples/addition/rope2d_decay.pos")
COMMON = ["--preset", "small", "--seed", "0", "--threads", "1", "--no-progress", "--set", "train.log_every=5",
          "--device", DEVICE]
if DEVICE == "cuda":
    gpus = subprocess.run(["sh", "-c", "nvidia-smi -L 2>/dev/null | grep -c '^GPU'"], capture_output=True, text=True)
    count = int(gpus.stdout.strip() or 0)
    if count < 2:
        print(f"skipped: {count} GPU(s) visible; data-parallel training over NCCL needs one GPU per rank, 2 at least")
        sys.exit(77)
FAST = ["--set", "train.warmup=0", "--set", "train.lr=3e-3"]
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_safetensors(path):
    """{name: (dtype, shape, values as a list of floats)}: the format read
    by hand (8-byte header length, JSON header, raw little-endian data)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    codes = {"F32": "f", "F64": "d", "I64": "q"}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        code = codes[info["dtype"]]
        count = (end - start) // struct.calcsize(code)
        out[name] = (info["dtype"], info["shape"],
                     struct.unpack("<%d%s" % (count, code), blob[8 + n + start:8 + n + end]))
    return out


def max_difference(a_path, b_path):
    a, b = load_safetensors(a_path), load_safetensors(b_path)
    if a.keys() != b.keys():
        return float("inf")
    worst = 0.0
    for name in a:
        if a[name][:2] != b[name][:2]:
            return float("inf")
        worst = max([worst] + [abs(x - y) for x, y in zip(a[name][2], b[name][2])])
    return worst


def losses(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line)["loss"] for line in f if '"loss"' in line]


def run_single(out, extra):
    return subprocess.run([POSC, "run", EXPERIMENT, *COMMON, *extra, "--steps", "20", "--out", out],
                          capture_output=True, text=True)


def launch_ranks(out, extra, world=2, steps=20, env_extra=None):
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **(env_extra or {}))
        procs.append(subprocess.Popen([POSC, "run", EXPERIMENT, *COMMON, *extra, "--steps", str(steps), "--out", out],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return procs


def finish(procs, timeout=300):
    results = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        results.append((p.returncode, out, err))
    return results


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)

# 1. Two ranks against one process, in f32 and f64.
for name, precision, schedule, tolerance in (("f32", "f32", [], 1e-6), ("f32 lr 3e-3", "f32", FAST, 1e-4),
                                             ("f64 lr 3e-3", "f64", FAST, 1e-12)):
    extra = ["--set", "model.precision=" + precision] + schedule
    folder = name.replace(" ", "-")
    single_dir = os.path.join(WORK, "single-" + folder)
    ranks_dir = os.path.join(WORK, "ranks-" + folder)
    single = run_single(single_dir, extra + ["--fresh"])
    ranks = finish(launch_ranks(ranks_dir, extra + ["--fresh"]))
    if any("built without data-parallel" in err for _, _, err in ranks):
        print("skipped: this posc was built without Gloo (Debian: libgloo-dev)")
        sys.exit(77)
    if DEVICE == "cuda" and not any(" over NCCL," in err for _, _, err in ranks):
        print("skipped: this posc has no NCCL (a CUDA LibTorch 2.x build has it); the ranks said: " + ranks[0][2][-300:])
        sys.exit(77)
    check(single.returncode == 0, f"{name}: one process trains (exit {single.returncode}) {single.stderr[-300:]}")
    check(all(code == 0 for code, _, _ in ranks),
          f"{name}: both ranks train (exits {[c for c, _, _ in ranks]}) {ranks[0][2][-300:]} {ranks[1][2][-300:]}")
    check(not os.path.exists(os.path.join(ranks_dir, "seed0", "resume.pt")), f"{name}: no resume point left")
    diff = max_difference(os.path.join(single_dir, "seed0", "final.safetensors"),
                          os.path.join(ranks_dir, "seed0", "final.safetensors"))
    check(diff <= tolerance, f"{name}: weights after 20 steps, max |2 ranks - 1 process| = {diff:.3g} <= {tolerance:g}")
    a, b = losses(single_dir), losses(ranks_dir)
    loss_diff = max(abs(x - y) for x, y in zip(a, b)) if len(a) == len(b) == 4 else float("inf")
    check(loss_diff <= max(tolerance, 1e-6) * 10,
          f"{name}: the 4 logged losses agree (max difference {loss_diff:.3g}; {a[-1] if a else '-'})")
    check(a[0] - a[-1] > 0.05 if len(a) == 4 else False, f"{name}: the loss falls over the 20 steps ({a})")

if DEVICE == "cuda":
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)

# 2. torchrun, where installed and working. Debian 12's torchrun (PyTorch 1.13
# on Python 3.11) fails before it starts any process: its Std.from_str
# returns None under Python 3.11's enums, so to_map() raises AttributeError.

torchrun = subprocess.run(["sh", "-c", "command -v torchrun"], capture_output=True, text=True).stdout.strip()
if torchrun:
    out_dir = os.path.join(WORK, "torchrun-f32")
    r = subprocess.run([torchrun, "--no_python", "--standalone", "--nproc_per_node", "2", POSC, "run", EXPERIMENT,
                        *COMMON, "--set", "model.precision=f32", "--steps", "20", "--out", out_dir, "--fresh"],
                       capture_output=True, text=True, timeout=300)
    broken = r.returncode != 0 and "to_map" in r.stderr and "has no attribute 'get'" in r.stderr
    if broken:
        print("note  this torchrun fails before starting any process (PyTorch 1.13's to_map() on Python 3.11); "
              "the torchrun launch is not checked here")
    else:
        check(r.returncode == 0, f"torchrun --nproc_per_node 2 trains (exit {r.returncode}) {r.stderr[-400:]}")
    if r.returncode == 0:
        diff = max_difference(os.path.join(WORK, "ranks-f32", "seed0", "final.safetensors"),
                              os.path.join(out_dir, "seed0", "final.safetensors"))
        check(diff == 0.0, f"torchrun's run equals the hand-launched one (max difference {diff:.3g})")
else:
    print("note  torchrun not found (Debian: python3-torch); the torchrun launch is not checked")

# 3. A rank that dies.
def training_ranks(name, timeout_s):
    """Two ranks of a long run, once both are training (metrics logged)."""
    out_dir = os.path.join(WORK, name)
    procs = launch_ranks(out_dir, ["--set", "train.log_every=1", "--fresh"], steps=1000000,
                         env_extra={"POSC_DIST_TIMEOUT": str(timeout_s)})
    metrics = os.path.join(out_dir, "metrics.jsonl")
    deadline = time.time() + 120
    while time.time() < deadline and not (os.path.exists(metrics) and os.path.getsize(metrics) > 200):
        time.sleep(0.2)
    return out_dir, procs, os.path.exists(metrics) and os.path.getsize(metrics) > 200


def rank0_after(procs, sig, timeout_s):
    """Sends `sig` to rank 1; returns rank 0's exit status, its stderr and the seconds it took to end."""
    procs[1].send_signal(sig)
    sent_at = time.time()
    try:
        code, _, err = finish([procs[0]], timeout=timeout_s + 60)[0]
    except subprocess.TimeoutExpired:
        procs[0].kill()
        code, err = None, "(still running)"
    waited = time.time() - sent_at
    procs[1].kill()
    procs[1].communicate()
    print("      rank 0 said: " + err.strip().splitlines()[-1] if err.strip() else "      rank 0 said nothing")
    return code, err, waited


timeout_s = 20
out_dir, procs, training = training_ranks("killed", timeout_s)
check(training, "both ranks are training before the kill")
code, err, waited = rank0_after(procs, signal.SIGKILL, timeout_s)
check(code == 1, f"rank 0 exits with status 1 after rank 1 is killed (got {code})")
check(waited <= timeout_s + 10, f"rank 0 ends {waited:.1f} s after the kill (timeout {timeout_s} s)")
check("rank 0 of 2" in err and "step " in err and "data-parallel training stopped" in err,
      "the error names the rank, the world size and the step")
try:
    with open(os.path.join(out_dir, "status.json")) as f:
        status = json.load(f)
except (OSError, ValueError):
    status = {}
check(status.get("state") == "failed", f"status.json records the failure ({status.get('state')})")

# 3b. A rank that stops answering (SIGSTOP): the others give up at the timeout.
timeout_s = 10
out_dir, procs, _ = training_ranks("stopped", timeout_s)
code, err, waited = rank0_after(procs, signal.SIGSTOP, timeout_s)
check(code == 1 and timeout_s - 1 <= waited <= timeout_s + 15,
      f"a rank that stops answering ends rank 0 at the timeout: exit {code} after {waited:.1f} s (timeout {timeout_s} s)")

# 4. Launches refused before anything starts.
r = subprocess.run([POSC, "run", EXPERIMENT, *COMMON, "--steps", "1", "--out", os.path.join(WORK, "refused")],
                   env=dict(os.environ, RANK="1"), capture_output=True, text=True)
check(r.returncode == 2 and "WORLD_SIZE" in r.stderr, f"RANK without WORLD_SIZE is refused (exit {r.returncode})")
r = subprocess.run([POSC, "run", EXPERIMENT, *COMMON, "--steps", "1", "--set", "train.batch=63", "--out",
                    os.path.join(WORK, "refused")],
                   env=dict(os.environ, RANK="0", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port())),
                   capture_output=True, text=True, timeout=60)
check(r.returncode == 2 and "multiple of the world size" in r.stderr,
      f"a batch of 63 over 2 ranks is refused before joining (exit {r.returncode}) {r.stderr.strip()[-200:]}")
check(not os.path.exists(os.path.join(WORK, "refused")), "a refused launch writes nothing")

# 5. A run that one process stopped at a resume point is not continued by
# ranks (a data-parallel run continues from finished seeds only): refused
# before they join, the resume point kept. The folder is a finished run turned back
# into an interrupted one (its final weights as the resume point).
kept = os.path.join(WORK, "kept")
r = run_single(kept, [])
check(r.returncode == 0, f"a single run for the resume-point case (exit {r.returncode})")
with open(os.path.join(kept, "status.json")) as f:
    status = json.load(f)
status.update(state="interrupted", seed=0, step=10, message="SIGTERM", seeds_done=[])
with open(os.path.join(kept, "status.json"), "w") as f:
    f.write(json.dumps(status, separators=(",", ":")) + "\n")
resume = os.path.join(kept, "seed0", "resume.pt")
os.replace(os.path.join(kept, "seed0", "final.pt"), resume)
results = finish(launch_ranks(kept, []), timeout=60)
check(all(code == 2 and "cannot continue from it" in err for code, _, err in results),
      "ranks refuse a single process's resume point: "
      + "; ".join(f"exit {code} {err.strip()[-160:]}" for code, _, err in results))
check(os.path.exists(resume), "the resume point is kept")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
