#!/usr/bin/env python3
"""posc's training step on a GPU against a Python PyTorch peer of the same model.

The peer is the study's model written the way a researcher would in PyTorch
2.x: a 6 x 384 GPT (6 heads, GELU MLP of 4x width, pre-norm LayerNorm, tied
embeddings), 2D RoPE (rows on the first half of each head's rotation pairs,
columns on the second half, interleaved pairs, base 10000), and the study's
multiplicative decay exp(-rate[h] * |column distance|) with separator keys
exempt, written as a FlexAttention `score_mod` with a causal block mask,
compiled with torch.compile, trained with fused AdamW (lr 5e-4, betas 0.9 /
0.99, weight decay 0.1) on batches of 64 addition problems of up to 10 digits
(34 tokens). posc trains examples/addition/rope2d_decay.pos with the same
settings (`posc run --device cuda`) and reports tokens/s in metrics.jsonl.

    python3 bench/gpu/step_bench.py --posc build-gpu/posc --out OUT
    python3 bench/gpu/step_bench.py --dense --device cpu --steps 3   # the model only, any PyTorch

Prints the peer's step time and tokens/s, posc's, and the ratio (posc step
time / peer step time; below 1 is faster). --dense applies the same score
function to dense scores instead of FlexAttention (the semantics FlexAttention
defines), for PyTorch builds without it; its timings are not the peer's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peer"))
from gpt import Peer, addition_batch, masked_loss  # noqa: E402  (the model shared with the CPU peer)


def peer_step_time(args):
    device = torch.device(args.device)
    gen = torch.Generator().manual_seed(0)
    model = Peer(dense=args.dense).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, betas=(0.9, 0.99), weight_decay=0.1,
                            **({"fused": True} if device.type == "cuda" else {}))
    step_model = model if args.dense or args.no_compile else torch.compile(model)
    batches = [addition_batch(64, 10, device, gen) for _ in range(8)]
    if not args.dense:
        from torch.nn.attention.flex_attention import create_block_mask
    times, tokens = [], []
    for i in range(args.warmup + args.steps):
        tok, targets, mask, row, col, kind = batches[i % len(batches)]
        if not args.dense:
            L = tok.shape[1]
            block_mask = create_block_mask(lambda b, h, q, k: q >= k, None, None, L, L, device=device)
            for blk in model.blocks:
                blk.attn.block_mask = block_mask
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
            logits = step_model(tok, row, col, kind)
        loss = masked_loss(logits, targets, mask)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
            tokens.append(tok.numel())
    step = statistics.median(times)
    return step, statistics.mean(tokens) / step, float(loss)


def posc_tokens_per_s(args):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [args.posc, "run", "examples/addition/rope2d_decay.pos", "--device", args.device, "--jit", "off",
               "--steps", str(args.posc_steps), "--set", "train.checkpoint_every=0", "--set", "train.log_every=10",
               "--set", "task.test_digits=[10]", "--set", "task.problems_per_length=9", "--no-progress",
               "--out", os.path.join(tmp, "run")]
        if args.bf16:
            cmd += ["--set", "model.precision=bf16_mixed"]
        subprocess.run(cmd, check=True, cwd=args.root, stdout=subprocess.DEVNULL)
        rates = [json.loads(l)["tokens_per_s"] for l in open(os.path.join(tmp, "run", "metrics.jsonl"))
                 if '"tokens_per_s"' in l]
    return statistics.median(rates[2:] or rates)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--posc", help="the posc binary (omit to time the peer only)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--posc-steps", type=int, default=300)
    p.add_argument("--bf16", action="store_true", help="bf16 autocast on both sides")
    p.add_argument("--dense", action="store_true", help="dense scores instead of FlexAttention")
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--out", help="folder for step_bench.json")
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    args = p.parse_args()
    name = torch.cuda.get_device_name() if args.device == "cuda" else args.device
    print(f"torch {torch.__version__} on {name}; {'dense scores' if args.dense else 'FlexAttention score_mod'}"
          f"{'' if args.dense or args.no_compile else ' + torch.compile'}{', bf16 autocast' if args.bf16 else ''}")
    step, peer_tps, loss = peer_step_time(args)
    print(f"peer: step {step * 1e3:.2f} ms, {peer_tps:,.0f} tokens/s (last loss {loss:.3f})")
    result = {"device": name, "torch": torch.__version__, "peer_step_ms": step * 1e3, "peer_tokens_per_s": peer_tps}
    if args.posc:
        posc_tps = posc_tokens_per_s(args)
        result.update(posc_tokens_per_s=posc_tps, ratio_tokens_per_s=posc_tps / peer_tps)
        print(f"posc: {posc_tps:,.0f} tokens/s; posc / peer tokens/s = {posc_tps / peer_tps:.2f} (target >= 1.0)")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "step_bench.json"), "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
