"""Runs a posc checkpoint in plain PyTorch (the posc package, python/posc) and compares.

usage: check_model.py MODULE.py MODEL.safetensors DATA.safetensors TOLERANCE [MODULE MODEL DATA TOLERANCE ...]

MODULE is the experiment's `posc emit flex` module, MODEL the checkpoint posc
wrote, DATA `tokens` (B, L), `channels` (5, B, L) and posc's `logits`
(B, L, vocab) for them. Several cases run in one process (torch is imported
once). Prints each case's largest logit difference, then "checked N cases,
M through flex_attention"; exits 1 when a difference exceeds its TOLERANCE
or the greedy choice (argmax) differs anywhere.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import torch  # noqa: E402
from posc import PoscGPT, attention_path, load_module, read_safetensors, set_backend  # noqa: E402
from cases import run_cases  # noqa: E402


def check(module_path, model_path, data_path, tolerance):
    """One case: whether it passes, and whether it ran through flex_attention."""
    print(f"== {os.path.basename(model_path)}")
    data, _ = read_safetensors(data_path)
    expected = data["logits"]
    model = PoscGPT.from_safetensors(model_path, load_module(module_path)).to(expected.dtype)
    with torch.no_grad():
        logits = model(data["tokens"], data["channels"])
    worst = (logits - expected).abs().max().item()
    same = bool((logits.argmax(-1) == expected.argmax(-1)).all())
    print(f"attention through {attention_path()} (torch {torch.__version__})")
    print(f"largest logit difference {worst:.3g} ({expected.dtype}); same greedy choices: {same}")
    return worst <= tolerance and same, "flex_attention" in attention_path()


def main():
    set_backend("flex")  # flex_attention itself wherever this PyTorch has it
    return run_cases(sys.argv[1:], 4, lambda m, w, d, t: check(m, w, d, float(t)), __doc__)


if __name__ == "__main__":
    sys.exit(main())
