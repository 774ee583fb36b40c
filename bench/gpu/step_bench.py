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
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SEP, EQ_ROWS = 1, 3  # token kinds: 0 digit, 1 separator ('+', '='), 2 end
DIGITS, PLUS, EQUALS, EOS = 10, 10, 11, 12
VOCAB = 13


def addition_batch(batch, max_digits, device, generator):
    """Random problems laid out like posc's reversed-order addition: operand a
    (row 0), '+', operand b (row 1), '=', answer (row 2), end; column = place."""
    seqs = []
    for _ in range(batch):
        na = int(torch.randint(1, max_digits + 1, (1,), generator=generator))
        nb = int(torch.randint(1, max_digits + 1, (1,), generator=generator))
        a = torch.randint(0, 10, (na,), generator=generator).tolist()
        b = torch.randint(0, 10, (nb,), generator=generator).tolist()
        va = sum(d * 10**i for i, d in enumerate(a))
        vb = sum(d * 10**i for i, d in enumerate(b))
        s = [int(c) for c in reversed(str(va + vb))]
        toks, row, col, kind = [], [], [], []
        for r, digits in enumerate((a, b)):
            toks += digits
            row += [r] * len(digits)
            col += list(range(len(digits)))
            kind += [0] * len(digits)
            toks.append(PLUS if r == 0 else EQUALS)
            row.append(r)
            col.append(0)
            kind.append(SEP)
        toks += s + [EOS]
        row += [2] * (len(s) + 1)
        col += list(range(len(s))) + [len(s)]
        kind += [0] * len(s) + [2]
        seqs.append((toks, row, col, kind))
    length = max(len(q[0]) for q in seqs)
    out = torch.zeros(4, batch, length, dtype=torch.long)
    for i, q in enumerate(seqs):
        for c in range(4):
            out[c, i, : len(q[c])] = torch.tensor(q[c])
    return [t.to(device) for t in out]


def rope_angles(row, col, head_dim, base=10000.0):
    """(B, L, P) angles: pairs [0, P/2) turn by row, [P/2, P) by column, each
    with the RoPE ladder base^(-i/n) restarted over its own n = P/2 pairs."""
    pairs = head_dim // 2
    n = pairs // 2
    ladder = base ** (-torch.arange(n, dtype=torch.float64, device=row.device) / n)
    a_row = row.double()[..., None] * ladder
    a_col = col.double()[..., None] * ladder
    return torch.cat([a_row, a_col], dim=-1).float()


def rotate(x, cos, sin):
    """Interleaved pairs (x0, x1) of the last dimension, as posc rotates them."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, width, heads, rates, dense):
        super().__init__()
        self.heads, self.head_dim, self.dense = heads, width // heads, dense
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.register_buffer("rate", torch.tensor(rates, dtype=torch.float32))

    def forward(self, x, cos, sin, col, kind):
        B, L, W = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        rate = self.rate

        def decay(score, b, h, q_idx, kv_idx):
            dcol = (col[b, q_idx] - col[b, kv_idx]).abs().to(score.dtype)
            decayed = score * torch.exp(-rate[h] * dcol)
            return torch.where(kind[b, kv_idx] == SEP, score, decayed)

        if self.dense:
            s = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
            b = torch.arange(B, device=x.device)[:, None, None, None]
            h = torch.arange(self.heads, device=x.device)[None, :, None, None]
            qi = torch.arange(L, device=x.device)[None, None, :, None]
            ki = torch.arange(L, device=x.device)[None, None, None, :]
            s = decay(s, b, h, qi, ki).masked_fill(ki > qi, float("-inf"))
            y = s.softmax(-1) @ v
        else:
            y = flex_attention(q, k, v, score_mod=decay, block_mask=self.block_mask)
        return self.out(y.transpose(1, 2).reshape(B, L, W))


class Block(nn.Module):
    def __init__(self, width, heads, rates, dense):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = Attention(width, heads, rates, dense)
        self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x, cos, sin, col, kind):
        x = x + self.attn(self.ln1(x), cos, sin, col, kind)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Peer(nn.Module):
    def __init__(self, layers=6, width=384, heads=6, dense=False):
        super().__init__()
        rates = [0.5 + (0.05 - 0.5) * h / (heads - 1) for h in range(heads)]  # linspace(0.5, 0.05)
        self.tok = nn.Embedding(VOCAB, width)
        self.blocks = nn.ModuleList(Block(width, heads, rates, dense) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head_dim = width // heads
        for m in self.modules():  # GPT-2's initialisation
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, tokens, row, col, kind):
        angles = rope_angles(row, col, self.head_dim)[:, None]  # (B, 1, L, P)
        cos, sin = angles.cos(), angles.sin()
        x = self.tok(tokens)
        for blk in self.blocks:
            x = blk(x, cos, sin, col, kind)
        return self.ln_f(x) @ self.tok.weight.T


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
        tok, row, col, kind = batches[i % len(batches)]
        if not args.dense:
            L = tok.shape[1]
            mask = create_block_mask(lambda b, h, q, k: q >= k, None, None, L, L, device=device)
            for blk in model.blocks:
                blk.attn.block_mask = mask
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
            logits = step_model(tok[:, :-1], row[:, :-1], col[:, :-1], kind[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), tok[:, 1:].reshape(-1))
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
    global flex_attention
    if not args.dense:
        from torch.nn.attention.flex_attention import flex_attention
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
