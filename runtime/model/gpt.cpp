// The GPT-style decoder: embeddings (token + the plan's absolute embeddings),
// pre-norm blocks, final norm, tied or separate LM head. The positional tables
// are built once per call and shared by all layers; the score-term parameters
// are one set shared by all layers. See gpt.h for the interface.
#include "runtime/model/gpt.h"

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "compiler/jit/compiled.h"
#include "runtime/model/block.h"
#include "runtime/model/fused_attention.h"
#include "runtime/model/precision.h"
#include "runtime/model/positional.h"

namespace posc::model {

int64_t KvCache::length() const { return tokens; }

// The model's parts; GptImpl::State (private in gpt.h) is exactly this, kept
// as a named base so that the helpers below can take it.
struct ModelParts {
  posc::plan::ExperimentPlan plan;
  int64_t vocab = 0;
  torch::nn::Embedding tok{nullptr};
  std::vector<torch::nn::Embedding> abs_tables;  // per plan embedding; null when sinusoidal
  std::vector<Block> blocks;
  Norm norm_f{nullptr};
  torch::nn::Linear head{nullptr};  // null when tied
  std::vector<torch::Tensor> score_params;
  bool score_jit = false;
};

struct GptImpl::State : ModelParts {};

namespace {

// Vaswani et al.: pe[2i] = sin(v / 10000^(2i/W)), pe[2i+1] = cos(v / 10000^(2i/W)).
torch::Tensor sinusoidal(const torch::Tensor& value, int64_t width, torch::ScalarType dtype) {
  const int64_t half = (width + 1) / 2;
  auto f64 = torch::TensorOptions().dtype(torch::kDouble).device(value.device());
  auto i = torch::arange(half, f64);
  auto div = torch::pow(10000.0, 2.0 * i / static_cast<double>(width));
  auto arg = value.to(torch::kDouble).unsqueeze(-1) / div;  // (B, L, half)
  auto pe = torch::stack({arg.sin(), arg.cos()}, -1).flatten(-2).narrow(-1, 0, width);
  return pe.to(dtype);
}

// Initialisation (plan.h, InitKind). Gpt2: N(0, init_std) weights, zero
// biases, residual output projections scaled by 1/sqrt(2 * layers). PyTorch:
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for every affine weight and bias, N(0,
// 1) for embedding tables. Either way token embeddings are N(0,
// embedding_std) where the plan sets it (tied: the output head too, being the
// same matrix); norms start at gain 1 and bias 0 (their constructors).
void initialise(ModelParts& st, const plan::ModelPlan& m) {
  torch::NoGradGuard no_grad;
  if (m.init == plan::InitKind::PyTorch) {
    std::vector<torch::nn::Linear*> affine;
    for (auto& b : st.blocks)
      for (auto* lin : {&b->attn->qkv, &b->attn->out, &b->mlp->fc1, &b->mlp->fc2}) affine.push_back(lin);
    if (st.head) affine.push_back(&st.head);
    st.tok->weight.normal_(0.0, m.embedding_std.value_or(1.0));
    for (auto& t : st.abs_tables)
      if (t) t->weight.normal_(0.0, 1.0);
    for (auto* lin : affine) {
      const double bound = 1.0 / std::sqrt(static_cast<double>((*lin)->weight.size(1)));
      (*lin)->weight.uniform_(-bound, bound);
      if ((*lin)->bias.defined()) (*lin)->bias.uniform_(-bound, bound);
    }
    return;
  }
  const double std = m.init_std;
  const double out_std = std / std::sqrt(2.0 * std::max(1, m.layers));
  st.tok->weight.normal_(0.0, m.embedding_std.value_or(std));
  for (auto& t : st.abs_tables)
    if (t) t->weight.normal_(0.0, std);
  for (auto& b : st.blocks) {
    for (auto* lin : {&b->attn->qkv, &b->attn->out, &b->mlp->fc1, &b->mlp->fc2}) {
      (*lin)->weight.normal_(0.0, std);
      if ((*lin)->bias.defined()) (*lin)->bias.zero_();
    }
    b->attn->out->weight.normal_(0.0, out_std);
    b->mlp->fc2->weight.normal_(0.0, out_std);
  }
  if (st.head) st.head->weight.normal_(0.0, std);
}

}  // namespace

torch::Tensor initialScoreParam(const plan::Param& p, int heads) {
  const torch::Tensor t = torch::tensor(p.initialValues(heads), torch::kDouble).to(torch::kFloat);
  if (p.table()) return p.per_head ? t.reshape({heads, p.size}) : t.reshape({p.size});  // (H, size) or (size)
  return p.per_head ? t : t.reshape({});  // (H) or 0-d
}


GptImpl::GptImpl(const plan::ExperimentPlan& plan, int64_t vocab_size)
    : state_(std::make_shared<State>()) {
  auto& st = *state_;
  st.plan = plan;
  st.vocab = vocab_size;
  const auto& m = plan.model;
  const auto& att = plan.attention;

  st.tok = register_module("tok_emb", torch::nn::Embedding(vocab_size, m.width));
  for (size_t i = 0; i < att.embeddings.size(); ++i) {
    const auto& e = att.embeddings[i];
    if (e.kind == posc::plan::AbsoluteEmbedding::Kind::Learned)
      st.abs_tables.push_back(register_module("abs_emb" + std::to_string(i),
                                              torch::nn::Embedding(e.max_index, m.width)));
    else
      st.abs_tables.push_back(nullptr);
  }

  // Score-term parameters: one set for the whole model.
  if (!att.params.empty()) {
    auto holder = register_module("score_params", std::make_shared<torch::nn::Module>());
    const std::vector<std::string> names = plan::parameterTensorNames(att);
    for (size_t i = 0; i < att.params.size(); ++i) {
      const auto& p = att.params[i];
      torch::Tensor t = initialScoreParam(p, m.heads);
      const std::string& name = names[i];
      st.score_params.push_back(p.learned ? holder->register_parameter(name, t)
                                          : holder->register_buffer(name, t));
    }
  }

  for (int l = 0; l < m.layers; ++l)
    st.blocks.push_back(register_module("block" + std::to_string(l), Block(m, att)));
  st.norm_f = register_module("norm_f", Norm(m.norm, m.width, m.bias));
  if (!m.tied_embeddings)
    st.head = register_module("lm_head", torch::nn::Linear(
                                             torch::nn::LinearOptions(m.width, vocab_size).bias(false)));

  initialise(st, m);
  if (m.precision == posc::plan::Precision::F64) this->to(torch::kDouble);
}

const plan::ExperimentPlan& GptImpl::plan() const { return state_->plan; }

const std::vector<torch::Tensor>& GptImpl::scoreParams() const { return state_->score_params; }

int64_t GptImpl::parameterCount() const {
  int64_t n = 0;
  for (const auto& p : parameters())
    if (p.requires_grad()) n += p.numel();
  return n;
}

namespace {

// offsets: (E, ...) per embedding and token, the shape of a channel, or
// undefined (no training offsets).
torch::Tensor embed(ModelParts& st, const torch::Tensor& tokens, const torch::Tensor& channels,
                    const torch::Tensor& offsets) {
  auto h = st.tok->forward(tokens);
  const auto dtype = st.tok->weight.scalar_type();
  const auto& embs = st.plan.attention.embeddings;
  for (size_t i = 0; i < embs.size(); ++i) {
    auto value = channels.select(0, static_cast<int64_t>(embs[i].channel));
    if (offsets.defined() && embs[i].train_offset > 0)
      value = value + offsets.select(0, static_cast<int64_t>(i)) * value.gt(0).to(value.scalar_type());
    if (st.abs_tables[i])
      h = h + st.abs_tables[i]->forward(value.clamp(0, embs[i].max_index - 1));
    else
      h = h + sinusoidal(value, st.plan.model.width, dtype);
  }
  return h;
}

// The rows forwardMasked computes (flat indices b * L + t): `live`, every
// position up to its row's last masked one; `wanted`, the masked ones;
// `wanted_in_live`, where each wanted row sits among the live ones.
struct Packing {
  torch::Tensor live, wanted, wanted_in_live;
  int64_t batch = 0, length = 0;
};

Packing packRows(const torch::Tensor& mask) {
  Packing p;
  p.batch = mask.size(0);
  p.length = mask.size(1);
  auto wanted = mask.ne(0);
  // A position is live when it or a later one in its row is wanted.
  auto live = wanted.flip(1).to(torch::kLong).cumsum(1).flip(1).gt(0).reshape({-1});
  p.live = live.nonzero().reshape({-1});
  p.wanted = wanted.reshape({-1}).nonzero().reshape({-1});
  p.wanted_in_live = (live.to(torch::kLong).cumsum(0) - 1).index_select(0, p.wanted);
  return p;
}

torch::Tensor run(GptImpl& self, ModelParts& st, const torch::Tensor& tokens,
                  const torch::Tensor& channels, const torch::Tensor& stretch, KvCache* cache,
                  AttentionTrace* trace, const Packing* packing = nullptr,
                  const torch::Tensor& embed_offsets = {}) {
  const auto& m = st.plan.model;
  torch::Tensor offsets;  // (E, B, L): each sequence's draw on each of its tokens
  if (embed_offsets.defined())
    offsets = embed_offsets.to(channels.device(), channels.scalar_type()).unsqueeze(-1).expand(
        {embed_offsets.size(0), channels.size(1), channels.size(2)});
  auto h = packing ? embed(st, tokens.reshape({-1}).index_select(0, packing->live),
                           channels.reshape({channels.size(0), -1}).index_select(1, packing->live),
                           offsets.defined() ? offsets.reshape({offsets.size(0), -1}).index_select(1, packing->live)
                                             : offsets)
                   : embed(st, tokens, channels, offsets);
  if (m.dropout > 0 && self.is_training()) h = torch::dropout(h, m.dropout, true);
  auto positional = buildPositionalContext(st.plan.attention, m, channels, stretch,
                                           st.tok->weight.scalar_type());
  AttentionInputs in;
  in.positional = &positional;
  in.q_channels = channels;
  in.params = &st.score_params;
  in.score_jit = st.score_jit;
  RowLayout row_layout;  // where each sequence's rows sit, for the attention core
  if (st.score_jit && !cache) {
    if (!packing)
      row_layout = RowLayout::dense(channels.size(1), channels.size(2));
    if (!packing || RowLayout::fromPackedRows(packing->live, packing->batch, packing->length, &row_layout))
      in.row_layout = &row_layout;
  }
  if (cache) {
    if (cache->keys.size() != st.blocks.size()) {
      cache->keys.assign(st.blocks.size(), torch::Tensor());
      cache->values.assign(st.blocks.size(), torch::Tensor());
    }
    in.k_channels = appendAlong(cache->channels, cache->tokens, channels, 2, cache->reserve);
    in.cache_length = cache->tokens;
    in.cache_reserve = cache->reserve;
  } else {
    in.k_channels = channels;
  }
  if (trace) {
    trace->weights.assign(st.blocks.size(), torch::Tensor());
    trace->scores.assign(st.blocks.size(), torch::Tensor());
    trace->queries.assign(st.blocks.size(), torch::Tensor());
    trace->keys.assign(st.blocks.size(), torch::Tensor());
  }
  for (size_t l = 0; l < st.blocks.size(); ++l) {
    if (cache) {
      in.cache_keys = &cache->keys[l];
      in.cache_values = &cache->values[l];
    }
    if (trace) {
      in.trace_weights = &trace->weights[l];
      in.trace_scores = &trace->scores[l];
      in.trace_queries = &trace->queries[l];
      in.trace_keys = &trace->keys[l];
    }
    if (packing) {
      const bool last = l + 1 == st.blocks.size();
      in.batch = packing->batch;
      in.length = packing->length;
      in.rows_in = packing->live;
      in.rows_out = last ? packing->wanted : packing->live;
      if (last) in.keep = packing->wanted_in_live;
    }
    in.layer = static_cast<int>(l);
    h = st.blocks[l]->forward(h, in);
  }
  if (cache) cache->tokens += tokens.size(1);
  h = st.norm_f->forward(h);
  return st.head ? st.head->forward(h) : torch::linear(h, st.tok->weight);
}

}  // namespace

torch::Tensor GptImpl::forward(const torch::Tensor& tokens, const torch::Tensor& channels,
                               const torch::Tensor& stretch, AttentionTrace* trace,
                               const torch::Tensor& embed_offsets) {
  return run(*this, *state_, tokens, channels, stretch, nullptr, trace, nullptr, embed_offsets);
}

torch::Tensor GptImpl::forwardMasked(const torch::Tensor& tokens, const torch::Tensor& channels,
                                     const torch::Tensor& stretch, const torch::Tensor& mask,
                                     const torch::Tensor& embed_offsets) {
  const Packing packing = packRows(mask);
  return run(*this, *state_, tokens, channels, stretch, nullptr, nullptr, &packing, embed_offsets);
}

torch::Tensor GptImpl::forwardCached(const torch::Tensor& tokens, const torch::Tensor& channels,
                                     KvCache& cache) {
  return run(*this, *state_, tokens, channels, torch::Tensor(), &cache, nullptr);
}

void GptImpl::setScoreJit(bool on) { state_->score_jit = on; }
bool GptImpl::scoreJit() const { return state_->score_jit; }

bool GptImpl::compileScoreKernels() {
  const ModelParts& st = *state_;
  if (!st.score_jit || !jit::available() || !st.tok->weight.device().is_cpu()) return false;
  compileFusedKernel(parameterDtype(st.plan.model.precision), st.plan.attention, st.plan.model.softmax,
                     st.score_params);
  return true;
}

}  // namespace posc::model
