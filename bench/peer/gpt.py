#!/usr/bin/env python3
"""The Python peer of posc's benchmarks: the same GPT written as a researcher
would in plain PyTorch, on the same LibTorch build and the same BLAS.

Model (as posc builds it from bench/step_plan.h): pre-norm LayerNorm blocks,
one fused qkv Linear with bias, GELU MLP of 4x width, tied embeddings,
GPT-2's initialisation. Encodings:
  nope          no positional component;
  rope2d        rows on the first half of each head's rotation pairs, columns
                on the second half (interleaved pairs, base 10000, the ladder
                restarted over each half);
  rope2d_decay  2D RoPE and the study's decay s * exp(-rate[h] |column
                distance|), separator keys exempt, rates linspace(0.5, 0.05).
Scores are dense with an explicit causal mask (PyTorch 1.13 has no fused
attention on CPU); under PyTorch 2.x, --compile torch.compiles the model
(inductor's CPU kernels; every batch runs once before timing, so compiles are
not timed). FlexAttention's score_mod is used on GPUs only (bench/gpu/):
PyTorch 2.15's flex_attention has no backward on the CPU, compiled or not
("FlexAttention does not support backward on CPU").
Batches: 64 addition problems of 1 to 10 digits laid out as posc lays them out
(operands, separators, reversed sum, end), every row the whole sequence.

    python3 bench/peer/gpt.py --size study --steps 10            # one step's time
    python3 bench/peer/gpt.py --size study --trace peer.json     # a profile
    .venv-torch/bin/python bench/peer/gpt.py --size study --compile   # PyTorch 2.x, compiled

Prints the median step time and tokens/s (tokens = batch x sequence length,
as posc counts them); --json prints one JSON line instead. Batches are made
before timing, so the peer's figure excludes data generation (posc's
includes it): the comparison favours the peer.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SEP = 1  # token kinds: 0 digit, 1 separator ('+', '='), 2 end
DIGITS, PLUS, EQUALS, EOS, PAD = 10, 10, 11, 12, 13
VOCAB = 14
SIZES = {"small": (2, 64, 4), "study": (6, 384, 6)}  # layers, width, heads


def addition_batch(batch, max_digits, device, generator):
    """(tokens, targets, mask, row, col, kind), each (batch, L): operand a
    (row 0), '+', operand b (row 1), '=', reversed sum (row 2), end; column =
    place. Targets are the next token; the loss covers the answer and end."""
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
        prompt = len(toks)
        toks += s + [EOS]
        row += [2] * (len(s) + 1)
        col += list(range(len(s))) + [len(s)]
        kind += [0] * len(s) + [2]
        seqs.append((toks, row, col, kind, prompt))
    length = max(len(q[0]) for q in seqs)
    tokens = torch.full((batch, length), PAD, dtype=torch.long)
    targets = torch.full((batch, length), PAD, dtype=torch.long)
    mask = torch.zeros(batch, length)
    chans = torch.zeros(3, batch, length, dtype=torch.long)
    for i, (toks, row, col, kind, prompt) in enumerate(seqs):
        n = len(toks)
        tokens[i, :n] = torch.tensor(toks)
        targets[i, : n - 1] = torch.tensor(toks[1:])
        mask[i, prompt - 1 : n - 1] = 1
        for c, values in enumerate((row, col, kind)):
            chans[c, i, :n] = torch.tensor(values)
    return [t.to(device) for t in (tokens, targets, mask, chans[0], chans[1], chans[2])]


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
    def __init__(self, width, heads, rates, dense=True):
        super().__init__()
        self.heads, self.head_dim, self.dense = heads, width // heads, dense
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.register_buffer("rate", None if rates is None else torch.tensor(rates, dtype=torch.float32))
        self.block_mask = None  # FlexAttention's, set per batch by bench/gpu/step_bench.py

    def forward(self, x, cos, sin, col, kind):
        B, L, W = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if cos is not None:
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        rate = self.rate

        def decay(score, b, h, q_idx, kv_idx):
            dcol = (col[b, q_idx] - col[b, kv_idx]).abs().to(score.dtype)
            decayed = score * torch.exp(-rate[h] * dcol)
            return torch.where(kind[b, kv_idx] == SEP, score, decayed)

        if self.dense:
            s = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
            qi = torch.arange(L, device=x.device)[None, None, :, None]
            ki = torch.arange(L, device=x.device)[None, None, None, :]
            if rate is not None:
                b = torch.arange(B, device=x.device)[:, None, None, None]
                h = torch.arange(self.heads, device=x.device)[None, :, None, None]
                s = decay(s, b, h, qi, ki)
            y = s.float().masked_fill(ki > qi, float("-inf")).softmax(-1).to(v.dtype) @ v
        else:
            from torch.nn.attention.flex_attention import flex_attention

            y = flex_attention(q, k, v, score_mod=decay if rate is not None else None,
                               block_mask=self.block_mask)
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
    def __init__(self, layers=6, width=384, heads=6, encoding="rope2d_decay", dense=True):
        super().__init__()
        rates = None
        if encoding == "rope2d_decay":
            rates = [0.5 + (0.05 - 0.5) * h / max(1, heads - 1) for h in range(heads)]
        self.rope = encoding != "nope"
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
        cos = sin = None
        if self.rope:
            angles = rope_angles(row, col, self.head_dim)[:, None]  # (B, 1, L, P)
            cos, sin = angles.cos(), angles.sin()
        x = self.tok(tokens)
        for blk in self.blocks:
            x = blk(x, cos, sin, col, kind)
        return self.ln_f(x) @ self.tok.weight.T


def masked_loss(logits, targets, mask):
    nll = F.cross_entropy(logits.float().reshape(-1, VOCAB), targets.reshape(-1), reduction="none")
    m = mask.reshape(-1)
    return (nll * m).sum() / m.sum().clamp_min(1.0)


def train_step(model, opt, batch, bf16=False, step_model=None):
    """One AdamW step; step_model (a compiled model) runs the forward pass."""
    tokens, targets, mask, row, col, kind = batch
    with torch.autocast(tokens.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = (model if step_model is None else step_model)(tokens, row, col, kind)
    loss = masked_loss(logits, targets, mask)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss


def cpu_step_time(size, encoding, steps, warmup, bf16=False, trace=None, compile_model=False):
    """Median seconds per training step and tokens per second on the CPU."""
    layers, width, heads = SIZES[size]
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = Peer(layers, width, heads, encoding)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batches = [addition_batch(64, 10, torch.device("cpu"), gen) for _ in range(8)]
    step_model = torch.compile(model) if compile_model else model
    times, tokens = [], []
    # Every batch once before timing when compiled: each new length compiles.
    for i in range(max(warmup, len(batches) if compile_model else 0)):
        train_step(model, opt, batches[i % len(batches)], bf16, step_model)
    profiler = torch.autograd.profiler.profile() if trace else None
    if profiler:
        profiler.__enter__()
    for i in range(steps):
        batch = batches[i % len(batches)]
        t0 = time.perf_counter()
        with torch.autograd.profiler.record_function("step"):
            train_step(model, opt, batch, bf16, step_model)
        times.append(time.perf_counter() - t0)
        tokens.append(batch[0].numel())
    if profiler:
        profiler.__exit__(None, None, None)
        profiler.export_chrome_trace(trace)
    step = statistics.median(times)
    return step, statistics.mean(tokens) / step


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=sorted(SIZES), default="study")
    p.add_argument("--encoding", choices=["nope", "rope2d", "rope2d_decay"], default="rope2d_decay")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (parameters stay float32)")
    p.add_argument("--trace", help="write a Chrome trace of the timed steps")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch 2.x)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    step, tps = cpu_step_time(args.size, args.encoding, args.steps, args.warmup, args.bf16, args.trace,
                              args.compile)
    how = "compiled" if args.compile else "eager"
    if args.json:
        print(json.dumps({"size": args.size, "encoding": args.encoding, "threads": args.threads,
                          "bf16": args.bf16, "step_ms": step * 1e3, "tokens_per_s": tps,
                          "torch": torch.__version__, "attention": how}))
    else:
        print(f"peer {args.size}/{args.encoding} ({how}): step {step * 1e3:.1f} ms, {tps:,.0f} tokens/s "
              f"(torch {torch.__version__}, {args.threads} thread(s){', bf16' if args.bf16 else ''})")


if __name__ == "__main__":
    sys.exit(main())
