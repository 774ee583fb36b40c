"""A posc-trained GPT in plain PyTorch.

    import importlib.util, torch
    from posc_model import PoscGPT
    # the experiment's attention: `posc emit flex FILE > attention.py`
    spec = importlib.util.spec_from_file_location("attention", "attention.py")
    attention = importlib.util.module_from_spec(spec); spec.loader.exec_module(attention)
    model = PoscGPT.from_safetensors("runs/NAME/seed0/final.safetensors", attention)
    logits = model(tokens, channels)   # tokens (B, L) int64, channels (5, B, L) int64: position, column, row, kind, segment

The weights come from posc's final.safetensors (GPT names, docs/results.md)
and the shape from its metadata; the attention - rotations, key zeroing, the
chain of score terms, the causal mask - from the module `posc emit flex`
writes for the experiment. The blocks are posc's: pre-norm (LayerNorm or
RMSNorm, eps 1e-5; LayerNorm without a bias when the checkpoint has none),
attention with scores q.k / sqrt(head_dim) (key/value heads shared by groups
of query heads, n_kv_head; RMSNorm on each query and key head, qk_norm),
GELU (exact), ReGLU or SwiGLU feed-forward, affine layers with or without
biases, a final norm and the tied (or separate) head; learned
absolute tables and sinusoidal encodings add to the token embedding. On PyTorch >= 2.5 the score and mask functions run
through torch.nn.attention.flex_attention; before that (e.g. Debian's 1.13)
they are applied to the dense score tensor, which is FlexAttention's
definition.
"""
import json
import math
import os
import struct

import torch
import torch.nn.functional as F

_DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64}

_FLEX = None  # (flex_attention, create_block_mask) once looked up; False without them


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


def attention_path():
    """How attention runs here: "flex_attention", "compiled flex_attention"
    or "dense score tensor" (FlexAttention's definition, before 2.5)."""
    if _flex() is None:
        return "dense score tensor"
    return "compiled flex_attention" if os.environ.get("POSC_FLEX_COMPILE") == "1" else "flex_attention"


def read_safetensors(path):
    """(tensors by name, metadata) of a safetensors file."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        data = bytearray(raw[8 + n + begin:8 + n + end])
        dtype = _DTYPES[entry["dtype"]]
        tensors[name] = torch.frombuffer(data, dtype=dtype).reshape(entry["shape"]) if data else \
            torch.zeros(entry["shape"], dtype=dtype)
    return tensors, metadata


def sinusoidal(value, width, dtype):
    """Vaswani et al.: pe[2i] = sin(v / 10000^(2i/W)), pe[2i+1] = cos(v / 10000^(2i/W))."""
    half = (width + 1) // 2
    div = torch.pow(10000.0, 2.0 * torch.arange(half, dtype=torch.float64) / width)
    arg = value.to(torch.float64).unsqueeze(-1) / div
    return torch.stack([arg.sin(), arg.cos()], -1).flatten(-2)[..., :width].to(dtype)


def _rms_norm(x, weight):
    return x * (x.pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt() * weight


class PoscGPT(torch.nn.Module):
    def __init__(self, weights, metadata, attention):
        super().__init__()
        self.w = weights
        self.n_layer = int(metadata["n_layer"])
        self.n_head = int(metadata["n_head"])
        self.n_kv_head = int(metadata.get("n_kv_head", self.n_head))
        self.qk_norm = metadata.get("qk_norm") == "true"
        self.head_dim = int(metadata["head_dim"])
        self.width = int(metadata["n_embd"])
        self.mlp = metadata["mlp"]
        self.norm = metadata["norm"]
        self.attention = attention
        self.params = {name[len("posc.score_params."):]: t for name, t in weights.items()
                       if name.startswith("posc.score_params.")}
        for name, t in attention.initial_params().items():
            self.params.setdefault(name, t)

    @classmethod
    def from_safetensors(cls, path, attention):
        weights, metadata = read_safetensors(path)
        tag = metadata.get("posc_format", metadata.get("format"))  # "format" before format = pt
        if tag != "posc-gpt":
            raise ValueError(f"{path}: not a posc checkpoint (posc_format {tag!r})")
        return cls(weights, metadata, attention)

    def _norm(self, x, prefix):
        weight = self.w[prefix + ".weight"].to(x.dtype)
        if self.norm == "layernorm":
            bias = self.w.get(prefix + ".bias")
            return F.layer_norm(x, (self.width,), weight, None if bias is None else bias.to(x.dtype), 1e-5)
        return _rms_norm(x, weight)

    def _linear(self, x, prefix):
        bias = self.w.get(prefix + ".bias")
        return F.linear(x, self.w[prefix + ".weight"].to(x.dtype), None if bias is None else bias.to(x.dtype))

    def _attend(self, x, layer, channels):
        B, L, _ = x.shape
        H, G, D = self.n_head, self.n_kv_head, self.head_dim
        prefix = f"transformer.h.{layer}.attn"
        qkv = self._linear(x, prefix + ".c_attn")
        q = qkv[..., :H * D].reshape(B, L, H, D).transpose(1, 2)
        k = qkv[..., H * D:(H + G) * D].reshape(B, L, G, D).transpose(1, 2)
        v = qkv[..., (H + G) * D:].reshape(B, L, G, D).transpose(1, 2)
        if self.qk_norm:
            q = _rms_norm(q, self.w[prefix + ".q_norm.weight"].to(x.dtype))
            k = _rms_norm(k, self.w[prefix + ".k_norm.weight"].to(x.dtype))
        k, v = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)
        q, k = self.attention.apply_rotary(q, k, channels)
        score_mod = self.attention.make_score_mod(channels, {n: t.to(x.dtype) for n, t in self.params.items()})
        flex = _flex()
        if flex is not None:
            flex_attention, create_block_mask = flex
            mask = create_block_mask(self.attention.mask_mod, B, None, L, L, device=x.device)
            out = flex_attention(q, k, v, score_mod=score_mod, block_mask=mask)
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(D)
            b = torch.arange(B).view(B, 1, 1, 1)
            h = torch.arange(H).view(1, H, 1, 1)
            i = torch.arange(L).view(1, 1, L, 1)
            j = torch.arange(L).view(1, 1, 1, L)
            scores = score_mod(scores, b, h, i, j).expand(B, H, L, L)
            scores = scores.masked_fill(~self.attention.mask_mod(b, h, i, j).expand(B, H, L, L), -torch.inf)
            out = torch.softmax(scores, dim=-1) @ v
        return self._linear(out.transpose(1, 2).reshape(B, L, H * D), f"transformer.h.{layer}.attn.c_proj")

    def _feed_forward(self, x, layer):
        h = self._linear(x, f"transformer.h.{layer}.mlp.c_fc")
        if self.mlp in ("reglu", "swiglu"):
            a, b = h.chunk(2, -1)
            h = (torch.relu(a) if self.mlp == "reglu" else F.silu(a)) * b
        else:
            h = F.gelu(h)
        return self._linear(h, f"transformer.h.{layer}.mlp.c_proj")

    def forward(self, tokens, channels, dtype=torch.float32):
        wte = self.w["transformer.wte.weight"].to(dtype)
        x = wte[tokens]
        for i, e in enumerate(self.attention.EMBEDDINGS):
            value = channels[e["channel"]]
            if e["kind"] == "learned":  # posc's abs_emb<i>: GPT's wpe when it is the first
                table = self.w["transformer.wpe.weight" if i == 0 else f"posc.abs_emb{i}.weight"].to(dtype)
                x = x + table[value.clamp(0, e["size"] - 1)]
            else:
                x = x + sinusoidal(value, self.width, dtype)
        for layer in range(self.n_layer):
            x = x + self._attend(self._norm(x, f"transformer.h.{layer}.ln_1"), layer, channels)
            x = x + self._feed_forward(self._norm(x, f"transformer.h.{layer}.ln_2"), layer)
        x = self._norm(x, "transformer.ln_f")
        head = self.w.get("lm_head.weight")
        return F.linear(x, (wte if head is None else head.to(dtype)))
