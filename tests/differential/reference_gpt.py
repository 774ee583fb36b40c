"""An independent reference of the model family posc trains, in PyTorch.

Written from the definitions in the papers and in the study's source, not
from posc's code: a GPT-2-style pre-norm decoder (Radford et al. 2019) with
tied embeddings, LayerNorm (eps 1e-5), exact-erf GELU and biases everywhere;
positional components as their papers define them:

  learned absolute   GPT-2's learned position table added to the embedding
  RoPE               RoFormer (Su et al. 2021, eq. 34): adjacent dimension
                     pairs (2i, 2i+1) rotated by angle m * base^(-i/P)
  2D RoPE            the study's split: the first half of each head's pairs
                     rotated by the row (which operand), the second half by
                     the column (place value), each half its own ladder
  ALiBi              Press et al. 2022: score - slope_h * |i - j|, with the
                     paper's geometric slopes
  decay              the study's multiplicative decay: score *
                     exp(-rate_h * |column_q - column_k|), separator keys exempt
  position-free sink the study's sink: separator keys lose their
                     column-rotated dimensions (set to zero after rotation)

and today's blocks as their papers define them: RMSNorm (Zhang & Sennrich
2019, eps 1e-5, a gain and no bias), SwiGLU (Shazeer 2020: down(silu(gate x)
* up x)), grouped-query attention (Ainslie et al. 2023: query head h reads
key/value head h // (H / G)), a head dimension of its own, RMSNorm on each
query and key head before rotation (Qwen3), layers without biases, an untied
output head, and RoPE with any base;

and the addition task's channels (position, column, row, kind) computed from
the tokens by their definitions. Training uses torch.optim.AdamW (weight decay
on matrices only), torch.nn.utils.clip_grad_norm_, and a linear warm-up into
a cosine decay to min_lr_ratio * lr.

Only the weights (posc's initial draw) and the batches (posc's data stream)
come from posc; the test compares every step's loss and the final weights.
"""

import json
import math
import struct

import torch
import torch.nn.functional as F

DTYPES = {"F64": torch.float64, "F32": torch.float32, "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8,
          "BOOL": torch.bool}

# The addition vocabulary: digits 0-9, then '+', '=', end, padding.
PLUS, EQUALS, END, PAD = 10, 11, 12, 13
DIGIT, SEPARATOR, SPECIAL = 0, 1, 2


def read_safetensors(path):
    """The tensors and metadata of a safetensors file (the format's spec: an
    8-byte little-endian header size, a JSON header, raw little-endian data)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = bytearray(data[base + begin:base + end])
        t = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]) if raw else torch.empty(0, dtype=DTYPES[info["dtype"]])
        tensors[name] = t.reshape(info["shape"]).clone()
    return tensors, meta


def channels_of(tokens):
    """(5, B, L) channels of an addition batch from its tokens alone:
    position (index in the sequence), column (a digit's place value, units = 1;
    0 for '+', '=' and the end), row (0 for the first operand, 1 from '+' on,
    2 from '=' on), kind (digit, separator, special), segment (0). Padding
    continues the position, with column 0, the last row and kind special."""
    B, L = tokens.shape
    out = torch.zeros(5, B, L, dtype=torch.int64)
    for b in range(B):
        row, place = 0, 0
        for t in range(L):
            tok = int(tokens[b, t])
            out[0, b, t] = t
            if tok < 10:
                place += 1
                out[1, b, t] = place
                out[3, b, t] = DIGIT
            else:
                place = 0
                if tok == PLUS:
                    row = 1
                elif tok == EQUALS:
                    row = 2
                out[3, b, t] = SEPARATOR if tok in (PLUS, EQUALS) else SPECIAL
            out[2, b, t] = row
    return out


def check_additions(tokens, padded_width=0):
    """Every row of a batch is a correct sum, digits units first: without
    leading zeros, or (padded_width W) with operands of W digits and an
    answer of W + 1."""
    for row in tokens.tolist():
        text = "".join("0123456789+=$_"[t] for t in row).split("$")[0]
        lhs, rhs = text.split("=")
        a, b = lhs.split("+")
        value = lambda digits: int(digits[::-1])
        assert value(a) + value(b) == value(rhs), f"not a sum: {text}"
        if padded_width:
            assert (len(a), len(b), len(rhs)) == (padded_width, padded_width, padded_width + 1), f"not padded: {text}"
        else:
            assert len(rhs) == 1 or rhs[-1] != "0", f"leading zero: {text}"


def alibi_slopes(n):
    """ALiBi's slopes: 2^(-8/n * i) for i = 1..n when n is a power of two;
    otherwise those of the largest power of two below n, then every other
    slope of twice that many."""
    def power_of_two(m):
        start = 2.0 ** (-8.0 / m)
        return [start ** (i + 1) for i in range(m)]
    closest = 2 ** int(math.floor(math.log2(n)))
    return power_of_two(closest) + power_of_two(2 * closest)[0::2][:n - closest]


class Config:
    def __init__(self, layers, width, heads, vocab, rope=None, learned_positions=0, alibi=None, decay=None,
                 sink=False, kv_heads=None, head_dim=None, mlp="gelu", norm="layernorm", bias=True, qk_norm=False,
                 tied=True, rope_base=10000.0):
        self.layers, self.width, self.heads, self.vocab = layers, width, heads, vocab
        self.kv_heads = kv_heads or heads
        self.head_dim = head_dim or width // heads
        self.rope = rope                    # None, "position" or "2d"
        self.rope_base = rope_base
        self.learned_positions = learned_positions  # table size, 0 for none
        self.alibi = alibi                  # per-head slopes or None
        self.decay = decay                  # per-head rates or None
        self.sink = sink                    # zero the column half of separator keys
        self.mlp, self.norm, self.bias, self.qk_norm, self.tied = mlp, norm, bias, qk_norm, tied


def norm(cfg, x, w, name, size=None):
    """LayerNorm (with or without bias) or RMSNorm over the last dimension, eps 1e-5."""
    size = size or cfg.width
    if cfg.norm == "rmsnorm":
        return rms_norm(x, w[name + ".weight"])
    return F.layer_norm(x, (size,), w[name + ".weight"], w.get(name + ".bias"), 1e-5)


def rms_norm(x, gain):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * gain


def affine(x, w, name):
    y = x @ w[name + ".weight"].T
    return y + w[name + ".bias"] if name + ".bias" in w else y


def rope_angles(cfg, channels):
    """(B, L, P) rotation angle of each pair, in f64."""
    P = cfg.head_dim // 2
    position, column, row = channels[0].double(), channels[1].double(), channels[2].double()
    if cfg.rope == "position":
        ladder = torch.tensor([cfg.rope_base ** (-i / P) for i in range(P)], dtype=torch.float64)
        return position[..., None] * ladder
    half = P // 2
    ladder = torch.tensor([cfg.rope_base ** (-i / half) for i in range(half)], dtype=torch.float64)
    return torch.cat([row[..., None] * ladder, column[..., None] * ladder], dim=-1)


def rotate(x, angles):
    """RoFormer's rotation of adjacent pairs. x (B, H, L, D), angles (B, L, P)."""
    cos, sin = torch.cos(angles)[:, None].to(x.dtype), torch.sin(angles)[:, None].to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    y0, y1 = x0 * cos - x1 * sin, x1 * cos + x0 * sin
    return torch.stack([y0, y1], dim=-1).flatten(-2)


def forward(cfg, w, tokens, channels):
    """Logits (B, L, V) of the reference model with weights `w` (GPT names)."""
    B, L = tokens.shape
    H, G, D = cfg.heads, cfg.kv_heads, cfg.head_dim
    x = w["transformer.wte.weight"][tokens]
    if cfg.learned_positions:
        x = x + w["transformer.wpe.weight"][channels[0].clamp(0, cfg.learned_positions - 1)]
    angles = rope_angles(cfg, channels) if cfg.rope else None
    kind, column, position = channels[3], channels[1].double(), channels[0].double()
    separator_key = (kind == SEPARATOR)[:, None, None, :]  # (B, 1, 1, Lk)
    causal = torch.ones(L, L, dtype=torch.bool).tril()
    for l in range(cfg.layers):
        p = f"transformer.h.{l}."
        h = norm(cfg, x, w, p + "ln_1")
        qkv = affine(h, w, p + "attn.c_attn")
        q = qkv[..., :H * D].reshape(B, L, H, D).transpose(1, 2)
        k = qkv[..., H * D:(H + G) * D].reshape(B, L, G, D).transpose(1, 2)
        v = qkv[..., (H + G) * D:].reshape(B, L, G, D).transpose(1, 2)
        if cfg.qk_norm:
            q, k = rms_norm(q, w[p + "attn.q_norm.weight"]), rms_norm(k, w[p + "attn.k_norm.weight"])
        # Grouped-query attention: query head h reads key/value head h // (H / G).
        group = torch.arange(H) // (H // G)
        k, v = k[:, group], v[:, group]
        if angles is not None:
            q, k = rotate(q, angles), rotate(k, angles)
        if cfg.sink:
            column_half = torch.zeros(D, dtype=torch.bool)
            column_half[D // 2:] = True
            k = k.masked_fill((kind == SEPARATOR)[:, None, :, None] & column_half, 0.0)
        s = q @ k.transpose(-1, -2) / math.sqrt(D)
        if cfg.decay is not None:
            distance = (column[:, :, None] - column[:, None, :]).abs()[:, None].to(s.dtype)  # (B, 1, Lq, Lk)
            decayed = s * torch.exp(-cfg.decay[None, :, None, None] * distance)
            s = torch.where(separator_key, s, decayed)
        if cfg.alibi is not None:
            distance = (position[:, :, None] - position[:, None, :]).abs()[:, None].to(s.dtype)
            s = s - cfg.alibi[None, :, None, None] * distance
        s = s.masked_fill(~causal, float("-inf"))
        y = torch.softmax(s, dim=-1) @ v
        y = y.transpose(1, 2).reshape(B, L, H * D)
        x = x + affine(y, w, p + "attn.c_proj")
        h = affine(norm(cfg, x, w, p + "ln_2"), w, p + "mlp.c_fc")
        if cfg.mlp == "swiglu":
            gate, up = h.chunk(2, dim=-1)
            h = F.silu(gate) * up
        else:
            h = F.gelu(h)
        x = x + affine(h, w, p + "mlp.c_proj")
    x = norm(cfg, x, w, "transformer.ln_f")
    return x @ (w["transformer.wte.weight"] if cfg.tied else w["lm_head.weight"]).T


def loss_of(logits, targets, mask):
    """Cross-entropy summed over the answer positions, divided by their count
    in the whole batch."""
    nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none")
    mask = mask.reshape(-1).bool()
    return nll[mask].sum() / mask.sum()


def learning_rate(step, steps, lr, warmup, min_ratio):
    """Linear warm-up over `warmup` steps, then a cosine from lr to
    min_ratio * lr at the last step."""
    if step < warmup:
        return lr * (step + 1) / warmup
    span = steps - 1 - warmup
    progress = 1.0 if span <= 0 else min(1.0, max(0.0, (step - warmup) / span))
    low = lr * min_ratio
    return low + (lr - low) * 0.5 * (1 + math.cos(math.pi * progress))


class AdamWWithoutBiasCorrection:
    """AdamW as MLX defines it by default (mlx.optimizers.AdamW,
    bias_correction=False): p <- p (1 - lr wd); m <- b1 m + (1 - b1) g;
    v <- b2 v + (1 - b2) g^2; p <- p - lr m / (sqrt(v) + eps)."""

    def __init__(self, groups, lr, betas, eps):
        self.param_groups = [dict(g, lr=lr) for g in groups]
        self.betas, self.eps = betas, eps
        self.moments = {}

    def zero_grad(self):
        for g in self.param_groups:
            for t in g["params"]:
                t.grad = None

    @torch.no_grad()
    def step(self):
        b1, b2 = self.betas
        for g in self.param_groups:
            for t in g["params"]:
                m, v = self.moments.setdefault(id(t), (torch.zeros_like(t), torch.zeros_like(t)))
                t.mul_(1 - g["lr"] * g["weight_decay"])
                m.mul_(b1).add_(t.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(t.grad, t.grad, value=1 - b2)
                t.sub_(g["lr"] * m / (v.sqrt() + self.eps))


def train(cfg, weights, batches, hp):
    """Trains from `weights` on `batches` (a list of dicts with tokens,
    targets, loss_mask) with AdamW; returns every step's loss and the final
    weights. Only tensors with two or more dimensions are decayed, unless
    hp["decay_all"]; hp["bias_correction"] = False trains with
    AdamWWithoutBiasCorrection instead of torch.optim.AdamW."""
    params = {n: t.clone().double().requires_grad_(True) for n, t in weights.items() if not n.startswith("posc.")}
    decay_all = hp.get("decay_all", False)
    decayed = [t for t in params.values() if decay_all or t.dim() >= 2]
    plain = [t for t in params.values() if not decay_all and t.dim() < 2]
    groups = [{"params": decayed, "weight_decay": hp["weight_decay"]}, {"params": plain, "weight_decay": 0.0}]
    if hp.get("bias_correction", True):
        optimizer = torch.optim.AdamW(groups, lr=hp["lr"], betas=hp["betas"], eps=hp["eps"])
    else:
        optimizer = AdamWWithoutBiasCorrection(groups, lr=hp["lr"], betas=hp["betas"], eps=hp["eps"])
    losses = []
    for step, batch in enumerate(batches):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, len(batches), hp["lr"], hp["warmup"], hp["min_lr_ratio"])
        optimizer.zero_grad()
        logits = forward(cfg, params, batch["tokens"], batch["channels"])
        loss = loss_of(logits, batch["targets"], batch["loss_mask"])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), hp["grad_clip"])
        optimizer.step()
        losses.append(loss.item())
    return losses, {n: t.detach() for n, t in params.items()}
