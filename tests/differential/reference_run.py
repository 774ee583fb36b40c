"""The reference model trained end to end by PyTorch alone: a control for
posc's comparisons of the position-only baselines.

check_training.py ties posc's training to PyTorch's for 50 steps from posc's
own weights and batches. This script asks the longer question: does a model
written with torch.nn, initialised by PyTorch's own module defaults, trained
on its own independently drawn stream of problems by torch.optim.AdamW, reach
the accuracy posc reports for the same recipe? Nothing here comes from posc:
the model is reference_gpt.forward (written from the papers), the weights are
drawn by nn.Linear / nn.Embedding / nn.LayerNorm, the problems by Python's
random module, and the test problems are this script's own.

The recipe is the addition study's mini preset with PyTorch's initialisation
and an untied head (docs/reproduction.md, "The position-only baselines and the
initial scale"): 2 layers, width 128, 4 heads, GELU MLP of 4x width,
LayerNorm, biases; each operand's length uniform in 1..10 digits (no leading
zero), digits units first; batch 64; AdamW lr 3e-3, betas (0.9, 0.99), eps
1e-8, weight decay 0.1 on matrices only, warm-up 200 steps into a cosine to
0.1 x lr, gradient clipping at 1; float32 on one thread. The loss covers the
answer digits and the end token. Evaluation: greedy decoding of N problems
per length whose two operands have exactly that many digits; exact match of
the answer and its end token.

    /usr/bin/python3 tests/differential/reference_run.py --encoding alibi_position \
        --seed 0 --steps 20000 [--json out.json]

Prints the loss every --log-every steps and the accuracy per length.
"""

import argparse
import json
import math
import os
import random
import sys
import time

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("skipped: this Python has no torch (Debian's python3-torch: tools/setup.sh)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_gpt as ref  # noqa: E402

ENCODINGS = {
    "nope": {},
    "rope_plain": {"rope": "position"},
    "learned_absolute": {"learned_positions": 1024},
    "alibi_position": {"alibi": True},
}


def pytorch_initialised_weights(cfg):
    """Weights under GPT names, each drawn by the torch.nn module that owns it
    in a model written with torch.nn (its reset_parameters: Linear weights and
    biases U(+-1/sqrt(fan_in)), Embedding N(0, 1), LayerNorm 1 and 0)."""
    W, F4 = cfg.width, 4 * cfg.width
    w = {}

    def take(prefix, module):
        for name, t in module.named_parameters():
            w[f"{prefix}.{name}"] = t.detach().clone()

    take("transformer.wte", nn.Embedding(cfg.vocab, W))
    if cfg.learned_positions:
        take("transformer.wpe", nn.Embedding(cfg.learned_positions, W))
    for layer in range(cfg.layers):
        p = f"transformer.h.{layer}"
        take(f"{p}.ln_1", nn.LayerNorm(W))
        take(f"{p}.attn.c_attn", nn.Linear(W, 3 * W))
        take(f"{p}.attn.c_proj", nn.Linear(W, W))
        take(f"{p}.ln_2", nn.LayerNorm(W))
        take(f"{p}.mlp.c_fc", nn.Linear(W, F4))
        take(f"{p}.mlp.c_proj", nn.Linear(F4, W))
    take("transformer.ln_f", nn.LayerNorm(W))
    w["lm_head.weight"] = nn.Linear(W, cfg.vocab, bias=False).weight.detach().clone()
    return w


def random_operand(length, rng):
    """Digits units first, the leading (last) digit nonzero unless length 1."""
    digits = [rng.randrange(10) for _ in range(length - 1)]
    digits.append(rng.randrange(10) if length == 1 else rng.randrange(1, 10))
    return digits


def value(digits):
    return sum(d * 10 ** i for i, d in enumerate(digits))


def problem_tokens(a, b):
    """(prompt, answer): a + b = as tokens, the sum units first and then the end token."""
    answer = [int(c) for c in reversed(str(value(a) + value(b)))]
    return a + [ref.PLUS] + b + [ref.EQUALS], answer + [ref.END]


def channels_of_rows(rows, length):
    """(5, B, L) channels by the definitions in reference_gpt.channels_of,
    computed on Python lists (channels_of itself checks the first batch)."""
    out = [[[0] * length for _ in rows] for _ in range(5)]
    for b, toks in enumerate(rows):
        row, place = 0, 0
        for t in range(length):
            tok = toks[t] if t < len(toks) else ref.PAD
            out[0][b][t] = t
            if tok < 10:
                place += 1
                out[1][b][t] = place
                out[3][b][t] = ref.DIGIT
            else:
                place = 0
                row = 1 if tok == ref.PLUS else 2 if tok == ref.EQUALS else row
                out[3][b][t] = ref.SEPARATOR if tok in (ref.PLUS, ref.EQUALS) else ref.SPECIAL
            out[2][b][t] = row
    return torch.tensor(out, dtype=torch.int64)


def training_batch(batch, max_digits, rng):
    """tokens, targets, loss mask and channels of `batch` fresh problems."""
    rows, prompts = [], []
    for _ in range(batch):
        prompt, answer = problem_tokens(random_operand(rng.randint(1, max_digits), rng),
                                        random_operand(rng.randint(1, max_digits), rng))
        rows.append(prompt + answer)
        prompts.append(len(prompt))
    L = max(map(len, rows))
    tokens = torch.full((batch, L), ref.PAD, dtype=torch.int64)
    targets = torch.full((batch, L), ref.PAD, dtype=torch.int64)
    mask = torch.zeros(batch, L)
    for i, (toks, p) in enumerate(zip(rows, prompts)):
        tokens[i, :len(toks)] = torch.tensor(toks)
        targets[i, :len(toks) - 1] = torch.tensor(toks[1:])
        mask[i, p - 1:len(toks) - 1] = 1.0  # '=' predicts the first answer digit; the last digit the end
    return tokens, targets, mask, channels_of_rows(rows, L)


@torch.no_grad()
def exact_match(cfg, w, digits, problems, rng):
    """Percent of `problems` greedy answers that equal the sum and its end
    token, both operands of exactly `digits` digits."""
    cases = [problem_tokens(random_operand(digits, rng), random_operand(digits, rng)) for _ in range(problems)]
    tokens = torch.tensor([c[0] for c in cases], dtype=torch.int64)
    expected = [c[1] for c in cases]
    longest = max(map(len, expected))
    for _ in range(longest):
        logits = ref.forward(cfg, w, tokens, channels_of_rows(tokens.tolist(), tokens.shape[1]))
        tokens = torch.cat([tokens, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    right = 0
    for row, want in zip(tokens[:, -longest:].tolist(), expected):
        right += row[:len(want)] == want
    return 100.0 * right / problems


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--encoding", choices=sorted(ENCODINGS), required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--max-digits", type=int, default=10)
    p.add_argument("--test-digits", default="5,10,15,20")
    p.add_argument("--problems", type=int, default=90)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--log-every", type=int, default=500)
    p.add_argument("--json", help="write the result (settings, losses, accuracy, seconds) here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    components = ENCODINGS[args.encoding]
    cfg = ref.Config(layers=2, width=128, heads=4, vocab=14, rope=components.get("rope"),
                     learned_positions=components.get("learned_positions", 0), tied=False)
    if components.get("alibi"):
        cfg.alibi = torch.tensor(ref.alibi_slopes(cfg.heads), dtype=torch.float32)
    hp = {"lr": 3e-3, "warmup": 200, "min_lr_ratio": 0.1, "weight_decay": 0.1, "betas": (0.9, 0.99),
          "eps": 1e-8, "grad_clip": 1.0, "batch": 64}
    params = {n: t.requires_grad_(True) for n, t in pytorch_initialised_weights(cfg).items()}
    groups = [{"params": [t for t in params.values() if t.dim() >= 2], "weight_decay": hp["weight_decay"]},
              {"params": [t for t in params.values() if t.dim() < 2], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=hp["lr"], betas=hp["betas"], eps=hp["eps"])
    train_rng, test_rng = random.Random(args.seed), random.Random(10_000 + args.seed)

    first = training_batch(4, args.max_digits, random.Random(-1))
    ref.check_additions(first[0])
    assert torch.equal(first[3], ref.channels_of(first[0])), "channels differ from reference_gpt.channels_of"

    start, losses = time.time(), []
    for step in range(args.steps):
        lr = ref.learning_rate(step, args.steps, hp["lr"], hp["warmup"], hp["min_lr_ratio"])
        for g in optimizer.param_groups:
            g["lr"] = lr
        tokens, targets, mask, channels = training_batch(hp["batch"], args.max_digits, train_rng)
        optimizer.zero_grad(set_to_none=True)
        loss = ref.loss_of(ref.forward(cfg, params, tokens, channels), targets, mask)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), hp["grad_clip"])
        optimizer.step()
        losses.append(loss.item())
        if (step + 1) % args.log_every == 0 or step + 1 == args.steps:
            recent = losses[-args.log_every:]
            print(f"step {step + 1:6d}  loss {sum(recent) / len(recent):.4g}  lr {lr:.3g}  "
                  f"{time.time() - start:.0f} s", flush=True)
    train_seconds = time.time() - start
    weights = {n: t.detach() for n, t in params.items()}
    accuracy = {d: exact_match(cfg, weights, d, args.problems, test_rng)
                for d in map(int, args.test_digits.split(","))}
    print(f"reference {args.encoding} seed {args.seed}, {args.steps} steps ({train_seconds / 60:.1f} min, "
          f"torch {torch.__version__}): final loss {sum(losses[-100:]) / len(losses[-100:]):.4g}; exact match "
          + ", ".join(f"{a:.1f}% at {d}" for d, a in accuracy.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"encoding": args.encoding, "seed": args.seed, "steps": args.steps, "hp": hp,
                       "torch": torch.__version__, "train_seconds": train_seconds,
                       "final_loss": sum(losses[-100:]) / len(losses[-100:]),
                       "losses_every_100": losses[::100], "exact_match": accuracy}, f, indent=1)


if __name__ == "__main__":
    main()
