// The FlexAttention module of an experiment (see flex.h).
#include "compiler/flex/flex.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace posc::flex {

namespace {

using Op = plan::FormulaNode::Op;

// A float literal Python reads back exactly (the shortest that round-trips).
std::string literal(double v) {
  if (std::isnan(v)) return "math.nan";
  if (std::isinf(v)) return v > 0 ? "math.inf" : "-math.inf";
  return fmt::format("{}", v);
}

std::string list(const std::vector<double>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + literal(values[i]);
  return s + "]";
}

// `kind == k0) | (kind == k1) ...` for the kinds of a set, over `what`.
std::string kindTest(plan::KindSet kinds, const std::string& what) {
  std::string s;
  for (int k = 0; k < 8; ++k)
    if (kinds.bits & (1u << k)) s += fmt::format("{}({} == {})", s.empty() ? "" : " | ", what, k);
  return s;
}

// Python statements computing formula `f` of term `t` into `t<t>_<node>`,
// the last being the term's new score.
std::string formulaStatements(const plan::Formula& f, const plan::AttentionPlan& attention, size_t t) {
  std::string out;
  auto var = [&](int i) { return fmt::format("t{}_{}", t, i); };
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const plan::FormulaNode& n = f.nodes[i];
    const std::string A = n.a >= 0 ? var(n.a) : "", B = n.b >= 0 ? var(n.b) : "", C = n.c >= 0 ? var(n.c) : "";
    std::string e;
    switch (n.op) {
      case Op::Const: e = fmt::format("_const(score, {})", literal(n.value)); break;
      case Op::Score: e = "score"; break;
      case Op::QChannel: e = fmt::format("channels[{}, b, q_idx].to(score.dtype)", static_cast<int>(n.channel)); break;
      case Op::KChannel: e = fmt::format("channels[{}, b, kv_idx].to(score.dtype)", static_cast<int>(n.channel)); break;
      case Op::Head: e = "_const(score, 0) + h"; break;
      case Op::Param: {
        const plan::Param& p = attention.params.at(static_cast<size_t>(n.param));
        e = fmt::format("p{}{}.to(score.dtype)", n.param, p.per_head ? "[h]" : "");
        break;
      }
      case Op::Lookup: {
        const plan::Param& p = attention.params.at(static_cast<size_t>(n.param));
        e = fmt::format("_read(p{}, {}, {}, h)", n.param, A, p.per_head ? "True" : "False");
        break;
      }
      case Op::Var: throw std::logic_error("a score formula has no distance variable");
      // Every operation as its `python` column in ops.def says.
#define POSC_OP_UNARY(Name, name, symbol, function, precedence, type, fold, grad, tensor, python, ...) \
  case Op::Name:                                                                                       \
    e = fmt::format(python, A);                                                                        \
    break;
#define POSC_OP_BINARY(Name, name, symbol, function, precedence, commutative, type, fold, grad, tensor, python, ...) \
  case Op::Name:                                                                                                     \
    e = fmt::format(python, A, B);                                                                                   \
    break;
#define POSC_OP_TERNARY(Name, name, symbol, function, precedence, type, fold, grad, tensor, python, ...) \
  case Op::Name:                                                                                         \
    e = fmt::format(python, A, B, C);                                                                    \
    break;
#include "compiler/expr/ops.def"
    }
    out += fmt::format("        {} = {}\n", var(static_cast<int>(i)), e);
  }
  return out;
}

std::string scoreMod(const plan::ExperimentPlan& plan) {
  const plan::AttentionPlan& a = plan.attention;
  const std::vector<std::string> names = plan::parameterTensorNames(a);
  std::string s =
      "def make_score_mod(channels, params):\n"
      "    \"\"\"The chain of score terms as a FlexAttention score_mod.\n\n"
      "    channels: integer tensor (4, B, L): position, column, row and kind of every\n"
      "    token (docs/language.md); params: the score parameters by name, as\n"
      "    initial_params() or load_params() gives them.\n"
      "    \"\"\"\n";
  for (size_t i = 0; i < a.params.size(); ++i) s += fmt::format("    p{} = params[\"{}\"]\n", i, names[i]);
  s += "\n    def score_mod(score, b, h, q_idx, kv_idx):\n";
  if (a.score_terms.empty()) s += "        # no score terms: the score is the scaled, rotated dot product\n";
  for (size_t t = 0; t < a.score_terms.size(); ++t) {
    const plan::ScoreTerm& term = a.score_terms[t];
    s += fmt::format("        # {}: s <- {}   [{}]\n", term.name, plan::renderFormula(term.formula, a), term.origin);
    s += formulaStatements(term.formula, a, t);
    const std::string result = fmt::format("t{}_{}", t, term.formula.nodes.size() - 1);
    std::string keep;
    if (!term.exempt_keys.empty()) keep = kindTest(term.exempt_keys, "channels[3, b, kv_idx]");
    if (!term.exempt_queries.empty())
      keep += (keep.empty() ? "" : " | ") + kindTest(term.exempt_queries, "channels[3, b, q_idx]");
    if (!term.heads.empty()) {
      std::string on;
      for (int h : term.heads) on += fmt::format("{}(h == {})", on.empty() ? "" : " | ", h);
      keep += (keep.empty() ? "~(" : " | ~(") + on + ")";
    }
    if (keep.empty()) s += fmt::format("        score = {}\n", result);
    else s += fmt::format("        score = torch.where({}, score, {})  # exempt: unchanged\n", keep, result);
  }
  s += "        return score\n\n    return score_mod\n";
  return s;
}

std::string rotary(const plan::ExperimentPlan& plan) {
  const plan::AttentionPlan& a = plan.attention;
  const int P = plan.model.head_dim / 2, H = plan.model.heads;
  std::string s =
      "def apply_rotary(q, k, channels):\n"
      "    \"\"\"posc's rotations and key zeroing of q and k (B, H, L, head_dim), pairs on\n"
      "    adjacent dimensions (2i, 2i + 1); channels (4, B, L). Returns (q, k).\"\"\"\n"
      "    B, L = channels.shape[1], channels.shape[2]\n"
      "    f64 = dict(dtype=torch.float64, device=q.device)\n";
  if (a.rotations.empty() && a.key_zeroing.empty()) return s + "    return q, k\n";
  s += fmt::format("    angle = torch.zeros(B, {}, L, {}, **f64)\n", H, P);
  s += fmt::format("    log_scale = torch.zeros(B, {}, L, {}, **f64)\n", H, P);
  for (const plan::Rotation& r : a.rotations) {
    const int n = r.pair_end - r.pair_begin;
    if (n <= 0) continue;
    std::vector<double> freq(static_cast<size_t>(P), 0.0), log_zeta(static_cast<size_t>(P), 0.0);
    const std::vector<double> theta = plan::inverseFrequencies(r);
    for (int i = 0; i < n; ++i) {
      freq[static_cast<size_t>(r.pair_begin + i)] = theta[static_cast<size_t>(i)];
      if (r.xpos_scale_base > 0)
        log_zeta[static_cast<size_t>(r.pair_begin + i)] = std::log((static_cast<double>(i) / n + 0.4) / 1.4);
    }
    s += fmt::format("    # {}\n", r.origin);
    s += fmt::format("    value = channels[{}].to(torch.float64)", static_cast<int>(r.channel));
    if (r.stretch) s += fmt::format(" * {}  # the stretch's evaluation value", literal(r.stretch->eval_value));
    s += "\n";
    std::vector<double> heads(static_cast<size_t>(H), r.heads.empty() ? 1.0 : 0.0);
    for (int h : r.heads) heads[static_cast<size_t>(h)] = 1.0;
    s += fmt::format("    heads = torch.tensor({}, **f64).view(1, {}, 1, 1)\n", list(heads), H);
    s += fmt::format("    angle = angle + value.view(B, 1, L, 1) * torch.tensor({}, **f64).view(1, 1, 1, {}) * heads\n",
                     list(freq), P);
    if (r.xpos_scale_base > 0)
      s += fmt::format(
          "    log_scale = log_scale + value.view(B, 1, L, 1) / {} * torch.tensor({}, **f64).view(1, 1, 1, {}) * heads\n",
          literal(r.xpos_scale_base), list(log_zeta), P);
  }
  s += "    cos, sin, scale = angle.cos(), angle.sin(), log_scale.exp()\n"
       "\n"
       "    def turn(x, factor):\n"
       "        x0, x1 = x[..., 0::2].to(torch.float64), x[..., 1::2].to(torch.float64)\n"
       "        y = torch.stack([x0 * cos - x1 * sin, x1 * cos + x0 * sin], -1).flatten(-2)\n"
       "        return (y * factor.repeat_interleave(2, -1)).to(x.dtype)\n"
       "\n"
       "    q, k = turn(q, scale), turn(k, 1 / scale)\n";
  for (const plan::KeyZeroing& z : a.key_zeroing) {
    std::vector<double> heads(static_cast<size_t>(H), z.heads.empty() ? 1.0 : 0.0);
    for (int h : z.heads) heads[static_cast<size_t>(h)] = 1.0;
    s += fmt::format("    # {}: zero pairs {}..{} of keys of kinds {}\n", z.origin, z.pair_begin, z.pair_end,
                     kindTest(z.kinds, "kind"));
    s += fmt::format("    kind = channels[3]\n    keys = ({}).view(B, 1, L, 1)\n", kindTest(z.kinds, "kind"));
    s += fmt::format("    heads = torch.tensor({}, dtype=torch.bool, device=q.device).view(1, {}, 1, 1)\n",
                     fmt::format("[{}]", [&] {
                       std::string b;
                       for (size_t i = 0; i < heads.size(); ++i) b += (i ? ", " : "") + std::string(heads[i] ? "True" : "False");
                       return b;
                     }()),
                     H);
    s += fmt::format("    dims = torch.zeros({}, dtype=torch.bool, device=q.device)\n    dims[{}:{}] = True\n",
                     plan.model.head_dim, 2 * z.pair_begin, 2 * z.pair_end);
    s += "    k = torch.where(keys & heads & dims.view(1, 1, 1, -1), torch.zeros_like(k), k)\n";
  }
  s += "    return q, k\n";
  return s;
}

// softmax1 and the null slot add terms exp(0) to the softmax's normaliser
// (the null slot's with its value), as posc's attentionWeights
// (runtime/model/attention.cpp) defines them; FlexAttention's output over the
// keys and its logsumexp (return_lse=True) give them exactly. With S the
// keys' sum of exp(score) and c the number of extra terms, a key's weight is
// exp(score) / (S + c), its flex weight times S / (S + c) = sigmoid(lse -
// log c), and the null slot's weight is 1 / (S + c).
std::string normaliser() {
  return "\n\n"
         "EXTRA_TERMS = int(SOFTMAX1) + int(NULL_SLOT)  # terms exp(0) in the normaliser beside the keys\n\n\n"
         "def finish(out, lse, null_value=None):\n"
         "    \"\"\"flex_attention's (out, lse) with return_lse=True -> posc's attention\n"
         "    output (B, H, L, D): the keys' weights shrink by S / (S + EXTRA_TERMS),\n"
         "    S = exp(lse), and the null slot adds null_value (H, D) with weight\n"
         "    1 / (S + EXTRA_TERMS).\"\"\"\n"
         "    if EXTRA_TERMS == 0:\n"
         "        return out\n"
         "    keep = torch.sigmoid(lse.to(torch.float64) - math.log(EXTRA_TERMS)).unsqueeze(-1)\n"
         "    result = out * keep.to(out.dtype)\n"
         "    if NULL_SLOT:\n"
         "        null = ((1 - keep) / EXTRA_TERMS).to(out.dtype)\n"
         "        result = result + null * null_value.to(out.dtype).view(1, HEADS, 1, -1)\n"
         "    return result\n\n\n"
         "def normalise(scores):\n"
         "    \"\"\"Masked scores (B, H, L, L) -> (the keys' weights, the null slot's\n"
         "    weight (B, H, L, 1)): the dense form of finish, for paths that read\n"
         "    the probabilities. Without a null slot its weight is zero.\"\"\"\n"
         "    if EXTRA_TERMS == 0:\n"
         "        weights = torch.softmax(scores, dim=-1)\n"
         "        return weights, torch.zeros_like(weights[..., :1])\n"
         "    top = scores.amax(-1, keepdim=True).clamp_min(0).detach()\n"
         "    e = (scores - top).exp()\n"
         "    rest = (-top).exp()\n"
         "    denominator = EXTRA_TERMS * rest + e.sum(-1, keepdim=True)\n"
         "    null = rest / denominator if NULL_SLOT else torch.zeros_like(denominator)\n"
         "    return e / denominator, null\n";
}

}  // namespace

std::optional<std::string> emitModule(const plan::ExperimentPlan& plan, std::string& why) {
  const plan::AttentionPlan& a = plan.attention;
  if (plan.handset) {
    why = "a hand-set model has per-layer ALiBi and weights; `posc export onnx` writes it whole";
    return std::nullopt;
  }
  const std::vector<std::string> names = plan::parameterTensorNames(a);
  std::string s = fmt::format(
      "\"\"\"FlexAttention functions of posc experiment '{}'{}.\n\n"
      "Written by `posc emit flex {}`: the experiment's score terms as a score_mod, the\n"
      "causal mask as a mask_mod, and its rotations and key zeroing, for\n"
      "torch.nn.attention.flex_attention (PyTorch >= 2.5):\n\n"
      "    q, k = apply_rotary(q, k, channels)\n"
      "    score_mod = make_score_mod(channels, load_params(\"seed0/final.safetensors\"))\n"
      "    block_mask = create_block_mask(mask_mod, B, None, L, L)\n"
      "    out, lse = flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, return_lse=True)\n"
      "    out = finish(out, lse, null_value)   # softmax1 and the null slot; else out itself\n\n"
      "flex_attention's default scale is 1 / sqrt(head_dim), as posc's.\n"
      "\"\"\"\n"
      "import json\nimport math\nimport struct\n\nimport torch\n\n"
      "EXPERIMENT = \"{}\"\nHEADS = {}\nHEAD_DIM = {}\n"
      "SOFTMAX1 = {}  # the normaliser has a term exp(0) beside the keys\n"
      "NULL_SLOT = {}  # one more key with score 0 and a learned value per head (H, HEAD_DIM)\n"
      "CHANNELS = (\"position\", \"column\", \"row\", \"kind\", \"segment\")  # rows of the channels tensor\n"
      "KINDS = {{\"digit\": 0, \"separator\": 1, \"special\": 2}}  # values of the kind channel\n\n\n",
      plan.name, plan.preset.empty() ? "" : fmt::format(" (preset {})", plan.preset), plan.source_path, plan.name,
      plan.model.heads, plan.model.head_dim, plan.model.softmax == plan::SoftmaxKind::Softmax1 ? "True" : "False",
      a.null_slot ? "True" : "False");

  s += "# Absolute embeddings added to the token embedding, in order: the first\n"
       "# learned table is transformer.wpe.weight in final.safetensors, later ones\n"
       "# posc.abs_emb<i>.weight (tools/posc_model.py reads this).\n"
       "EMBEDDINGS = [\n";
  for (const plan::AbsoluteEmbedding& e : a.embeddings)
    s += fmt::format("    {{\"channel\": {}, \"kind\": \"{}\", \"size\": {}}},  # {}\n", static_cast<int>(e.channel),
                     e.kind == plan::AbsoluteEmbedding::Kind::Learned ? "learned" : "sinusoidal", e.max_index, e.origin);
  s += "]\n\n\n";
  s += "def initial_params(dtype=torch.float32):\n"
       "    \"\"\"The score parameters at their declared initial values: per head (H,),\n"
       "    shared (), tables (H, N) or (N).\"\"\"\n"
       "    return {\n";
  for (size_t i = 0; i < a.params.size(); ++i) {
    const plan::Param& p = a.params[i];
    const int rows = p.per_head ? plan.model.heads : 1;
    const std::vector<double> init = p.initialValues(plan.model.heads);
    std::string shape = p.table() ? (p.per_head ? fmt::format("({}, {})", rows, p.size) : fmt::format("({},)", p.size))
                                  : (p.per_head ? fmt::format("({},)", rows) : "()");
    s += fmt::format("        \"{}\": torch.tensor({}, dtype=dtype).reshape{},  # {}{}\n", names[i], list(init), shape,
                     p.name, p.learned ? ", learned" : "");
  }
  s += "    }\n\n\n";
  s += "def load_params(path):\n"
       "    \"\"\"The trained score parameters from a posc final.safetensors\n"
       "    (posc.score_params.<name>).\"\"\"\n"
       "    raw = open(path, \"rb\").read()\n"
       "    n = struct.unpack(\"<Q\", raw[:8])[0]\n"
       "    header = json.loads(raw[8:8 + n])\n"
       "    dtypes = {\"F32\": torch.float32, \"F64\": torch.float64}\n"
       "    params = initial_params()\n"
       "    for name in params:\n"
       "        entry = header.get(\"posc.score_params.\" + name)\n"
       "        if entry is not None:\n"
       "            begin, end = entry[\"data_offsets\"]\n"
       "            data = bytearray(raw[8 + n + begin:8 + n + end])\n"
       "            params[name] = torch.frombuffer(data, dtype=dtypes[entry[\"dtype\"]]).reshape(entry[\"shape\"])\n"
       "    return params\n\n\n"
       "def _const(score, value):\n"
       "    return torch.full((), value, dtype=score.dtype, device=score.device)\n\n\n"
       "def _read(table, index, per_head, h):\n"
       "    \"\"\"A table entry as posc reads it: the index rounded down and clamped into\n"
       "    the table; a NaN index reads NaN.\"\"\"\n"
       "    nan = torch.isnan(index)\n"
       "    entry = torch.where(nan, torch.zeros_like(index), index).floor().clamp(0, table.shape[-1] - 1).long()\n"
       "    value = (table[h, entry] if per_head else table[entry]).to(index.dtype)\n"
       "    return torch.where(nan, torch.full_like(value, math.nan), value)\n\n\n";
  s += scoreMod(plan);
  s += "\n\ndef mask_mod(b, h, q_idx, kv_idx):\n    \"\"\"Causal: a query sees itself and the keys before it.\"\"\"\n"
       "    return q_idx >= kv_idx\n\n\n";
  s += rotary(plan);
  s += normaliser();
  return s;
}

}  // namespace posc::flex
