"""Runs a posc checkpoint in plain PyTorch (the posc package, python/posc) and compares.

usage: check_model.py MODULE.py MODEL.safetensors DATA.safetensors TOLERANCE

MODULE is the experiment's `posc emit flex` module, MODEL the checkpoint posc
wrote, DATA `tokens` (B, L), `channels` (5, B, L) and posc's `logits`
(B, L, vocab) for them. Exits 1 when the largest logit difference exceeds
TOLERANCE or the greedy choice (argmax) differs anywhere.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import torch  # noqa: E402
from posc import PoscGPT, attention_path, load_module, read_safetensors, set_backend  # noqa: E402


def main():
    module_path, model_path, data_path, tolerance = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    set_backend("flex")  # flex_attention itself wherever this PyTorch has it
    data, _ = read_safetensors(data_path)
    expected = data["logits"]
    model = PoscGPT.from_safetensors(model_path, load_module(module_path)).to(expected.dtype)
    with torch.no_grad():
        logits = model(data["tokens"], data["channels"])
    worst = (logits - expected).abs().max().item()
    same = bool((logits.argmax(-1) == expected.argmax(-1)).all())
    print(f"attention through {attention_path()} (torch {torch.__version__})")
    print(f"largest logit difference {worst:.3g} ({expected.dtype}); same greedy choices: {same}")
    return 0 if worst <= tolerance and same else 1


if __name__ == "__main__":
    sys.exit(main())
