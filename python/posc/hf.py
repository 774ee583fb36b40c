"""posc checkpoints as Hugging Face transformers models, where the layouts match.

Two exact mappings (docs/results.md, "Checkpoints and Hugging Face layouts"):

* ``to_gpt2``: learned absolute positions over the position channel as the
  only positional component, GELU, LayerNorm with biases, multi-head
  attention with head_dim x heads = width, standard softmax ->
  ``GPT2LMHeadModel``. Tensor names are the same; GPT-2's Conv1D keeps its
  weights as (in, out), so every Linear weight of a block is transposed.
  GPT-2 raises on a position past its table where posc reads the last row.
* ``to_llama``: RoPE over the position channel on every pair of every head
  (no stretch, xPos or interpolation) as the only positional component,
  RMSNorm, SwiGLU -> ``LlamaForCausalLM``, or ``Qwen3ForCausalLM`` with
  qk_norm (and no biases). posc rotates adjacent pairs (2i, 2i + 1) of a
  head; Llama rotates (i, i + D/2). The rows of each query and key head
  (and the q_norm / k_norm gains) are permuted to [0, 2, ..., D-2, 1, 3,
  ..., D-1]; a pair's frequency base^(-2i/D) is the same in both.
  transformers computes the rotation angles in float32 (posc in float64).

Both check the checkpoint's metadata and plan and raise ValueError naming
the first difference. Positions are the position channel:
``hf_model(input_ids=tokens, position_ids=channels[0])``.
"""
import re

import torch


def _attention_lines(metadata):
    text = metadata.get("plan", "")
    lines, inside = [], False
    for line in text.splitlines():
        if line and not line.startswith(" "):
            inside = line == "attention"
        elif inside and not line.strip().startswith("no rotation:"):  # a remark, not a component
            lines.append(line.strip())
    return lines


def _require(condition, why):
    if not condition:
        raise ValueError(f"no exact Hugging Face layout: {why}")


def _common(model):
    cfg, meta = model.config, model.metadata
    _require("softmax1" not in meta.get("plan", ""), "softmax1 adds 1 to the softmax's denominator")
    return cfg, _attention_lines(meta)


def gpt2_config(model):
    """The GPT2Config of a posc model with GPT-2's layout."""
    from transformers import GPT2Config
    cfg, lines = _common(model)
    _require(cfg["mlp"] == "gelu" and cfg["norm"] == "layernorm" and cfg["bias"], "GPT-2 has GELU, LayerNorm, biases")
    _require(not cfg["qk_norm"] and cfg["n_kv_head"] == cfg["n_head"], "GPT-2 has neither qk_norm nor grouped heads")
    _require(cfg["head_dim"] * cfg["n_head"] == cfg["n_embd"], "GPT-2's heads split the width")
    _require(len(lines) == 1 and re.fullmatch(r"embed learned position embedding \(table of \d+\)\s+\[.*\]", lines[0]),
             f"GPT-2's positions are one learned table over the position channel; the plan has {lines}")
    return GPT2Config(vocab_size=cfg["vocab_size"], n_positions=model.transformer.wpe.num_embeddings,
                      n_embd=cfg["n_embd"], n_layer=cfg["n_layer"], n_head=cfg["n_head"], n_inner=cfg["mlp_hidden"],
                      activation_function="gelu", layer_norm_epsilon=1e-5, resid_pdrop=0.0, embd_pdrop=0.0,
                      attn_pdrop=0.0, tie_word_embeddings=cfg["tied_embeddings"], bos_token_id=None,
                      eos_token_id=None)


def to_gpt2(model):
    """A transformers GPT2LMHeadModel with the posc model's weights and dtype."""
    from transformers import GPT2LMHeadModel
    hf = GPT2LMHeadModel(gpt2_config(model)).to(model.transformer.wte.weight.dtype).eval()
    state = {}
    for name, t in model.state_dict().items():
        conv = re.fullmatch(r"transformer\.h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight", name)
        state[name] = t.t().contiguous() if conv else t
    if model.config["tied_embeddings"]:
        state["lm_head.weight"] = state["transformer.wte.weight"]
    _load(hf, state)
    return hf


def _rope_base(model, lines):
    half = model.config["head_dim"] // 2
    _require(len(lines) == 1, f"Llama's positions are RoPE alone; the plan has {lines}")
    m = re.fullmatch(r"rotate pairs 0\.\.(\d+) of every head by position, base ([^ ,]+)\s+\[.*\]", lines[0])
    _require(m is not None and int(m[1]) == half, f"Llama rotates every pair by position: {lines[0]!r}")
    return float(m[2])


def llama_config(model):
    """The LlamaConfig (or Qwen3Config with qk_norm) of a posc model with Llama's layout."""
    from transformers import LlamaConfig, Qwen3Config
    cfg, lines = _common(model)
    _require(cfg["mlp"] == "swiglu" and cfg["norm"] == "rmsnorm", "Llama has SwiGLU and RMSNorm")
    base = _rope_base(model, lines)
    common = dict(vocab_size=cfg["vocab_size"], hidden_size=cfg["n_embd"], intermediate_size=cfg["mlp_hidden"],
                  num_hidden_layers=cfg["n_layer"], num_attention_heads=cfg["n_head"],
                  num_key_value_heads=cfg["n_kv_head"], head_dim=cfg["head_dim"], hidden_act="silu",
                  rms_norm_eps=1e-5, tie_word_embeddings=cfg["tied_embeddings"], attention_bias=cfg["bias"],
                  rope_parameters={"rope_type": "default", "rope_theta": base}, bos_token_id=None, eos_token_id=None)
    if cfg["qk_norm"]:
        _require(not cfg["bias"], "Qwen3's feed-forward has no biases")
        return Qwen3Config(**common)
    return LlamaConfig(mlp_bias=cfg["bias"], **common)


def rope_permutation(head_dim):
    """Llama's row order of a head: posc's even dimensions, then its odd ones."""
    return list(range(0, head_dim, 2)) + list(range(1, head_dim, 2))


def to_llama(model):
    """A transformers LlamaForCausalLM (Qwen3ForCausalLM with qk_norm) with
    the posc model's weights, query and key rows permuted to Llama's pairs."""
    from transformers import LlamaForCausalLM, Qwen3ForCausalLM
    config = llama_config(model)
    cls = Qwen3ForCausalLM if model.config["qk_norm"] else LlamaForCausalLM
    hf = cls(config).to(model.transformer.wte.weight.dtype).eval()
    cfg = model.config
    H, G, D, W = cfg["n_head"], cfg["n_kv_head"], cfg["head_dim"], cfg["n_embd"]
    perm = rope_permutation(D)
    sd = model.state_dict()
    state = {"model.embed_tokens.weight": sd["transformer.wte.weight"],
             "model.norm.weight": sd["transformer.ln_f.weight"]}
    state["lm_head.weight"] = sd["transformer.wte.weight"] if cfg["tied_embeddings"] else sd["lm_head.weight"]
    for layer in range(cfg["n_layer"]):
        src, dst = f"transformer.h.{layer}.", f"model.layers.{layer}."
        state[dst + "input_layernorm.weight"] = sd[src + "ln_1.weight"]
        state[dst + "post_attention_layernorm.weight"] = sd[src + "ln_2.weight"]
        for kind in ("weight", "bias"):
            if src + "attn.c_attn." + kind not in sd:
                continue
            qkv = sd[src + "attn.c_attn." + kind]
            q, k, v = qkv[:H * D], qkv[H * D:(H + G) * D], qkv[(H + G) * D:]
            rows = (-1, W) if kind == "weight" else (-1,)
            state[dst + "self_attn.q_proj." + kind] = q.reshape(H, D, *rows[1:])[:, perm].reshape(*rows)
            state[dst + "self_attn.k_proj." + kind] = k.reshape(G, D, *rows[1:])[:, perm].reshape(*rows)
            state[dst + "self_attn.v_proj." + kind] = v
            state[dst + "self_attn.o_proj." + kind] = sd[src + "attn.c_proj." + kind]
            gate, up = sd[src + "mlp.c_fc." + kind].chunk(2, 0)
            state[dst + "mlp.gate_proj." + kind], state[dst + "mlp.up_proj." + kind] = gate, up
            state[dst + "mlp.down_proj." + kind] = sd[src + "mlp.c_proj." + kind]
        if cfg["qk_norm"]:
            state[dst + "self_attn.q_norm.weight"] = sd[src + "attn.q_norm.weight"][perm]
            state[dst + "self_attn.k_norm.weight"] = sd[src + "attn.k_norm.weight"][perm]
    _load(hf, state)
    return hf


def _load(hf, state):
    """Loads every tensor of hf's state_dict from `state`; an error names any gap."""
    own = hf.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise ValueError(f"layout mismatch: missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        for name, t in own.items():
            if state[name].shape != t.shape:
                raise ValueError(f"{name}: shape {tuple(state[name].shape)}, the Hugging Face model's {tuple(t.shape)}")
            t.copy_(state[name])
