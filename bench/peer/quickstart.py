#!/usr/bin/env python3
"""The quick start (examples/quickstart.pos) as a researcher would write it in
plain PyTorch: the peer model of bench/peer/gpt.py at the small size (2 layers
x 64, 4 heads, 2D RoPE + the column decay with separator keys exempt), trained
2,000 steps on fresh batches of 64 problems of 1 to 5 digits with AdamW
(lr 3e-3, betas 0.9/0.99, weight decay 0.1 on matrices), 100 warm-up steps, a
cosine schedule to a tenth of the rate and clipping at 1.0; then greedy
decoding of 90 problems at each of 3, 5, 6, 8 and 10 digits, recomputing the
whole sequence for every emitted token (no cache), scored by exact match.

    python3 bench/peer/quickstart.py [--threads 1] [--steps 2000] [--json]

Prints the wall time of the whole script's work (training, then evaluation)
and the accuracy per length; --json prints one JSON line instead.
bench/cpu_speed.py times it against `posc run examples/quickstart.pos`.
"""
import argparse
import json
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import EOS, EQUALS, PLUS, SEP, Peer, addition_batch, masked_loss  # noqa: E402

TEST_DIGITS = [3, 5, 6, 8, 10]
PROBLEMS = 90


def learning_rate(step, steps, lr=3e-3, warmup=100, min_ratio=0.1):
    if step < warmup:
        return lr * (step + 1) / warmup
    p = min(1.0, max(0.0, (step - warmup) / max(1, steps - 1 - warmup)))
    return lr * min_ratio + (lr - lr * min_ratio) * 0.5 * (1 + math.cos(math.pi * p))


def train(model, steps, generator):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=3e-3, betas=(0.9, 0.99), eps=1e-8)
    model.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, steps)
        tokens, targets, mask, row, col, kind = addition_batch(64, 5, torch.device("cpu"), generator)
        loss = masked_loss(model(tokens, row, col, kind), targets, mask)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return float(loss)


def test_problems(digits, generator):
    """(prompt tokens, rows, columns, kinds) of PROBLEMS problems with both
    operands exactly `digits` long, and their answers (reversed sum digits)."""
    prompts, answers = [], []
    for _ in range(PROBLEMS):
        operands = []
        for _ in range(2):
            lead = int(torch.randint(1, 10, (1,), generator=generator))
            rest = torch.randint(0, 10, (digits - 1,), generator=generator).tolist()
            operands.append(list(reversed([lead] + rest)))  # units first
        toks, row, col, kind = [], [], [], []
        for r, ds in enumerate(operands):
            toks += ds + [PLUS if r == 0 else EQUALS]
            row += [r] * (len(ds) + 1)
            col += list(range(len(ds))) + [0]
            kind += [0] * len(ds) + [SEP]
        value = sum(sum(d * 10**i for i, d in enumerate(ds)) for ds in operands)
        prompts.append((toks, row, col, kind))
        answers.append([int(c) for c in reversed(str(value))])
    return prompts, answers


@torch.no_grad()
def greedy_accuracy(model, digits, generator):
    model.eval()
    prompts, answers = test_problems(digits, generator)
    tokens, row, col, kind = (torch.tensor([p[i] for p in prompts]) for i in range(4))
    budget = digits + 2  # the longest answer and <eos>
    emitted = []
    for i in range(budget):
        nxt = model(tokens, row, col, kind)[:, -1].argmax(-1)
        emitted.append(nxt)
        b = tokens.size(0)
        tokens = torch.cat([tokens, nxt[:, None]], 1)
        row = torch.cat([row, torch.full((b, 1), 2)], 1)
        col = torch.cat([col, torch.full((b, 1), i)], 1)
        kind = torch.cat([kind, torch.where(nxt[:, None] == EOS, 2, 0)], 1)
    out = torch.stack(emitted, 1).tolist()
    correct = 0
    for got, want in zip(out, answers):
        end = got.index(EOS) if EOS in got else len(got)
        correct += got[:end] == want
    return 100.0 * correct / len(answers)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    t0 = time.perf_counter()
    model = Peer(2, 64, 4, "rope2d_decay")
    loss = train(model, args.steps, generator)
    t_train = time.perf_counter() - t0
    accuracy = {d: greedy_accuracy(model, d, generator) for d in TEST_DIGITS}
    total = time.perf_counter() - t0
    if args.json:
        print(json.dumps({"seconds": total, "train_seconds": t_train, "final_loss": loss,
                          "accuracy": accuracy, "threads": args.threads, "torch": torch.__version__}))
    else:
        shown = ", ".join(f"{d} digits {a:.1f}%" for d, a in accuracy.items())
        print(f"peer quick start: {total:.1f} s ({t_train:.1f} s training), final loss {loss:.3f}; {shown}")


if __name__ == "__main__":
    sys.exit(main())
