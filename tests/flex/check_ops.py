"""Runs every operation as `posc emit flex` writes it, for tests/flex/ops_test.cpp.

usage: check_ops.py DIR

DIR holds one module per operation, <op>.py, written by posc's FlexAttention
emitter for the one-term formula op(s, b[h], c[h]) of a model with a head
per case, and cases.safetensors with the operands of every case of every
operation: <op>.a (the score), <op>.b and <op>.c (per-head parameters). The
score_mod is applied as FlexAttention defines it, elementwise, here to the
operands broadcast over the heads, and differentiated (the gradient of the
sum of its values) into the score and both parameters. Writes DIR/results.safetensors:
<op>.value, <op>.grad_a, <op>.grad_b and <op>.grad_c (0 where a parameter
is not read); posc compares them with its definition and its tensor path.
On PyTorch >= 2.5 the finite values are also read back through
torch.nn.attention.flex_attention itself, as the log-sum-exp of a
one-key attention, which must equal them.
"""
import importlib.util
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from posc_model import read_safetensors  # noqa: E402


def load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_safetensors(tensors, path):
    header, blobs, offset = {}, [], 0
    for name, t in sorted(tensors.items()):
        data = t.detach().to(torch.float64).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F64", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def run(mod, a, b, c):
    """The score_mod's values and gradients on the cases (one per head)."""
    H = a.numel()
    score = a.clone().view(1, H, 1, 1).requires_grad_()
    params = {"b": b.clone().requires_grad_(), "c": c.clone().requires_grad_()}
    channels = torch.zeros(len(mod.CHANNELS), 1, 1, dtype=torch.long)
    zero = torch.zeros(1, 1, 1, 1, dtype=torch.long)
    value = mod.make_score_mod(channels, params)(score, zero, torch.arange(H).view(1, H, 1, 1), zero, zero)
    value = value.expand(1, H, 1, 1).reshape(H)
    inputs = [score, params["b"], params["c"]]
    grads = [None] * 3
    if value.requires_grad:
        grads = torch.autograd.grad(value.sum(), inputs, allow_unused=True)
    grads = [torch.zeros(H, dtype=torch.float64) if g is None else g.reshape(H) for g in grads]
    return value, grads


def through_flex_attention(mod, a, b, c):
    """The values as flex_attention computes them (PyTorch >= 2.5; None
    before): one query and one key per head, whose score_mod reads the case's
    operand for the score, so the log-sum-exp over that one key is the value."""
    try:
        from torch.nn.attention.flex_attention import flex_attention
    except ImportError:
        return None
    H = a.numel()
    params = {"b": b, "c": c}
    channels = torch.zeros(len(mod.CHANNELS), 1, 1, dtype=torch.long)
    inner = mod.make_score_mod(channels, params)

    def score_mod(score, b_, h, q_idx, kv_idx):
        return inner(a[h], b_, h, q_idx, kv_idx)

    q = torch.zeros(1, H, 1, 16, dtype=torch.float64)
    _, lse = flex_attention(q, q, q, score_mod=score_mod, return_lse=True)
    return lse.reshape(H)


def main():
    folder = sys.argv[1]
    cases, _ = read_safetensors(os.path.join(folder, "cases.safetensors"))
    ops = sorted({name.split(".")[0] for name in cases})
    results, flex_checked, failed = {}, 0, False
    for op in ops:
        mod = load(os.path.join(folder, op + ".py"))
        a, b, c = (cases[f"{op}.{x}"] for x in "abc")
        value, grads = run(mod, a, b, c)
        results[f"{op}.value"] = value
        for x, g in zip("abc", grads):
            results[f"{op}.grad_{x}"] = g
        flex = through_flex_attention(mod, a, b, c)
        if flex is not None:
            finite = torch.isfinite(value)
            want, got = value[finite].detach(), flex[finite]
            if not torch.allclose(got, want, rtol=1e-15, atol=1e-15):
                print(f"{op}: flex_attention's values differ from the score_mod's by {(got - want).abs().max().item():.3g}")
                failed = True
            flex_checked += 1
    write_safetensors(results, os.path.join(folder, "results.safetensors"))
    print(f"{len(ops)} operations under torch {torch.__version__}")
    if flex_checked:
        print(f"{flex_checked} operations' finite values through flex_attention")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
