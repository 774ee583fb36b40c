"""A posc-trained GPT as a PyTorch nn.Module.

    import posc
    attention = posc.load_module("attention.py")        # posc emit flex FILE > attention.py
    model = posc.PoscGPT.from_safetensors("runs/NAME/seed0/final.safetensors", attention)
    logits = model(tokens, channels)  # tokens (B, L) int64; channels (5, B, L) int64

The weights are registered parameters and buffers whose state_dict names are
the checkpoint's own (GPT names, docs/results.md), so ``parameters()``,
``state_dict()``, ``.to(device)``, ``.double()`` and optimisers work and
``save_safetensors`` writes a file posc warm-starts from. Score parameters
the plan marks learned are parameters, fixed ones buffers, as in posc.

The blocks are posc's: pre-norm (LayerNorm, or RMSNorm x rsqrt(mean(x^2) +
1e-5) w; eps 1e-5; LayerNorm without a bias when the model has none),
attention with scores q.k / sqrt(head_dim) (grouped key/value heads,
n_kv_head; RMSNorm on each query and key head with qk_norm), then the
experiment's rotations, score terms, mask and normaliser (softmax, softmax1,
the null slot) from the emitted module; GELU
(exact), ReGLU or SwiGLU feed-forward; a final norm and the tied (or
separate) head. Learned absolute tables (the first is GPT's wpe, later ones
posc.abs_emb<i>) and sinusoidal encodings add to the token embedding.

Hooks (TransformerLens style): identity modules whose forward hooks see, and
may replace, the activations:

    transformer.hook_embed                       (B, L, W) token + absolute embeddings
    transformer.h.<l>.attn.hook_q / hook_k       (B, H, L, D) after rotation
    transformer.h.<l>.attn.hook_v                (B, H, L, D)
    transformer.h.<l>.attn.hook_attn_probs       (B, H, L, L) the keys' weights (rows sum to 1, or
                                                 less with softmax1 or a null slot)
    transformer.h.<l>.attn.hook_z                (B, H, L, D) per-head outputs
    transformer.h.<l>.hook_attn_out / hook_mlp_out   (B, L, W)
    transformer.h.<l>.hook_resid_mid / hook_resid_post   (B, L, W)

A hook on hook_attn_probs makes that layer compute its probabilities on the
dense score tensor (flex_attention does not return them).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import attention as attn_fn
from .checkpoint import checkpoint_metadata, read_checkpoint, write_safetensors
from .plan import Plan, learned_parameter_names

EPS = 1e-5


class Emitted:
    """The emitted attention module, shared as it is by copies of a model
    (copy.deepcopy keeps the reference; modules cannot be copied)."""

    def __init__(self, module):
        self.module = module

    def __getattr__(self, name):
        return getattr(self.__dict__["module"], name)

    def __deepcopy__(self, memo):
        return self


class HookPoint(nn.Module):
    """An identity whose forward hooks observe or replace an activation."""

    def forward(self, x):
        return x

    def hooked(self):
        return bool(self._forward_hooks or self._forward_pre_hooks)


class Norm(nn.Module):
    """LayerNorm (with or without a bias) or RMSNorm, eps 1e-5."""

    def __init__(self, kind, width, bias):
        super().__init__()
        self.kind, self.width = kind, width
        self.weight = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width)) if bias and kind == "layernorm" else None

    def forward(self, x):
        if self.kind == "layernorm":
            return F.layer_norm(x, (self.width,), self.weight, self.bias, EPS)
        return x * (x.pow(2).mean(-1, keepdim=True) + EPS).rsqrt() * self.weight


class Attention(nn.Module):
    def __init__(self, cfg, emitted):
        super().__init__()
        H, G, D = cfg["n_head"], cfg["n_kv_head"], cfg["head_dim"]
        self.heads, self.kv_heads, self.head_dim, self.emitted = H, G, D, emitted
        self.c_attn = nn.Linear(cfg["n_embd"], (H + 2 * G) * D, bias=cfg["bias"])
        self.c_proj = nn.Linear(H * D, cfg["n_embd"], bias=cfg["bias"])
        if cfg["qk_norm"]:
            self.q_norm, self.k_norm = Norm("rmsnorm", D, False), Norm("rmsnorm", D, False)
        for name in ("hook_q", "hook_k", "hook_v", "hook_attn_probs", "hook_z"):
            setattr(self, name, HookPoint())

    def use_null_slot(self, owner):
        """owner.null_value (H, D): this layer's null-slot value, registered
        where the checkpoint names it (posc.block<l>.attn.null_value) and
        held here without registering it twice."""
        object.__setattr__(self, "_null_owner", owner)

    def forward(self, x, channels, params):
        B, L, _ = x.shape
        H, G, D = self.heads, self.kv_heads, self.head_dim
        qkv = self.c_attn(x)
        q = qkv[..., :H * D].reshape(B, L, H, D).transpose(1, 2)
        k = qkv[..., H * D:(H + G) * D].reshape(B, L, G, D).transpose(1, 2)
        v = qkv[..., (H + G) * D:].reshape(B, L, G, D).transpose(1, 2)
        if hasattr(self, "q_norm"):
            q, k = self.q_norm(q), self.k_norm(k)
        k, v = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)
        q, k = self.emitted.apply_rotary(q, k, channels)
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        owner = self.__dict__.get("_null_owner")
        null_value = owner.null_value if owner is not None else None
        tensors = (q, k, v, *params.values()) + ((null_value,) if null_value is not None else ())
        if not self.hook_attn_probs.hooked() and attn_fn.can_use_flex(*tensors):
            out = attn_fn.flex_output(q, k, v, channels, self.emitted, params, null_value)
        else:
            weights, null = attn_fn.dense_probabilities(q, k, channels, self.emitted, params)
            out = self.hook_attn_probs(weights) @ v
            if null_value is not None:
                out = out + null * null_value.view(1, H, 1, D)
        out = self.hook_z(out)
        return self.c_proj(out.transpose(1, 2).reshape(B, L, H * D))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.kind = cfg["mlp"]
        gated = self.kind in ("reglu", "swiglu")
        self.c_fc = nn.Linear(cfg["n_embd"], cfg["mlp_hidden"] * (2 if gated else 1), bias=cfg["bias"])
        self.c_proj = nn.Linear(cfg["mlp_hidden"], cfg["n_embd"], bias=cfg["bias"])

    def forward(self, x):
        h = self.c_fc(x)
        if self.kind == "gelu":
            h = F.gelu(h)
        else:
            gate, up = h.chunk(2, -1)
            h = (torch.relu(gate) if self.kind == "reglu" else F.silu(gate)) * up
        return self.c_proj(h)


class Block(nn.Module):
    def __init__(self, cfg, emitted):
        super().__init__()
        self.ln_1 = Norm(cfg["norm"], cfg["n_embd"], cfg["bias"])
        self.attn = Attention(cfg, emitted)
        self.ln_2 = Norm(cfg["norm"], cfg["n_embd"], cfg["bias"])
        self.mlp = MLP(cfg)
        for name in ("hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post"):
            setattr(self, name, HookPoint())

    def forward(self, x, channels, params):
        x = self.hook_resid_mid(x + self.hook_attn_out(self.attn(self.ln_1(x), channels, params)))
        return self.hook_resid_post(x + self.hook_mlp_out(self.mlp(self.ln_2(x))))


def sinusoidal(value, width, dtype):
    """Vaswani et al.: pe[2i] = sin(v / 10000^(2i/W)), pe[2i+1] = cos(v / 10000^(2i/W))."""
    half = (width + 1) // 2
    div = torch.pow(10000.0, 2.0 * torch.arange(half, dtype=torch.float64, device=value.device) / width)
    arg = value.to(torch.float64).unsqueeze(-1) / div
    return torch.stack([arg.sin(), arg.cos()], -1).flatten(-2)[..., :width].to(dtype)


class Transformer(nn.Module):
    """nanoGPT's `transformer`: wte, wpe (the first learned absolute table), h, ln_f."""

    def __init__(self, cfg, emitted):
        super().__init__()
        self.wte = nn.Embedding(cfg["vocab_size"], cfg["n_embd"])
        first = emitted.EMBEDDINGS[0] if emitted.EMBEDDINGS else None
        if first is not None and first["kind"] == "learned":
            self.wpe = nn.Embedding(first["size"], cfg["n_embd"])
        self.h = nn.ModuleList([Block(cfg, emitted) for _ in range(cfg["n_layer"])])
        self.ln_f = Norm(cfg["norm"], cfg["n_embd"], cfg["bias"])
        self.hook_embed = HookPoint()


class ScoreParams(nn.Module):
    """posc's score parameters: learned ones as parameters, fixed ones as buffers."""

    def __init__(self, initial, learned):
        super().__init__()
        for name, t in initial.items():
            if name in learned:
                self.register_parameter(name, nn.Parameter(t.clone()))
            else:
                self.register_buffer(name, t.clone())

    def as_dict(self):
        return dict(list(self.named_parameters()) + list(self.named_buffers()))


class PoscGPT(nn.Module):
    """A posc GPT; see the module docstring. cfg: the checkpoint's metadata
    (n_layer, n_embd, n_head, n_kv_head, head_dim, mlp, norm, bias, qk_norm,
    vocab_size, tied_embeddings, plan) as strings or values; mlp_hidden is
    read from the weights by from_safetensors."""

    def __init__(self, metadata, emitted, mlp_hidden, learned_params=None):
        super().__init__()
        cfg = _config(metadata, mlp_hidden)
        emitted = emitted if isinstance(emitted, Emitted) else Emitted(emitted)
        self.config, self.metadata, self.emitted = cfg, dict(metadata), emitted
        if learned_params is None:
            learned_params = (learned_parameter_names(metadata["plan"]) if metadata.get("plan")
                              else list(emitted.initial_params()))
        self.transformer = Transformer(cfg, emitted)
        # the checkpoint's posc.* tensors: score_params, abs_emb<i> (i >= 1),
        # block<l>.attn.null_value (the null slot's value per head)
        self.posc = nn.Module()
        self.posc.score_params = ScoreParams(emitted.initial_params(), set(learned_params))
        for i, e in enumerate(emitted.EMBEDDINGS):
            if e["kind"] == "learned" and i > 0:
                setattr(self.posc, f"abs_emb{i}", nn.Embedding(e["size"], cfg["n_embd"]))
        if getattr(emitted, "NULL_SLOT", False):
            for layer, block in enumerate(self.transformer.h):
                owner = nn.Module()
                owner.attn = nn.Module()
                owner.attn.null_value = nn.Parameter(torch.zeros(cfg["n_head"], cfg["head_dim"]))
                setattr(self.posc, f"block{layer}", owner)
                block.attn.use_null_slot(owner.attn)
        if not cfg["tied_embeddings"]:
            self.lm_head = nn.Linear(cfg["n_embd"], cfg["vocab_size"], bias=False)

    @classmethod
    def from_safetensors(cls, path, emitted):
        """Loads a posc checkpoint (posc_format or format = posc-gpt) with the
        experiment's emitted attention module; the dtype is the file's. As in
        posc's warm start, posc.* tensors the file lacks keep their initial
        values; any other missing or unknown tensor is an error."""
        tensors, metadata = read_checkpoint(path)
        hidden = tensors["transformer.h.0.mlp.c_proj.weight"].shape[1]
        model = cls(metadata, emitted, hidden)
        model.to(tensors["transformer.wte.weight"].dtype)
        result = model.load_state_dict(tensors, strict=False)
        wrong = [k for k in result.missing_keys if not k.startswith("posc.")] + list(result.unexpected_keys)
        if wrong:
            raise ValueError(f"{path}: tensors missing or unknown to this model: {wrong}")
        # posc keeps score parameters in float32 in every model; so does the copy.
        for name, t in model.posc.score_params.as_dict().items():
            t.data = t.data.to(tensors.get("posc.score_params." + name, t).dtype)
        return model

    @property
    def plan(self):
        """The checkpoint's plan (posc.plan.Plan): task, randomised channels, training settings."""
        return Plan.parse(self.metadata["plan"])

    def save_safetensors(self, path):
        """Writes the weights under the checkpoint's names with this model's
        metadata (format = pt, posc_format = posc-gpt): a file posc
        warm-starts from (train.init_from) and safetensors loads."""
        write_safetensors(path, self.state_dict(), checkpoint_metadata(self.metadata))

    def score_params(self):
        return self.posc.score_params.as_dict()

    def embed(self, tokens, channels, embed_offsets=None):
        """Token embedding plus the absolute embeddings. embed_offsets (E, B):
        Abacus's per-sequence training offsets, added to nonzero indices."""
        x = self.transformer.wte(tokens)
        for i, e in enumerate(self.emitted.EMBEDDINGS):
            value = channels[e["channel"]]
            if embed_offsets is not None:
                value = value + embed_offsets[i].view(-1, 1).to(value.device) * (value > 0).to(value.dtype)
            if e["kind"] == "learned":
                table = self.transformer.wpe if i == 0 else getattr(self.posc, f"abs_emb{i}")
                x = x + table(value.clamp(0, e["size"] - 1))
            else:
                x = x + sinusoidal(value, self.config["n_embd"], x.dtype)
        return self.transformer.hook_embed(x)

    def forward(self, tokens, channels, embed_offsets=None):
        """Logits (B, L, vocab) for tokens (B, L) and channels (5, B, L)."""
        channels = channels.to(tokens.device)
        x = self.embed(tokens, channels, embed_offsets)
        params = {name: t.to(x.dtype) for name, t in self.score_params().items()}
        for block in self.transformer.h:
            x = block(x, channels, params)
        x = self.transformer.ln_f(x)
        head = self.transformer.wte.weight if self.config["tied_embeddings"] else self.lm_head.weight
        return F.linear(x, head)


def _config(metadata, mlp_hidden):
    def flag(name, default):
        value = metadata.get(name, default)
        return value if isinstance(value, bool) else value == "true"
    n_head = int(metadata["n_head"])
    return {
        "n_layer": int(metadata["n_layer"]), "n_embd": int(metadata["n_embd"]), "n_head": n_head,
        "n_kv_head": int(metadata.get("n_kv_head", n_head)), "vocab_size": int(metadata["vocab_size"]),
        "head_dim": int(metadata.get("head_dim", int(metadata["n_embd"]) // n_head)),
        "mlp": metadata["mlp"], "norm": metadata["norm"], "mlp_hidden": int(mlp_hidden),
        "bias": flag("bias", "true"), "qk_norm": flag("qk_norm", "false"),
        "tied_embeddings": flag("tied_embeddings", "true"),
    }
