# An independent PyTorch peer for the 10-digit-addition leaderboard's small
# trained Qwen3-style adders: to tell, apart from posc's code, whether a
# recipe trains such a model to 99% on this machine, and which of the
# recipe's parts matter. It shares no code with posc; docs/reproduction.md
# ("Today's model blocks and AdderBoard's trained adders") records the runs.
#
#   /usr/bin/python3 tools/adder_peer.py [--seed S] [--steps N] [--lr LR]
#       [--width 4 --heads 2 --kv_heads 1 --head_dim 4 --ff 6 --rope_base 3]
#       [--format zeros|posc] [--operands values|lengths|ten]
#       [--bias_correction 0|1] [--wd 0.01] [--wd_scope all|matrices]
#       [--eos_loss 0|1] [--threads 1]
#
# The model, written from the definitions: token embedding N(0, 1/width)
# tied to the output; one pre-norm block of RMSNorm (eps 1e-6, a gain),
# attention with `heads` query heads on `kv_heads` key/value heads of
# `head_dim` (grouped-query), RMSNorm on each query and key head, then RoPE
# (pairs (i, i + head_dim/2), frequency base^(-2i/head_dim)) over the
# position; SwiGLU (down(silu(gate x) * up x)); a final RMSNorm. No biases.
# Affine weights start U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
#
# The data, two formats:
#   zeros  the leaderboard entries': 0, a's ten digits units first, 0, 0,
#          b's ten digits units first, 0; then the 11 sum digits units
#          first (vocabulary: the ten digits)
#   posc   posc's `order = padded_reversed`: a's ten digits units first, '+',
#          b's, '=', the 11 sum digits units first, <eos> (vocabulary 14)
# Operands: `values` uniform in 0..10^10-1 (the entries'), `lengths` each
# length 1..10 equally likely with a non-zero leading digit (posc's), `ten`
# exactly ten digits. The loss is the mean cross-entropy over the 11 sum
# digits (and the <eos> in the posc format when --eos_loss 1).
#
# The optimiser is AdamW as MLX defines it by default (the entries train
# with MLX): decoupled weight decay p <- p (1 - lr wd) on every tensor
# (--wd_scope all) and Adam's step lr m / (sqrt(v) + 1e-8) without bias
# correction (--bias_correction 0); --bias_correction 1 --wd_scope matrices
# is PyTorch's AdamW as posc uses it. Gradients are clipped to norm 1, the
# learning rate is constant.
#
# Scored like the leaderboard: greedy decoding of the 10 edge cases and
# 10,000 pairs of random.Random(2025), every --eval_every steps and at the end.
import argparse
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--seed", type=int, default=0)
p.add_argument("--steps", type=int, default=35000)
p.add_argument("--batch", type=int, default=128)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--width", type=int, default=4)
p.add_argument("--heads", type=int, default=2)
p.add_argument("--kv_heads", type=int, default=1)
p.add_argument("--head_dim", type=int, default=4)
p.add_argument("--ff", type=int, default=6)
p.add_argument("--rope_base", type=float, default=3.0)
p.add_argument("--format", choices=["zeros", "posc"], default="zeros")
p.add_argument("--operands", choices=["values", "lengths", "ten"], default="values")
p.add_argument("--bias_correction", type=int, default=0)
p.add_argument("--wd", type=float, default=0.01)
p.add_argument("--wd_scope", choices=["all", "matrices"], default="all")
p.add_argument("--eos_loss", type=int, default=1)
p.add_argument("--eval_every", type=int, default=5000)
p.add_argument("--threads", type=int, default=1)
args = p.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(args.seed)
data_rng = random.Random(args.seed)

DIGITS = 10
OUT = DIGITS + 1
PLUS, EQUALS, EOS = 10, 11, 12
VOCAB = 10 if args.format == "zeros" else 14


def digits_units_first(n, count):
    return [int(c) for c in reversed(f"{n:0{count}d}")]


def prompt(a, b):
    if args.format == "zeros":
        return [0] + digits_units_first(a, DIGITS) + [0, 0] + digits_units_first(b, DIGITS) + [0]
    return digits_units_first(a, DIGITS) + [PLUS] + digits_units_first(b, DIGITS) + [EQUALS]


def targets(a, b):
    t = digits_units_first(a + b, OUT)
    return t + [EOS] if args.format == "posc" else t


def operand():
    if args.operands == "values":
        return data_rng.randint(0, 10**DIGITS - 1)
    n = DIGITS if args.operands == "ten" else data_rng.randint(1, DIGITS)
    return data_rng.randint(10 ** (n - 1) if n > 1 else 0, 10**n - 1)


def batch():
    rows = []
    for _ in range(args.batch):
        a, b = operand(), operand()
        rows.append(prompt(a, b) + targets(a, b))
    return torch.tensor(rows)


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


def rope(x, base):
    # x: (batch, heads, T, head_dim); pairs (i, i + head_dim/2).
    t, d = x.shape[-2], x.shape[-1]
    freq = base ** (-torch.arange(0, d, 2, dtype=x.dtype) / d)
    angle = torch.arange(t, dtype=x.dtype)[:, None] * freq[None, :]
    cos, sin = angle.cos(), angle.sin()
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Adder(nn.Module):
    def __init__(self):
        super().__init__()
        w, h, g, hd, ff = args.width, args.heads, args.kv_heads, args.head_dim, args.ff
        self.embed = nn.Parameter(torch.randn(VOCAB, w) * math.sqrt(1.0 / w))
        self.norm_attn, self.norm_mlp, self.norm_out = RMSNorm(w), RMSNorm(w), RMSNorm(w)
        self.q = nn.Linear(w, h * hd, bias=False)
        self.k = nn.Linear(w, g * hd, bias=False)
        self.v = nn.Linear(w, g * hd, bias=False)
        self.o = nn.Linear(h * hd, w, bias=False)
        self.q_norm, self.k_norm = RMSNorm(hd), RMSNorm(hd)
        self.gate = nn.Linear(w, ff, bias=False)
        self.up = nn.Linear(w, ff, bias=False)
        self.down = nn.Linear(ff, w, bias=False)

    def forward(self, tokens):
        bsz, t = tokens.shape
        h, g, hd = args.heads, args.kv_heads, args.head_dim
        x = self.embed[tokens]
        y = self.norm_attn(x)
        q = self.q_norm(self.q(y).view(bsz, t, h, hd)).transpose(1, 2)
        k = self.k_norm(self.k(y).view(bsz, t, g, hd)).transpose(1, 2)
        v = self.v(y).view(bsz, t, g, hd).transpose(1, 2)
        q, k = rope(q, args.rope_base), rope(k, args.rope_base)
        k = k.repeat_interleave(h // g, dim=1)
        v = v.repeat_interleave(h // g, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        att = scores.masked_fill(causal, float("-inf")).softmax(-1)
        x = x + self.o((att @ v).transpose(1, 2).reshape(bsz, t, h * hd))
        y = self.norm_mlp(x)
        x = x + self.down(F.silu(self.gate(y)) * self.up(y))
        return self.norm_out(x) @ self.embed.t()


def leaderboard_cases():
    edge = [(0, 0), (0, 1), (9999999999, 0), (9999999999, 1), (9999999999, 9999999999),
            (5000000000, 5000000000), (1111111111, 8888888889), (1234567890, 9876543210),
            (9999999999, 9999999999), (1, 9999999999)]
    rng = random.Random(2025)
    return edge + [(rng.randint(0, 9999999999), rng.randint(0, 9999999999)) for _ in range(10000)]


CASES = leaderboard_cases()


@torch.no_grad()
def leaderboard_accuracy(model):
    seq = torch.tensor([prompt(a, b) for a, b in CASES])
    for _ in range(OUT):
        seq = torch.cat([seq, model(seq)[:, -1].argmax(-1, keepdim=True)], dim=1)
    want = torch.tensor([digits_units_first(a + b, OUT) for a, b in CASES])
    return (seq[:, -OUT:] == want).all(-1).double().mean().item()


model = Adder()
params = list(model.parameters())
unique = sum(t.numel() for t in params)
decayed = [t for n, t in model.named_parameters() if args.wd_scope == "all" or t.dim() >= 2]
state = {id(t): (torch.zeros_like(t), torch.zeros_like(t)) for t in params}
beta1, beta2, eps = 0.9, 0.999, 1e-8
prompt_len = len(prompt(0, 0))
answer_terms = OUT + (1 if args.format == "posc" and args.eos_loss else 0)
print(f"parameters {unique}; {vars(args)}", flush=True)
start = time.time()
for step in range(1, args.steps + 1):
    rows = batch()
    logits = model(rows[:, :-1])[:, prompt_len - 1: prompt_len - 1 + answer_terms]
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), rows[:, prompt_len: prompt_len + answer_terms].reshape(-1))
    for t in params:
        t.grad = None
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    with torch.no_grad():
        for t in params:
            m, v = state[id(t)]
            if any(t is d for d in decayed):
                t.mul_(1 - args.lr * args.wd)
            m.mul_(beta1).add_(t.grad, alpha=1 - beta1)
            v.mul_(beta2).addcmul_(t.grad, t.grad, value=1 - beta2)
            if args.bias_correction:
                mh, vh = m / (1 - beta1**step), v / (1 - beta2**step)
            else:
                mh, vh = m, v
            t.sub_(args.lr * mh / (vh.sqrt() + eps))
    if step % 1000 == 0:
        print(f"step {step} loss {loss.item():.4f} {time.time() - start:.0f}s", flush=True)
    if step % args.eval_every == 0 or step == args.steps:
        print(f"step {step} leaderboard {100 * leaderboard_accuracy(model):.2f}%", flush=True)
print(f"final seed {args.seed} parameters {unique} leaderboard {100 * leaderboard_accuracy(model):.2f}% "
      f"wall {time.time() - start:.0f}s", flush=True)
