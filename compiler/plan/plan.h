// The experiment plan: the typed result of compiling a `.pos` experiment.
//
// This is the contract between the compiler (which knows syntax, names and
// diagnostics) and the runtime (which knows tensors). Nothing here refers to
// source text: every name has been resolved, every stdlib component has been
// expanded into primitive operations, every default has been filled in and every
// value range has been checked. The runtime may assume a plan is valid.
//
// Deliberately free of LibTorch so that the front end compiles quickly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/expr/ops.h"

namespace posc::plan {

// ---------------------------------------------------------------------------
// Index channels. Every token carries one integer per channel; positional
// components read them. See docs/language.md for their exact values.
enum class Channel : uint8_t {
  Position,  // 0, 1, 2, ... along the sequence
  Column,    // place value of a digit token (units = 1); 0 for non-digits
  Row,       // which operand (0, 1, ...), the answer row = operand count
  Kind,      // TokenKind as an integer
  Segment,   // document tasks: the statement a token belongs to (1, 2, ... in
             // order; the question one past the last; 0 elsewhere); 0 in addition
};
inline constexpr int kChannelCount = 5;
const char* channelName(Channel c);

// Token kinds, for exemptions and sinks. Document tasks use the same three:
// content (keys, values, filler) is `digit`, template markers are
// `separator`, <bos>/<eos>/<pad>/<none> are `special`.
enum class TokenKind : uint8_t {
  Digit = 0,      // a token holding k digits
  Separator = 1,  // '+' and '='
  Special = 2,    // end-of-answer, padding
};
const char* tokenKindName(TokenKind k);

// A set of token kinds (bit i = TokenKind i).
struct KindSet {
  uint8_t bits = 0;
  bool contains(TokenKind k) const { return bits & (1u << static_cast<int>(k)); }
  void insert(TokenKind k) { bits |= static_cast<uint8_t>(1u << static_cast<int>(k)); }
  bool empty() const { return bits == 0; }
};

// ---------------------------------------------------------------------------
// The task: multi-operand addition, or the long-context documents of the
// factorial protocol (runtime/longctx/document.h).
enum class TaskKind : uint8_t { Addition, Documents };

// The document tasks and which of two statements holds in a contradiction;
// runtime/longctx generates and grades them.
enum class DocumentTask : uint8_t { Retrieval, Composition, Contradiction, Order };
inline constexpr int kDocumentTaskCount = 4;
const char* documentTaskName(DocumentTask t);  // "retrieval", "composition", ...
enum class Authority : uint8_t { Latest, Earliest, Correction };
const char* authorityName(Authority a);  // "latest", "earliest", "correction"

// Training documents: each one draws its task (uniformly from `tasks`),
// prompt length (uniform in [train_min_length, train_max_length]), evidence
// depth (uniform in [0, 1]), distractor count (uniformly one of
// train_distractors), template (uniform below `templates`) and, for tasks
// that may lack evidence, whether it does (probability absent_share); then
// one of its questions uniformly, followed by review questions on its other
// statements (runtime/longctx/sequence.h). The loss is on every answer and
// its <eos>.
struct DocumentTaskPlan {
  std::vector<DocumentTask> tasks{DocumentTask::Retrieval};
  int train_min_length = 32;  // prompt tokens, <bos> to A:
  int train_max_length = 128;
  std::vector<int> train_distractors{0};
  int templates = 3;          // surface forms, 1..3
  double absent_share = 0.0;  // retrieval, composition: documents without their evidence
  bool near_duplicates = false;  // distractor keys share one half with the queried key
  Authority authority = Authority::Latest;  // contradiction documents
  // false: training documents are their statements alone, without filler
  // (retrieval only): the evidence at the drawn depth among the distractors,
  // the length what they take. A curriculum's first stage: from scratch,
  // CPU-sized models formed the lookup only on such documents, and kept it
  // when filler came later (docs/longctx.md, runs P14-P18). Evaluation
  // documents always have filler.
  bool filler = true;
};

enum class DigitOrder : uint8_t {
  Reversed,  // least significant digit (token) first, answer units first
  Padded,    // most significant first, operands zero-padded to the longest
             // training/test length, answer padded to that length + 1
  PaddedReversed,  // units first, zero-padded as Padded (AdderBoard's trained
                   // entries write their fixed-width sequences this way)
};
// Every operand and the answer have a fixed width (Padded, PaddedReversed).
inline bool isPadded(DigitOrder o) { return o != DigitOrder::Reversed; }
// Units first (Reversed, PaddedReversed).
inline bool unitsFirst(DigitOrder o) { return o != DigitOrder::Padded; }

enum class OperandSampling : uint8_t { Lengths, Values, SameLength, Mixed };

struct TaskPlan {
  TaskKind kind = TaskKind::Addition;
  DocumentTaskPlan documents;  // kind == Documents
  // Addition (kind == Addition):
  int operands = 2;
  int digits_per_token = 1;  // k: one token holds k decimal digits
  DigitOrder order = DigitOrder::Reversed;
  int train_min_digits = 1;  // operand lengths in digits, sampled uniformly
  int train_max_digits = 10; // per operand, freshly for every problem
  // Padded orders: the width every operand is zero-padded to, when it is
  // larger than train_max_digits (0: train_max_digits). A curriculum of
  // short operands then trains at the final stage's positions, as AdderBoard's
  // trained entries pad 1-3 digit operands to 10 digits.
  int padded_width = 0;
  // How a training operand is drawn: Lengths (posc's default) draws its
  // length uniformly in train_min_digits..train_max_digits, then its digits
  // with a non-zero leading one, so every length is equally common; Values
  // draws the number itself uniformly from 10^(min-1)..10^max - 1 (0..10^max
  // - 1 when min is 1), as the 10-digit-addition leaderboard's entries do,
  // so nine in ten operands have the longest length; SameLength draws one
  // length uniformly for the problem and gives every operand that length, so
  // each length's problems (all operands that long, as the test's are) make
  // 1 / (max - min + 1) of the stream instead of its square under Lengths;
  // Mixed draws each problem as SameLength or as Lengths with probability 1/2
  // each, so the stream keeps problems whose operands differ in length and
  // each length's all-equal problems are about half SameLength's share.
  OperandSampling sampling = OperandSampling::Lengths;
  std::vector<int> test_digits;    // each test length (digits per operand)
  int problems_per_length = 90;
  uint64_t test_seed = 1234;  // test problems (and documents) are a function of this alone
  bool bos = false;  // a <bos> token opens every sequence (position 0)
};

// The digits an operand of `digits` digits takes in a sequence: padded orders
// zero-pad it to the training width (train_max_digits, or a wider
// padded_width); a longer operand, and every operand of the reversed order,
// keeps its own length.
inline int operandWidth(const TaskPlan& t, int digits) {
  return isPadded(t.order) ? std::max({digits, t.train_max_digits, t.padded_width}) : digits;
}

// ---------------------------------------------------------------------------
// The model.
// Gelu: fc2(gelu(fc1 x)). Gated (Shazeer 2020, "GLU variants"): fc1 makes
// (gate, up), fc2(act(gate) * up), act = relu (Reglu) or silu (Swiglu).
enum class MlpKind : uint8_t { Gelu, Reglu, Swiglu };
const char* mlpName(MlpKind k);  // "gelu", "reglu", "swiglu"
enum class NormKind : uint8_t { LayerNorm, RmsNorm };
const char* normName(NormKind k);  // "layernorm", "rmsnorm"
enum class Precision : uint8_t { F32, F64, Bf16Mixed };
// How the weights are drawn. Gpt2 (Radford et al. 2019): matrices N(0,
// init_std), residual output projections init_std / sqrt(2 x layers), zero
// biases. PyTorch: its modules' own defaults (nn.Linear: weight and bias
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)); nn.Embedding: N(0, 1)), the scale at
// which small models are usually trained in PyTorch.
enum class InitKind : uint8_t { Gpt2, PyTorch };
enum class SoftmaxKind : uint8_t { Standard, Softmax1 };  // softmax1: 1 + sum in denominator

struct ModelPlan {
  int layers = 6;
  int width = 384;
  int heads = 6;
  // Key/value heads (grouped-query attention, Ainslie et al. 2023): query
  // head h reads key/value head h / (heads / kv_heads). 0 (the default):
  // as many as heads (multi-head); 1: multi-query. Read it through kvHeads().
  int kv_heads = 0;
  int kvHeads() const { return kv_heads > 0 ? kv_heads : heads; }
  int head_dim = 64;      // default width / heads; any even size when set
  int mlp_hidden = 1536;  // hidden width of the feed-forward block
  MlpKind mlp = MlpKind::Gelu;
  NormKind norm = NormKind::LayerNorm;
  bool tied_embeddings = true;
  // Biases in the affine layers (qkv, out, fc1, fc2) and in LayerNorm.
  bool bias = true;
  // RMSNorm (eps 1e-5, one gain of head_dim shared by the heads) on every
  // query and key head before rotation (Qwen3; Dehghani et al. 2023).
  bool qk_norm = false;
  Precision precision = Precision::F32;
  SoftmaxKind softmax = SoftmaxKind::Standard;
  double dropout = 0.0;
  InitKind init = InitKind::Gpt2;
  // Gpt2 init: initial weights N(0, init_std); residual output projections get
  // init_std / sqrt(2 x layers) (GPT-2's scheme). The scale can decide
  // whether attention heads compose within a budget (docs/longctx.md).
  double init_std = 0.02;
  // Initial token embeddings N(0, embedding_std) under either init; unset:
  // init_std (Gpt2) or 1 (PyTorch). PyTorch's
  // nn.Embedding draws N(0, 1), GPT-2 N(0, 0.02); with the small scale a
  // CPU-sized model stayed at chance on retrieval where N(0, 1) learned it
  // (docs/longctx.md, runs P13 and P17).
  std::optional<double> embedding_std;
};

// ---------------------------------------------------------------------------
// Positional components, after expansion of stdlib definitions.

// A per-sequence random scale factor (random stretch). Sampled once per
// training sequence; evaluation uses `eval_value`.
struct Distribution {
  enum class Kind : uint8_t { Fixed, Uniform, LogUniform } kind = Kind::Fixed;
  double a = 1.0, b = 1.0;  // Fixed: a. Uniform / LogUniform: [a, b]
  double eval_value = 1.0;
};

// Rotary pairs [pair_begin, pair_end) of the selected heads turn by `channel`.
// Pair i of a head of dimension D (i < D/2) uses inverse frequency
// base^(-2 (i - pair_begin) / (2 (pair_end - pair_begin))), i.e. the RoPE
// ladder restarted over the component's own pairs. The angle is
// channel * stretch * inv_freq.
struct Rotation {
  Channel channel = Channel::Position;
  int pair_begin = 0;
  int pair_end = 0;
  double base = 10000.0;
  std::optional<Distribution> stretch;  // absent: factor 1
  // xPos (Sun et al. 2022): with a scale base gamma > 0, pair i of the
  // component (i < n = pair_end - pair_begin) also scales queries by
  // zeta_i^(c / gamma) and keys by zeta_i^(-c / gamma), c the channel value
  // (stretched like the angle), zeta_i = (i / n + 0.4) / 1.4; so a pair's
  // product carries zeta_i^((c_q - c_k) / gamma), a decay with distance
  // that is slower on the slow pairs. 0: no scaling.
  double xpos_scale_base = 0;
  // Context extension by a factor s = interpolate >= 1 (an evaluation length
  // s times the trained one). Position Interpolation (Chen et al. 2023, eq. 2):
  // every pair's inverse frequency theta_i becomes theta_i / s. YaRN (Peng et
  // al. 2023, "NTK-by-parts", eq. 17-18) when yarn_length > 0, the original
  // context length L: pair i of wavelength lambda_i = 2 pi / theta_i turns
  // r_i = L / lambda_i times within it; gamma_i = clamp((r_i - alpha) /
  // (beta - alpha), 0, 1) and theta_i becomes (1 - gamma_i) theta_i / s +
  // gamma_i theta_i: fast pairs keep their frequency, slow ones are
  // interpolated. (YaRN's attention temperature is a score term.)
  double interpolate = 1;
  double yarn_length = 0;
  double yarn_alpha = 1, yarn_beta = 32;
  std::vector<int> heads;               // empty: every head
  std::string origin;                   // e.g. "rope(channel = column) @ rope.pos"
};

// The inverse frequencies of a rotation's own pairs (pair_end - pair_begin of
// them, in order): the RoPE ladder base^(-i/n), interpolated as above. The one
// place the ladder is computed.
std::vector<double> inverseFrequencies(const Rotation& r);

// Key vectors of tokens whose kind is in `kinds` have their components in
// pairs [pair_begin, pair_end) set to zero (the position-free sink).
struct KeyZeroing {
  KindSet kinds;
  int pair_begin = 0;
  int pair_end = 0;
  std::vector<int> heads;  // empty: every head
  std::string origin;
};

// An absolute embedding of a channel added to the token embedding.
struct AbsoluteEmbedding {
  enum class Kind : uint8_t { Learned, Sinusoidal } kind = Kind::Learned;
  Channel channel = Channel::Position;
  int max_index = 1024;  // learned tables have rows 0..max_index-1
  // Abacus's random offset (McLeish et al. 2024): during training each
  // sequence draws k uniformly from 0..train_offset and its tokens with a
  // nonzero channel value (digits, for the column) read row value + k;
  // evaluation reads row value. 0: no offset.
  int train_offset = 0;
  std::string origin;
};

// Randomised positional encodings (Ruoss et al. 2023, "Randomized Positional
// Encodings Boost Length Generalization of Transformers", section 3): during
// training, each sequence's values of `channel` are relabelled by a random
// order-preserving map into 0..range-1. Its values 0..V (V the largest value
// in the sequence) become a sorted sample of V + 1 distinct integers drawn
// uniformly without replacement from 0..range-1; for the position channel
// that is the paper's sorted random subset of a longer sequence's positions.
// Every component reading the channel sees the relabelled values. Evaluation
// relabels too, with one map per test problem (task::evaluationLabels): a
// model trained on random gaps has almost never seen consecutive values.
struct ChannelSampling {
  Channel channel = Channel::Position;
  int range = 0;
  std::string origin;
};

// A parameter a score formula may read: a value, or a table of `size`
// entries read by an index (`bias[h][bucket]`); either one for every head or
// one per head.
struct Param {
  std::string name;   // unique within the attention plan (e.g. "decay.rate")
  bool per_head = false;
  bool learned = false;
  int size = 0;       // entries of a table; 0: a value, not a table
  // Row-major (head, entry): (per_head ? heads : 1) x max(size, 1) values.
  std::vector<double> init;
  bool table() const { return size > 0; }
  // Values one head sees: 1 for a value, `size` for a table.
  int width() const { return size > 0 ? size : 1; }
  // Every initial value, row-major (head, entry): (per_head ? heads : 1) x
  // width(); a single declared value fills them all.
  std::vector<double> initialValues(int heads) const;
};

// A score formula, as a flat list of nodes in topological order: every
// operand index is smaller than the node's own index; the last node is the
// result. The score tensor has shape (batch, heads, queries, keys); q.channel
// varies along queries, k.channel along keys, `head` along heads.
struct FormulaNode {
  // The operations of the expression language (compiler/expr/ops.def):
  // leaves (Const: value; Score: the score before this term; QChannel,
  // KChannel: a channel of the query or key token; Head: the head index
  // 0..H-1; Param: index into AttentionPlan::params, per-head params indexed
  // by head implicitly, `rate[h]`), operations on nodes a, b, c, and Lookup:
  // the entry of table `param` at index node a (`bias[h][a]`, the head's
  // row of a per-head table).
  using Op = expr::Op;
  Op op = Op::Const;
  double value = 0.0;
  Channel channel = Channel::Position;
  int param = -1;
  int a = -1, b = -1, c = -1;
};

struct Formula {
  std::vector<FormulaNode> nodes;
  std::string text;  // canonical rendering, for dumps and error messages
};

// score <- formula(score, ...) for every (query, key) pair except where the
// key's kind is in exempt_keys or the query's kind is in exempt_queries, where
// the score passes through unchanged. Terms apply in plan order, after the
// rotated dot product is scaled by 1/sqrt(head_dim), before the causal mask.
struct ScoreTerm {
  std::string name;  // e.g. "decay"
  Formula formula;
  KindSet exempt_keys;
  KindSet exempt_queries;
  std::vector<int> heads;  // empty: every head
  std::string origin;
};

struct AttentionPlan {
  std::vector<AbsoluteEmbedding> embeddings;
  std::vector<Rotation> rotations;
  std::vector<KeyZeroing> key_zeroing;
  std::vector<ScoreTerm> score_terms;
  std::vector<Param> params;
  bool null_slot = false;  // a learned key/value with score 0 that is not a token
  std::vector<ChannelSampling> sampled_channels;  // at most one per channel
};

// The name under which each of `attention.params` is a tensor of a model
// (`score_params.<name>` in a checkpoint): the plan's name with every
// character that is not a letter or digit written '_', made unique by the
// parameter's index where two would meet.
std::vector<std::string> parameterTensorNames(const AttentionPlan& attention);

// ---------------------------------------------------------------------------
// Training and evaluation.
enum class Schedule : uint8_t { Constant, Cosine, Linear };
enum class DecayScope : uint8_t { Matrices, All };

struct TrainPlan {
  int steps = 16000;
  int batch = 64;
  double lr = 1e-3;
  double min_lr_ratio = 0.1;  // cosine/linear decay to lr * min_lr_ratio
  double beta1 = 0.9, beta2 = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.1;
  // Which tensors weight_decay shrinks: Matrices (posc's default, GPT-2's
  // practice: every tensor of two or more dimensions, embeddings included)
  // or All (norm gains and biases too, as MLX's AdamW does by default).
  DecayScope decay_scope = DecayScope::Matrices;
  // Adam's bias correction of its moment estimates (Kingma & Ba 2015, as
  // PyTorch's AdamW). false: the step is lr m / (sqrt(v) + eps) with the raw
  // moments, MLX's default, whose first steps are about 3x larger.
  bool bias_correction = true;
  int warmup = 0;
  Schedule schedule = Schedule::Cosine;
  double grad_clip = 1.0;  // <= 0: no clipping
  std::vector<uint64_t> seeds{0};
  int checkpoint_every = 0;  // 0: only the final checkpoint
  int log_every = 50;
  // Warm start: load the final checkpoint of experiment `init_from` (same
  // seed) before training. Parameters absent there keep their initial values.
  std::optional<std::string> init_from;
  // Warm start from a safetensors file instead (GPT names, the same file for
  // every seed): an absolute path, resolved against the experiment's folder.
  std::optional<std::string> init_file;
};

// A published exact-match figure at one test length, in percent, one value
// per seed (in the plan's seed order), printed beside the measured accuracy.
struct PublishedAccuracy {
  int digits = 0;
  std::vector<double> percent;
};

// Which problems the final evaluation decodes.
enum class EvalProtocol : uint8_t {
  Lengths,     // task.test_digits x task.problems_per_length
  AdderBoard,  // the public 10-digit leaderboard's 10 edge cases + 10,000 seeded pairs
};

// A release criterion of the document protocol: the Wilson 95% lower bound
// of the cells that match (task, and a length, depth or distractor count
// when given), pooled over their documents, must reach `threshold`.
inline constexpr double kWilsonZ95 = 1.96;  // the normal quantile of a two-sided 95% interval
struct DocumentRequirement {
  DocumentTask task = DocumentTask::Retrieval;
  std::optional<int> length;
  std::optional<double> depth;
  std::optional<int> distractors;
  double threshold = 0.9;
  std::string text;  // canonical: "lower_bound(retrieval, length = 1024) >= 0.9"
};

// The factorial protocol over document tasks: every cell of tasks x lengths
// x depths x distractors (or a seeded `fraction` of them) on `problems`
// independently generated documents (seeded by task.test_seed); cells at or
// below task.documents.train_max_length form the short-context regression set.
// The front end fills in what the file leaves out: tasks, the training tasks;
// lengths, the longest training length times 1, 2, 4, 8 and 16; distractors,
// the largest training count.
struct DocumentEvalPlan {
  std::vector<DocumentTask> tasks;
  std::vector<int> lengths;  // prompt tokens
  std::vector<double> depths{0.0, 0.25, 0.5, 0.75, 1.0};
  std::vector<int> distractors;
  int templates = 3;
  int problems = 50;
  double absent_share = 0.0;
  double fraction = 1.0;
  std::vector<DocumentRequirement> requirements;
};

struct EvalPlan {
  EvalProtocol protocol = EvalProtocol::Lengths;
  DocumentEvalPlan documents;  // task.kind == Documents
  int batch = 90;      // problems decoded together
  int every = 0;       // 0: only after training
  std::vector<PublishedAccuracy> published;
  std::string published_source;  // where the figures come from
};

// ---------------------------------------------------------------------------
// A hand-set model: every weight written in the source. No normalisation, no
// learned parameters; computed in float64. Matrices are (out, in) as in
// y = W x + b. A tensor that was not written is absent: all zeros, and no
// parameter of any counting rule.
struct WeightTensor {
  bool present = false;
  int rows = 0, cols = 0;     // a vector (bias) has cols = 1
  std::vector<double> values; // row-major, rows * cols
  // Per entry: index into HandsetModel::shared when the entry was written as
  // a shared name (a tied value), else -1.
  std::vector<int> tie;
  std::string name;           // e.g. "layer 1 query_bias", for dumps and counts
  double at(int r, int c) const { return values[static_cast<size_t>(r) * cols + c]; }
};

struct HandsetLayer {
  int width = 0;       // residual width inside this layer (>= the previous one;
                       // the residual is zero-extended on entry)
  int heads = 0;       // 0: no attention in this layer
  int head_dim = 0;
  int mlp_hidden = 0;  // 0: no feed-forward in this layer
  // Attention: q = query x + query_bias (heads * head_dim), likewise key and
  // value; out maps the concatenated heads back to the width.
  WeightTensor query, query_bias, key, key_bias, value, value_bias, out, out_bias;
  // Per head: score -= slope * (query position - key position). Zero: no ALiBi.
  std::vector<double> alibi;
  // ReGLU: down (relu(gate x + gate_bias) * (up x + up_bias)) + down_bias.
  WeightTensor gate, gate_bias, up, up_bias, down, down_bias;
};

struct SharedValue {
  std::string name;
  double value = 0;
};

struct HandsetModel {
  int vocab = 0;          // rows of the embedding (the task's vocabulary)
  int embed_width = 0;
  WeightTensor embed;     // (vocab, embed_width)
  std::vector<HandsetLayer> layers;
  bool identity_head = false;  // logits = the final residual (width == vocab)
  WeightTensor unembed;        // (vocab, final width) when not identity
  std::vector<SharedValue> shared;
  int finalWidth() const { return layers.empty() ? embed_width : layers.back().width; }
};

// ---------------------------------------------------------------------------
// Probes: measurements on trained checkpoints, without retraining. Declared in
// a `probes { ... }` section (one call per probe), run after training and by
// `posc probe FILE --from RUN_DIR`. Each writes <run>/probes/<name>.{csv,md,svg}.
// One struct for every kind; each kind reads only the fields listed for it.
enum class ProbeKind : uint8_t {
  Reach,          // accuracy against length on a grid; the longest length at or above a threshold
  SinkShare,      // attention mass on separator keys per layer, head, answer place and length
  Kernel,         // score of a real query on its real target key, the key's column swept
  Bands,          // a head's score on target, strongest alias and sink split by rotation-pair period
  TeacherForced,  // every decision of N problems scored on its own; errors by place and carry chain
  Stop,           // where each head looks at the stop decision, by key group and length; its sink's margin
  EvidenceMass,   // documents: a head's attention on the evidence key against N distractors, fitted margin per length
};
const char* probeKindName(ProbeKind k);

// A (layer, head) choice; -1 means "chosen by the probe" (the head that puts
// the most attention on the target key at the training lengths).
struct HeadChoice {
  int layer = -1;
  int head = -1;
};

struct ProbePlan {
  ProbeKind kind = ProbeKind::Reach;
  std::string name;              // output file stem, the kind's name in the source
  std::vector<int> lengths;      // Reach, SinkShare, Bands, Stop: operand lengths in digits;
                                 // EvidenceMass: prompt lengths in tokens
  int length = 0;                // Kernel, TeacherForced: operand length in digits
  int problems = 0;              // problems per length
  uint64_t problem_seed = 0;     // the probe's problems depend only on this and the length
  double threshold = 0.9;        // Reach: accuracy (0..1) the reach must keep
  int place = 1;                 // Kernel, Bands: answer place (units = 1) whose decision is probed
  int operand = 0;               // Kernel, Bands: the target is this operand's digit in the same column
  int sweep_begin = 0, sweep_end = 0;  // Kernel: key column offsets [begin, end) from the target
  int window = 10;               // Kernel: window width (columns) of the windowed maxima
  int far = 100;                 // Kernel: windows at |offset| >= far are "far"
  double fast_period = 20;       // Bands: period (columns) below which a pair is "fast"
  double slow_period = 200;      // Bands: period above which a pair is "slow"
  HeadChoice head;               // Kernel, Bands, EvidenceMass (chosen: the most evidence mass
                                 // at the shortest length)
  int lookup_heads = 2;          // TeacherForced: how many main lookup heads to report
  std::vector<int> distractors;  // EvidenceMass: distractor counts N (each >= 1) at every length
};

// ---------------------------------------------------------------------------
struct ExperimentPlan {
  std::string name;
  std::string source_path;   // the .pos file the experiment was compiled from
  std::string preset;        // applied preset, or empty
  std::vector<std::string> overrides;  // --set key=value, in order
  TaskPlan task;
  ModelPlan model;
  AttentionPlan attention;
  TrainPlan train;
  EvalPlan eval;
  std::optional<HandsetModel> handset;  // present: weights are written, nothing is trained
  std::vector<ProbePlan> probes;  // in declaration order
};

// Stable, human-readable text used by `posc emit plan` and golden tests.
std::string dumpPlan(const ExperimentPlan& plan);
// What a plan computes: its dump without the source locations, so that an
// edit which only moves lines (a comment added above a `use`) leaves it
// unchanged. A run's identity (resuming it, a study skipping it as finished)
// is a hash of this text.
std::string dumpIdentity(const ExperimentPlan& plan);
// What a plan trains: dumpIdentity without what only the evaluation after
// training reads (the probes, the `eval` section, the task's test lengths,
// problems per length and test seed, and the overrides of those settings).
// Two plans with the same training identity train the same weights, so a
// finished run of one is evaluated and probed for the other without training
// again. With `eval.every` > 0 the evaluation runs during training and its
// records are part of the training log: then only the probes are left out.
std::string dumpTrainingIdentity(const ExperimentPlan& plan);
// What a trained model's weights mean: the task's tokenisation line and the
// `model` and `attention` sections of a plan dump, without the source
// locations. Two dumps that differ here describe different models (a probe
// of one run with the other's plan would measure the wrong thing); other
// sections (training, evaluation, probes, overrides) may differ freely.
// Returns the first differing line of each, or nullopt when they agree.
struct DumpDifference {
  std::string recorded, current;  // "(missing)" for a line one side lacks
};
std::optional<DumpDifference> modelDifference(const std::string& recorded_dump, const std::string& current_dump);
std::string renderFormula(const Formula& f, const AttentionPlan& attention);
// One line describing a probe and its settings (plan dumps, report pages).
std::string describeProbe(const ProbePlan& probe);

}  // namespace posc::plan
