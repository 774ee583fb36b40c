"""posc's training against an independent PyTorch reference, step for step.

For each configuration, `posc run` trains in f64 on one thread and records
its initial weights and every step's batch (--dump-training); the reference
(reference_gpt.py) starts from the same weights, trains on the same batches
with torch.optim.AdamW, and must agree on every step's loss and on every
final weight to TOLERANCE. The batches are also checked on their own: each
row a correct sum, and posc's channels equal to the ones computed from the
tokens by their definitions.

usage: check_training.py POSC SCRATCH_DIR [CONFIG ...]
"""

import json
import math
import os
import shutil
import subprocess
import sys
import time

try:
    import torch
except ImportError:
    print("skipped: this Python has no torch (Debian's python3-torch: tools/setup.sh)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_gpt as ref  # noqa: E402

torch.set_num_threads(1)

STEPS = 50
TOLERANCE = 1e-9
# The training settings, given to posc with --set and to the reference as they are.
HP = {"lr": 3e-3, "warmup": 10, "weight_decay": 0.1, "betas": (0.9, 0.99), "eps": 1e-8, "grad_clip": 1.0,
      "min_lr_ratio": 0.1, "batch": 16}
SETTINGS = [
    "model.precision=f64", "train.log_every=1", f"train.lr={HP['lr']}", f"train.warmup={HP['warmup']}",
    f"train.weight_decay={HP['weight_decay']}", f"train.betas=({HP['betas'][0]}, {HP['betas'][1]})",
    f"train.eps={HP['eps']}", f"train.grad_clip={HP['grad_clip']}", f"train.min_lr_ratio={HP['min_lr_ratio']}",
    f"train.batch={HP['batch']}", "train.schedule=cosine", "task.test_digits=[3]", "task.problems_per_length=4",
    "train.checkpoint_every=0",
]

SMALL = ["--preset", "small"]
# The blocks of today's small models (Qwen3's): RMSNorm, SwiGLU, two query
# heads per key/value head, a head dimension of its own (8, not 64 / 4), RMSNorm
# on queries and keys, no biases, an untied head.
TODAYS_BLOCKS = ["--set", "model.norm=rmsnorm", "--set", "model.mlp=swiglu", "--set", "model.kv_heads=2", "--set",
                 "model.head_dim=8", "--set", "model.qk_norm=true", "--set", "model.bias=false", "--set",
                 "model.tied_embeddings=false"]

# name: (example, posc flags, reference's positional components)
CONFIGS = {
    "nope": ("examples/addition/nope.pos", SMALL, {}),
    "rope_plain": ("examples/addition/rope_plain.pos", SMALL, {"rope": "position"}),
    "learned_absolute": ("examples/addition/learned_absolute.pos", SMALL, {"learned_positions": 1024}),
    "alibi_position": ("examples/addition/alibi_position.pos", SMALL, {"alibi": True}),
    "rope2d_decay_sink": ("examples/addition/rope2d_decay_sink_scratch.pos", SMALL,
                          {"rope": "2d", "decay": True, "sink": True}),
    # The same model through the tensor-op path instead of the fused kernels.
    "rope2d_decay_sink_tensor_ops": ("examples/addition/rope2d_decay_sink_scratch.pos", SMALL + ["--jit", "off"],
                                     {"rope": "2d", "decay": True, "sink": True}),
    "rope_plain_todays_blocks": ("examples/addition/rope_plain.pos", SMALL + TODAYS_BLOCKS, {"rope": "position"}),
    # The trained adder: one layer of width 4, 2 query heads on 1 key/value
    # head of dimension 4, RoPE base 3, zero-padded operands units first.
    "adder_qwen3": ("examples/adder/trained_qwen3.pos", [], {"rope": "position", "rope_base": 3.0,
                                                                     "padded_width": 10}),
    # The same adder under MLX's AdamW defaults (no bias correction, decay on
    # every tensor), with operands drawn by value: the leaderboard entries' recipe.
    "adder_qwen3_mlx_adamw": ("examples/adder/trained_qwen3.pos",
                              ["--set", "train.bias_correction=false", "--set", "train.weight_decay_on=all",
                               "--set", "task.sampling=values"],
                              {"rope": "position", "rope_base": 3.0, "padded_width": 10,
                               "hp": {"bias_correction": False, "decay_all": True}}),
}


def run_posc(posc, name, example, flags, scratch):
    out, dump = os.path.join(scratch, name, "run"), os.path.join(scratch, name, "dump")
    shutil.rmtree(os.path.join(scratch, name), ignore_errors=True)
    cmd = [posc, "run", example, "--seed", "0", "--steps", str(STEPS), "--threads", "1",
           "--no-progress", "--out", out, "--dump-training", dump] + flags
    for s in SETTINGS:
        cmd += ["--set", s]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{name}: posc run failed ({done.returncode}):\n{done.stderr}")
    losses = [json.loads(line)["loss"] for line in open(os.path.join(out, "metrics.jsonl"))
              if '"loss"' in line]
    final, _ = ref.read_safetensors(os.path.join(out, "seed0", "final.safetensors"))
    return os.path.join(dump, "seed0"), losses, final


def reference_config(meta, weights, components):
    heads, width = int(meta["n_head"]), int(meta["n_embd"])
    cfg = ref.Config(layers=int(meta["n_layer"]), width=width, heads=heads, vocab=int(meta["vocab_size"]),
                     rope=components.get("rope"), rope_base=components.get("rope_base", 10000.0),
                     learned_positions=components.get("learned_positions", 0), sink=components.get("sink", False),
                     kv_heads=int(meta["n_kv_head"]), head_dim=int(meta["head_dim"]), mlp=meta["mlp"],
                     norm=meta["norm"], bias=meta["bias"] == "true", qk_norm=meta["qk_norm"] == "true",
                     tied=meta["tied_embeddings"] == "true")
    assert meta["mlp"] in ("gelu", "swiglu") and meta["norm"] in ("layernorm", "rmsnorm"), meta
    # Every tensor the reference reads must be there, and no bias where there should be none.
    assert cfg.bias == any(n.endswith(".bias") and ".attn." in n for n in weights), "biases differ from the metadata"
    if components.get("alibi"):
        slopes = torch.tensor(ref.alibi_slopes(heads), dtype=torch.float64)
        assert torch.equal(weights["posc.score_params.alibi_slope"].double(), slopes), "ALiBi slopes differ"
        cfg.alibi = slopes
    if components.get("decay"):
        # linspace(0.5, 0.05) over the heads; posc keeps score parameters in
        # float32 (a documented choice), so the reference rounds them the same way.
        rates = torch.tensor([0.5 + (0.05 - 0.5) * h / (heads - 1) for h in range(heads)], dtype=torch.float64)
        rates = rates.float().double()
        assert torch.equal(weights["posc.score_params.decay_rate"].double(), rates), "decay rates differ"
        cfg.decay = rates
    return cfg


def check(posc, name, scratch):
    example, flags, components = CONFIGS[name]
    t0 = time.time()
    dump, posc_losses, posc_final = run_posc(posc, name, example, flags, scratch)
    posc_seconds = time.time() - t0
    init, meta = ref.read_safetensors(os.path.join(dump, "init.safetensors"))
    batches = []
    for step in range(1, STEPS + 1):
        b, _ = ref.read_safetensors(os.path.join(dump, f"step_{step}.safetensors"))
        ref.check_additions(b["tokens"], components.get("padded_width", 0))
        mine = ref.channels_of(b["tokens"])
        assert torch.equal(b["channels"], mine), f"{name}: step {step}: posc's channels differ from the definitions"
        b["channels"] = mine
        batches.append(b)
    cfg = reference_config(meta, init, components)
    t0 = time.time()
    ref_losses, ref_final = ref.train(cfg, init, batches, dict(HP, **components.get("hp", {})))
    ref_seconds = time.time() - t0

    assert len(posc_losses) == STEPS, f"{name}: posc logged {len(posc_losses)} losses"
    loss_error = max(abs(a - b) for a, b in zip(posc_losses, ref_losses))
    worst_step = max(range(STEPS), key=lambda i: abs(posc_losses[i] - ref_losses[i])) + 1
    weight_error, worst_tensor = 0.0, ""
    for n, t in ref_final.items():
        e = (posc_final[n].double() - t).abs().max().item()
        if e > weight_error:
            weight_error, worst_tensor = e, n
    missing = [n for n in posc_final if not n.startswith("posc.") and n not in ref_final]
    ok = loss_error <= TOLERANCE and weight_error <= TOLERANCE and not missing and all(map(math.isfinite, ref_losses))
    print(f"{'ok  ' if ok else 'FAIL'} {name:30s} loss {posc_losses[0]:.6f} -> {posc_losses[-1]:.6f}  "
          f"max |loss diff| {loss_error:.2e} (step {worst_step})  max |weight diff| {weight_error:.2e} "
          f"({worst_tensor})  posc {posc_seconds:.1f}s, reference {ref_seconds:.1f}s")
    if missing:
        print(f"     tensors the reference does not have: {missing}")
    return ok


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    posc, scratch = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(CONFIGS)
    print(f"torch {torch.__version__}; {STEPS} steps, f64, one thread; tolerance {TOLERANCE:g}")
    results = [check(posc, n, scratch) for n in names]
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
