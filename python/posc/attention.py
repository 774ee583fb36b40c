"""An experiment's attention functions, as ``posc emit flex`` writes them.

posc lowers a ``.pos`` file's positional components to a Python module
(``posc emit flex FILE [--preset P] > attention.py``): ``apply_rotary(q, k,
channels)`` (rotations and key zeroing), ``make_score_mod(channels,
params)`` (the chain of score terms, a FlexAttention score_mod),
``mask_mod`` (causal), ``EMBEDDINGS`` (absolute tables added to the token
embedding) and ``initial_params()``. This module loads such a module and
runs one attention step with it: through
``torch.nn.attention.flex_attention`` on PyTorch >= 2.5, or by applying the
functions to the dense score tensor, which is FlexAttention's definition.

Which one runs is ``set_backend``'s choice: "auto" (the default) takes
flex_attention on a GPU, or where POSC_FLEX_COMPILE=1 compiles it, and the
dense tensor on the CPU, where eager flex_attention is unfused (about 12x
slower on posc's small models, measured on 2 CPU cores); "flex" takes it
wherever it exists; "dense" never. The dense path also serves PyTorch 1.13,
gradients (flex_attention has no CPU backward; the dense path is exact on
every device) and hooks that read the probabilities.
"""
import importlib.util
import math
import os
import subprocess

import torch

_FLEX = None  # (flex_attention, create_block_mask) once looked up; False without them
_BACKEND = "auto"


def set_backend(name):
    """"auto", "flex" or "dense" (see the module docstring)."""
    global _BACKEND
    if name not in ("auto", "flex", "dense"):
        raise ValueError(f"attention backend {name!r}: auto, flex or dense")
    _BACKEND = name


def _flex():
    """FlexAttention's functions on PyTorch >= 2.5, else None. With
    POSC_FLEX_COMPILE=1, flex_attention is torch.compile'd (a fused kernel;
    on the CPU this needs a C++ compiler)."""
    global _FLEX
    if _FLEX is None:
        try:
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention
            if os.environ.get("POSC_FLEX_COMPILE") == "1":
                flex_attention = torch.compile(flex_attention)
            _FLEX = (flex_attention, create_block_mask)
        except ImportError:
            _FLEX = False
    return _FLEX or None


def _compiled():
    return os.environ.get("POSC_FLEX_COMPILE") == "1"


def attention_path(device="cpu"):
    """How attention runs on `device` without gradients or probability hooks:
    "flex_attention", "compiled flex_attention" or "dense score tensor"."""
    if _flex() is None or _BACKEND == "dense" or (_BACKEND == "auto" and str(device) == "cpu" and not _compiled()):
        return "dense score tensor"
    return "compiled flex_attention" if _compiled() else "flex_attention"


def load_module(path, name="posc_attention"):
    """Imports a module written by `posc emit flex` from its file."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def emit_module(pos_file, out_path, posc="posc", preset=None, settings=()):
    """Runs `posc emit flex` for an experiment, writes the module to
    out_path and loads it. settings: "key=value" overrides (--set)."""
    cmd = [posc, "emit", "flex", str(pos_file)] + (["--preset", preset] if preset else [])
    for s in settings:
        cmd += ["--set", s]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    with open(out_path, "w") as f:
        f.write(done.stdout)
    return load_module(out_path)


def dense_probabilities(q, k, channels, emitted, params):
    """(B, H, L, L) attention probabilities of the keys, and (B, H, L, 1) the
    null slot's: the scaled scores, the emitted score_mod broadcast over (b,
    h, q_idx, kv_idx), the mask and the experiment's softmax (the emitted
    `normalise`: softmax1 and the null slot leave the keys' row sums below
    1). Modules from before softmax1 and the null slot: a softmax, no slot."""
    B, H, L, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    dev = q.device
    b = torch.arange(B, device=dev).view(B, 1, 1, 1)
    h = torch.arange(H, device=dev).view(1, H, 1, 1)
    i = torch.arange(L, device=dev).view(1, 1, L, 1)
    j = torch.arange(L, device=dev).view(1, 1, 1, L)
    scores = emitted.make_score_mod(channels, params)(scores, b, h, i, j).expand(B, H, L, L)
    scores = scores.masked_fill(~emitted.mask_mod(b, h, i, j).expand(B, H, L, L), -math.inf)
    if hasattr(emitted, "normalise"):
        return emitted.normalise(scores)
    weights = torch.softmax(scores, dim=-1)
    return weights, torch.zeros_like(weights[..., :1])


def flex_output(q, k, v, channels, emitted, params, null_value=None):
    """softmax(score_mod(q k^T / sqrt(D))) v through flex_attention; with
    softmax1 or a null slot, flex_attention's logsumexp gives the extra
    terms of the normaliser (the emitted `finish`)."""
    flex_attention, create_block_mask = _flex()
    B, _, L, _ = q.shape
    mask = create_block_mask(emitted.mask_mod, B, None, L, L, device=q.device)
    score_mod = emitted.make_score_mod(channels, params)
    if getattr(emitted, "EXTRA_TERMS", 0) == 0:
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=mask)
    out, lse = flex_attention(q, k, v, score_mod=score_mod, block_mask=mask, return_lse=True)
    return emitted.finish(out, lse, null_value)


def can_use_flex(*tensors):
    """Whether flex_attention serves a call on these tensors: the backend
    chooses it for their device and no gradient is recorded."""
    if attention_path(tensors[0].device.type) == "dense score tensor":
        return False
    return not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors))

