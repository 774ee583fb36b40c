"""Applies a module written by `posc emit flex` to posc's scores and compares.

usage: check_score_mod.py MODULE.py DATA.safetensors TOLERANCE [MODULE DATA TOLERANCE ...]

DATA holds what posc computed for one experiment (tests/flex/flex_test.cpp):
`scores` (B, H, L, L) before the score terms, `channels` (5, B, L), the score
parameters as `param.<name>`, and `expected`: posc's attention probabilities
after the score terms and the causal mask. The score_mod is applied
elementwise as FlexAttention defines it - here to the dense score tensor, with
b, h, q_idx and kv_idx broadcast over it (this PyTorch may predate
flex_attention) - then mask_mod and a softmax over the keys; on PyTorch >= 2.5
also through flex_attention itself. Also applies
apply_rotary to random queries and keys against posc's rotated ones when DATA
has `q`, `k`, `q_rotated`, `k_rotated`. Prints the largest differences of
every case (several in one process: torch is imported once), then
"checked N cases, M through flex_attention"; exits 1 when a difference
exceeds its TOLERANCE.
"""
import importlib.util
import os
import sys

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from posc import read_safetensors  # noqa: E402
from cases import run_cases  # noqa: E402


def flex_probabilities(mod, scores, channels, params):
    """The same probabilities through torch.nn.attention.flex_attention
    itself (PyTorch >= 2.5; None before): queries and keys of zeros, a
    score_mod that reads posc's score for (b, h, q_idx, kv_idx) before the
    emitted one, and the identity as values, so that the output is the
    attention matrix."""
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError:
        return None
    B, H, L, _ = scores.shape
    inner = mod.make_score_mod(channels, params)

    def score_mod(score, b, h, q_idx, kv_idx):
        return inner(scores[b, h, q_idx, kv_idx], b, h, q_idx, kv_idx)

    zeros = torch.zeros(B, H, L, L, dtype=scores.dtype)
    identity = torch.eye(L, dtype=scores.dtype).expand(B, H, L, L).contiguous()
    mask = create_block_mask(mod.mask_mod, B, H, L, L, device="cpu")
    return flex_attention(zeros, zeros, identity, score_mod=score_mod, block_mask=mask)


def check(module_path, data_path, tolerance):
    """One case: True when it passes; and whether it ran through flex_attention."""
    print(f"== {os.path.basename(module_path)} on {os.path.basename(data_path)}")
    spec = importlib.util.spec_from_file_location("emitted", module_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    data, _ = read_safetensors(data_path)
    scores, channels = data["scores"], data["channels"]
    params = {k[len("param."):]: v for k, v in data.items() if k.startswith("param.")}
    if set(params) != set(mod.initial_params()):
        print(f"parameter names differ: posc {sorted(params)}, module {sorted(mod.initial_params())}")
        return False, False
    B, H, L, _ = scores.shape
    b = torch.arange(B).view(B, 1, 1, 1)
    h = torch.arange(H).view(1, H, 1, 1)
    q_idx = torch.arange(L).view(1, 1, L, 1)
    kv_idx = torch.arange(L).view(1, 1, 1, L)
    score_mod = mod.make_score_mod(channels, params)
    modified = score_mod(scores, b, h, q_idx, kv_idx).expand(B, H, L, L)
    mask = mod.mask_mod(b, h, q_idx, kv_idx).expand(B, H, L, L)
    probabilities = torch.softmax(modified.masked_fill(~mask, -torch.inf), dim=-1)
    worst = (probabilities - data["expected"]).abs().max().item()
    print(f"largest probability difference {worst:.3g} ({scores.dtype})")
    failed = not worst <= tolerance
    through_flex = flex_probabilities(mod, scores, channels, params)
    if through_flex is not None:
        err = (through_flex - data["expected"]).abs().max().item()
        print(f"through flex_attention (torch {torch.__version__}): largest probability difference {err:.3g}")
        failed = failed or not err <= tolerance
    if "q" in data:
        q, k = mod.apply_rotary(data["q"], data["k"], channels)
        for name, got, want in (("query", q, data["q_rotated"]), ("key", k, data["k_rotated"])):
            err = (got - want).abs().max().item()
            print(f"largest rotated {name} difference {err:.3g}")
            failed = failed or not err <= tolerance * (1 + want.abs().max().item())
    return not failed, through_flex is not None


def main():
    return run_cases(sys.argv[1:], 3, lambda m, d, t: check(m, d, float(t)), __doc__)


if __name__ == "__main__":
    sys.exit(main())
