// The plan as JSON: see compiler/plan/plan_json.h. Each struct's fields are
// listed once, in NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT, which
// writes them and reads them back (a field a file lacks keeps its default).
#include "compiler/plan/plan_json.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <utility>
#include <stdexcept>

#include <fmt/format.h>

// std::optional as null or its value.
namespace nlohmann {
template <typename T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& v) {
    if (v) j = *v;
    else j = nullptr;
  }
  static void from_json(const json& j, std::optional<T>& v) {
    if (j.is_null()) v.reset();
    else v = j.get<T>();
  }
};
}  // namespace nlohmann

namespace posc::expr {
// Operations by their names in ops.def ("add", "exp").
inline void to_json(nlohmann::json& j, Op op) { j = opName(op); }
inline void from_json(const nlohmann::json& j, Op& op) {
  const std::string name = j.get<std::string>();
  for (int i = 0; i < kOpCount; ++i)
    if (name == kOps[i].name) {
      op = static_cast<Op>(i);
      return;
    }
  throw std::runtime_error(fmt::format("unknown operation '{}'", name));
}
}  // namespace posc::expr

namespace posc::plan {

// An enum by its names; a name it does not have is an error (nlohmann's own
// NLOHMANN_JSON_SERIALIZE_ENUM would read it as the first value).
#define POSC_JSON_ENUM(Type, ...)                                                                    \
  void to_json(nlohmann::json& j, const Type& e) {                                                    \
    static const std::pair<Type, const char*> names[] = __VA_ARGS__;                                \
    for (const auto& [value, name] : names)                                                           \
      if (value == e) {                                                                               \
        j = name;                                                                                     \
        return;                                                                                       \
      }                                                                                               \
    j = nullptr;                                                                                      \
  }                                                                                                   \
  void from_json(const nlohmann::json& j, Type& e) {                                                  \
    static const std::pair<Type, const char*> names[] = __VA_ARGS__;                                \
    const std::string text = j.get<std::string>();                                                    \
    for (const auto& [value, name] : names)                                                           \
      if (text == name) {                                                                             \
        e = value;                                                                                    \
        return;                                                                                       \
      }                                                                                               \
    throw std::runtime_error(fmt::format("'{}' is not a {}", text, #Type));                           \
  }

POSC_JSON_ENUM(Channel, {{Channel::Position, "position"},
                                       {Channel::Column, "column"},
                                       {Channel::Row, "row"},
                                       {Channel::Kind, "kind"},
                                       {Channel::Segment, "segment"}})
POSC_JSON_ENUM(TaskKind, {{TaskKind::Addition, "addition"}, {TaskKind::Documents, "documents"}})
POSC_JSON_ENUM(DocumentTask, {{DocumentTask::Retrieval, "retrieval"},
                                            {DocumentTask::Composition, "composition"},
                                            {DocumentTask::Contradiction, "contradiction"},
                                            {DocumentTask::Order, "order"}})
POSC_JSON_ENUM(Authority, {{Authority::Latest, "latest"},
                                         {Authority::Earliest, "earliest"},
                                         {Authority::Correction, "correction"}})
POSC_JSON_ENUM(DigitOrder, {{DigitOrder::Reversed, "reversed"},
                                          {DigitOrder::Padded, "padded"},
                                          {DigitOrder::PaddedReversed, "padded_reversed"}})
POSC_JSON_ENUM(MlpKind, {{MlpKind::Gelu, "gelu"}, {MlpKind::Reglu, "reglu"}, {MlpKind::Swiglu, "swiglu"}})
POSC_JSON_ENUM(NormKind, {{NormKind::LayerNorm, "layernorm"}, {NormKind::RmsNorm, "rmsnorm"}})
POSC_JSON_ENUM(Precision,
                             {{Precision::F32, "f32"}, {Precision::F64, "f64"}, {Precision::Bf16Mixed, "bf16_mixed"}})
POSC_JSON_ENUM(InitKind, {{InitKind::Gpt2, "gpt2"}, {InitKind::PyTorch, "pytorch"}})
POSC_JSON_ENUM(SoftmaxKind, {{SoftmaxKind::Standard, "standard"}, {SoftmaxKind::Softmax1, "softmax1"}})
POSC_JSON_ENUM(Distribution::Kind, {{Distribution::Kind::Fixed, "fixed"},
                                                  {Distribution::Kind::Uniform, "uniform"},
                                                  {Distribution::Kind::LogUniform, "log_uniform"}})
POSC_JSON_ENUM(AbsoluteEmbedding::Kind, {{AbsoluteEmbedding::Kind::Learned, "learned"},
                                                       {AbsoluteEmbedding::Kind::Sinusoidal, "sinusoidal"}})
POSC_JSON_ENUM(Schedule,
                             {{Schedule::Constant, "constant"}, {Schedule::Cosine, "cosine"}, {Schedule::Linear, "linear"}})
POSC_JSON_ENUM(DecayScope, {{DecayScope::Matrices, "matrices"}, {DecayScope::All, "all"}})
POSC_JSON_ENUM(OperandSampling, {{OperandSampling::Lengths, "lengths"},
                                {OperandSampling::Values, "values"},
                                {OperandSampling::SameLength, "same_length"},
                                {OperandSampling::Mixed, "mixed"}})
POSC_JSON_ENUM(EvalProtocol, {{EvalProtocol::Lengths, "lengths"}, {EvalProtocol::AdderBoard, "adderboard"}})
POSC_JSON_ENUM(ProbeKind, {{ProbeKind::Reach, "reach"},
                                         {ProbeKind::SinkShare, "sink_share"},
                                         {ProbeKind::Kernel, "kernel"},
                                         {ProbeKind::Bands, "bands"},
                                         {ProbeKind::TeacherForced, "teacher_forced"},
                                         {ProbeKind::Stop, "stop"},
                                         {ProbeKind::EvidenceMass, "evidence_mass"}})

// A set of token kinds as the list of their names.
void to_json(nlohmann::json& j, const KindSet& s) {
  j = nlohmann::json::array();
  for (TokenKind k : {TokenKind::Digit, TokenKind::Separator, TokenKind::Special})
    if (s.contains(k)) j.push_back(tokenKindName(k));
}
void from_json(const nlohmann::json& j, KindSet& s) {
  s = KindSet{};
  for (const auto& name : j)
    for (TokenKind k : {TokenKind::Digit, TokenKind::Separator, TokenKind::Special})
      if (name.get<std::string>() == tokenKindName(k)) s.insert(k);
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DocumentTaskPlan, tasks, train_min_length, train_max_length,
                                                train_distractors, templates, absent_share, near_duplicates, authority,
                                                filler)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TaskPlan, kind, documents, operands, digits_per_token, order,
                                                train_min_digits, train_max_digits, test_digits, problems_per_length,
                                                test_seed, bos, sampling, padded_width)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ModelPlan, layers, width, heads, kv_heads, head_dim, mlp_hidden, mlp,
                                                norm, tied_embeddings, bias, qk_norm, precision, softmax, dropout, init,
                                                init_std, embedding_std)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Distribution, kind, a, b, eval_value)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Rotation, channel, pair_begin, pair_end, base, stretch, xpos_scale_base,
                                                interpolate, yarn_length, yarn_alpha, yarn_beta, heads, origin)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KeyZeroing, kinds, pair_begin, pair_end, heads, origin)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(AbsoluteEmbedding, kind, channel, max_index, train_offset, origin)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ChannelSampling, channel, range, origin)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Param, name, per_head, learned, size, init)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FormulaNode, op, value, channel, param, a, b, c)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Formula, nodes, text)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ScoreTerm, name, formula, exempt_keys, exempt_queries, heads, origin)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(AttentionPlan, embeddings, rotations, key_zeroing, score_terms, params,
                                                null_slot, sampled_channels)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TrainPlan, steps, batch, lr, min_lr_ratio, beta1, beta2, eps,
                                                weight_decay, decay_scope, bias_correction, warmup, schedule, grad_clip,
                                                seeds, checkpoint_every,
                                                log_every, init_from, init_file)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PublishedAccuracy, digits, percent)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DocumentRequirement, task, length, depth, distractors, threshold, text)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DocumentEvalPlan, tasks, lengths, depths, distractors, templates,
                                                problems, absent_share, fraction, requirements)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EvalPlan, protocol, documents, batch, every, published,
                                                published_source)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WeightTensor, present, rows, cols, values, tie, name)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HandsetLayer, width, heads, head_dim, mlp_hidden, query, query_bias,
                                                key, key_bias, value, value_bias, out, out_bias, alibi, gate,
                                                gate_bias, up, up_bias, down, down_bias)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SharedValue, name, value)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HandsetModel, vocab, embed_width, embed, layers, identity_head,
                                                unembed, shared)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HeadChoice, layer, head)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProbePlan, kind, name, lengths, length, problems, problem_seed,
                                                threshold, place, operand, sweep_begin, sweep_end, window, far,
                                                fast_period, slow_period, head, lookup_heads, distractors)

#undef POSC_JSON_ENUM

std::string planJson(const ExperimentPlan& p) {
  nlohmann::json j;  // keys in alphabetical order within each object
  j["format"] = "posc-plan";
  j["version"] = kPlanJsonVersion;
  j["experiment"] = p.name;
  j["source_path"] = p.source_path;
  j["preset"] = p.preset;
  j["overrides"] = p.overrides;
  j["task"] = p.task;
  j["model"] = p.model;
  j["attention"] = p.attention;
  j["train"] = p.train;
  j["eval"] = p.eval;
  j["handset"] = p.handset;
  j["probes"] = p.probes;
  return j.dump(1) + "\n";
}

ExperimentPlan planFromJson(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("not JSON ({})", e.what()));
  }
  if (!j.is_object() || j.value("format", "") != "posc-plan") throw std::runtime_error("not a posc plan");
  if (j.value("version", 0) > kPlanJsonVersion)
    throw std::runtime_error(fmt::format("a plan of version {}, newer than this posc reads ({})",
                                         j.value("version", 0), kPlanJsonVersion));
  ExperimentPlan p;
  try {
    p.name = j.at("experiment").get<std::string>();
    p.source_path = j.value("source_path", "");
    p.preset = j.value("preset", "");
    p.overrides = j.value("overrides", std::vector<std::string>{});
    if (j.contains("task")) p.task = j["task"].get<TaskPlan>();
    if (j.contains("model")) p.model = j["model"].get<ModelPlan>();
    if (j.contains("attention")) p.attention = j["attention"].get<AttentionPlan>();
    if (j.contains("train")) p.train = j["train"].get<TrainPlan>();
    if (j.contains("eval")) p.eval = j["eval"].get<EvalPlan>();
    if (j.contains("handset")) p.handset = j["handset"].get<std::optional<HandsetModel>>();
    if (j.contains("probes")) p.probes = j["probes"].get<std::vector<ProbePlan>>();
  } catch (const std::exception& e) {  // nlohmann's type errors and the enums' unknown names
    throw std::runtime_error(fmt::format("a damaged plan ({})", e.what()));
  }
  return p;
}

}  // namespace posc::plan
