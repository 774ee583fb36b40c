"""A posc-trained GPT in plain PyTorch: compatibility name for the posc package.

The model, its checkpoint reader and the attention paths live in the posc
package (python/posc, `pip install ./python`); this module re-exports them for
scripts that put tools/ on sys.path:

    from posc_model import PoscGPT, read_safetensors
    attention = posc.load_module("attention.py")        # posc emit flex FILE > attention.py
    model = PoscGPT.from_safetensors("runs/NAME/seed0/final.safetensors", attention)
    logits = model(tokens, channels)   # tokens (B, L) int64, channels (5, B, L) int64

The model computes in its weights' dtype (the checkpoint's; `.double()` or
`.float()` to change it).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from posc import PoscGPT, attention_path, load_module, read_safetensors, set_backend, sinusoidal  # noqa: E402,F401

__all__ = ["PoscGPT", "attention_path", "load_module", "read_safetensors", "set_backend", "sinusoidal"]
