// `posc emit plan`: the plan as stable, readable text. Golden tests compare
// it byte for byte, so every number is printed with a fixed format.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "compiler/plan/plan.h"

namespace posc::plan {

namespace {

std::string num(double v) { return fmt::format("{:g}", v); }

std::string intList(const std::vector<int>& xs) {
  std::string out;
  for (int x : xs) out += (out.empty() ? "" : " ") + std::to_string(x);
  return "[" + out + "]";
}

std::string headChoice(const HeadChoice& h) {
  return fmt::format("layer {}, head {}", h.layer < 0 ? "auto" : std::to_string(h.layer),
                     h.head < 0 ? "auto" : std::to_string(h.head));
}

std::string kinds(KindSet s) {
  if (s.empty()) return "none";
  std::string out;
  for (TokenKind k : {TokenKind::Digit, TokenKind::Separator, TokenKind::Special})
    if (s.contains(k)) out += (out.empty() ? "" : ", ") + std::string(tokenKindName(k));
  return "{" + out + "}";
}

std::string heads(const std::vector<int>& hs) {
  if (hs.empty()) return "every head";
  std::string out;
  for (int h : hs) out += (out.empty() ? "" : " ") + std::to_string(h);
  return (hs.size() == 1 ? "head " : "heads ") + out;
}

std::string distribution(const Distribution& d) {
  switch (d.kind) {
    case Distribution::Kind::Fixed: return fmt::format("fixed {}", num(d.a));
    case Distribution::Kind::Uniform: return fmt::format("uniform({}, {}), {} at evaluation", num(d.a), num(d.b), num(d.eval_value));
    case Distribution::Kind::LogUniform: return fmt::format("log_uniform({}, {}), {} at evaluation", num(d.a), num(d.b), num(d.eval_value));
  }
  return "?";
}

std::string render(const Formula& f, const AttentionPlan& attention, int i, int parent) {
  using Op = FormulaNode::Op;
  const FormulaNode& n = f.nodes[static_cast<size_t>(i)];
  std::string s;
  const expr::OpInfo& op = expr::info(n.op);
  int p = op.precedence;
  switch (n.op) {
    case Op::Const: s = num(n.value); if (n.value < 0) p = 7; break;
    case Op::Score: s = "s"; break;
    case Op::QChannel: s = std::string("q.") + channelName(n.channel); break;
    case Op::KChannel: s = std::string("k.") + channelName(n.channel); break;
    case Op::Head: s = "h"; break;
    case Op::Param: {
      const Param& prm = attention.params[static_cast<size_t>(n.param)];
      s = prm.name + (prm.per_head ? "[h]" : "");
      break;
    }
    case Op::Lookup: {
      const Param& prm = attention.params[static_cast<size_t>(n.param)];
      s = prm.name + (prm.per_head ? "[h]" : "") + "[" + render(f, attention, n.a, 0) + "]";
      break;
    }
    default: {
      // Operators by their symbol (prefix, infix, c ? a : b), the rest as calls.
      auto arg = [&](int x, int prec) { return render(f, attention, x, prec); };
      if (op.symbol && op.arity == 1) {
        s = op.symbol + arg(n.a, p);
      } else if (op.symbol && op.arity == 2) {
        bool right_assoc = n.op == Op::Pow;
        s = fmt::format("{} {} {}", arg(n.a, right_assoc ? p + 1 : p), op.symbol, arg(n.b, right_assoc ? p : p + 1));
      } else if (n.op == Op::Select) {  // rendered as where(c, a, b), like a call
        s = fmt::format("where({}, {}, {})", arg(n.a, 0), arg(n.b, 0), arg(n.c, 0));
        p = 9;
      } else {
        s = std::string(op.function) + "(" + arg(n.a, 0);
        if (op.arity >= 2) s += ", " + arg(n.b, 0);
        if (op.arity >= 3) s += ", " + arg(n.c, 0);
        s += ")";
      }
    }
  }
  return p < parent ? "(" + s + ")" : s;
}

}  // namespace

std::string describeProbe(const ProbePlan& pr) {
  switch (pr.kind) {
    case ProbeKind::Reach:
      return fmt::format("reach: accuracy at {} digits, {} problems each (problem seed {}); reach = longest length "
                         "up to which every length is >= {}",
                         intList(pr.lengths), pr.problems, pr.problem_seed, num(pr.threshold));
    case ProbeKind::SinkShare:
      return fmt::format("sink_share: attention on separator keys per layer, head and answer place at {} digits, "
                         "{} problems each (problem seed {})",
                         intList(pr.lengths), pr.problems, pr.problem_seed);
    case ProbeKind::Kernel:
      return fmt::format("kernel: decision for answer place {} at {} digits, target operand {} in the same column; "
                         "key column swept over offsets {}..{}, maxima per {} columns, far from {}; {} (problem seed {})",
                         pr.place, pr.length, pr.operand, pr.sweep_begin, pr.sweep_end, pr.window, pr.far,
                         headChoice(pr.head), pr.problem_seed);
    case ProbeKind::Bands:
      return fmt::format("bands: decision for answer place {} at {} digits, target operand {}; pairs fast < {} <= mid "
                         "<= {} < slow columns; {}, {} problems each (problem seed {})",
                         pr.place, intList(pr.lengths), pr.operand, num(pr.fast_period), num(pr.slow_period),
                         headChoice(pr.head), pr.problems, pr.problem_seed);
    case ProbeKind::TeacherForced:
      return fmt::format("teacher_forced: every decision of {} problems at {} digits (problem seed {}); separator "
                         "share of the {} main lookup heads",
                         pr.problems, pr.length, pr.problem_seed, pr.lookup_heads);
    case ProbeKind::Stop:
      return fmt::format("stop: attention of every head at the stop decision (the <eos> decision, teacher-forced) by "
                         "key group, at {} digits, {} problems each (problem seed {})",
                         intList(pr.lengths), pr.problems, pr.problem_seed);
    case ProbeKind::EvidenceMass:
      return fmt::format("evidence_mass: attention of {} at the last prompt token on the evidence statement against "
                         "N = {} distractor statements, retrieval documents of {} tokens, {} each (problem seed {}); "
                         "margin fitted to 1 / (1 + N e^-margin) per length",
                         headChoice(pr.head), intList(pr.distractors), intList(pr.lengths), pr.problems, pr.problem_seed);
  }
  return "?";
}

std::string renderFormula(const Formula& f, const AttentionPlan& attention) {
  if (f.nodes.empty()) return "s";
  return render(f, attention, static_cast<int>(f.nodes.size()) - 1, 0);
}

namespace {

// A hand-set model: shapes, every non-zero entry, the shared values.
template <typename Line>
void dumpHandset(const ExperimentPlan& p, Line& line) {
  const HandsetModel& h = *p.handset;
  line("model hand-set (float64, no normalisation, nothing trained)");
  line(fmt::format("  vocabulary {}, embedding width {}, {}, {}", h.vocab, h.embed_width,
                   p.model.softmax == SoftmaxKind::Standard ? "softmax" : "softmax1 (1 + sum in the denominator)",
                   h.identity_head ? "identity output head" : "written output head"));
  auto exact = [](double v) { return fmt::format("{}", v); };  // shortest text that reads back the same double
  for (const SharedValue& s : h.shared) line(fmt::format("  shared {} = {}", s.name, exact(s.value)));
  auto tensor = [&](const WeightTensor& t) {
    if (!t.present) return;
    std::string entries;
    int nonzero = 0;
    for (int r = 0; r < t.rows; ++r)
      for (int c = 0; c < t.cols; ++c) {
        size_t i = static_cast<size_t>(r) * t.cols + c;
        if (t.values[i] == 0) continue;
        ++nonzero;
        std::string value = t.tie[i] >= 0 ? h.shared[static_cast<size_t>(t.tie[i])].name : exact(t.values[i]);
        entries += fmt::format(" {}={}", t.cols == 1 ? fmt::format("[{}]", r) : fmt::format("[{},{}]", r, c), value);
      }
    line(fmt::format("  {} {}x{}: {} non-zero{}", t.name, t.rows, t.cols, nonzero, entries.empty() ? "" : ":" + entries));
  };
  tensor(h.embed);
  for (size_t i = 0; i < h.layers.size(); ++i) {
    const HandsetLayer& l = h.layers[i];
    std::string slopes;
    for (double s : l.alibi) slopes += (slopes.empty() ? "" : ", ") + exact(s);
    line(fmt::format("  layer {}: width {}, {} heads x {}, ALiBi slopes [{}], ReGLU hidden {}", i + 1, l.width, l.heads,
                     l.head_dim, slopes, l.mlp_hidden));
    for (const WeightTensor* t : {&l.query, &l.query_bias, &l.key, &l.key_bias, &l.value, &l.value_bias, &l.out,
                                  &l.out_bias, &l.gate, &l.gate_bias, &l.up, &l.up_bias, &l.down, &l.down_bias})
      tensor(*t);
  }
  tensor(h.unembed);
  line("eval");
  line(fmt::format("  {}, greedy decoding, one full forward pass per emitted token",
                   p.eval.protocol == EvalProtocol::AdderBoard
                       ? "protocol adderboard: 10 edge cases + 10,000 pairs of random.Random(2025)"
                       : "test lengths from the task"));
}

template <typename Line>
void dumpAddition(const ExperimentPlan& p, Line& line) {
  const TaskPlan& t = p.task;
  line("task addition");
  line(fmt::format("  {} operands, {} digit{} per token, {}", t.operands, t.digits_per_token,
                   t.digits_per_token == 1 ? "" : "s",
                   t.order == DigitOrder::Reversed ? "reversed (units first)"
                   : t.order == DigitOrder::Padded  ? "padded (most significant first)"
                                                    : "padded, reversed (units first)"));
  line(fmt::format("  training operands of {}..{} digits, {}fresh every batch", t.train_min_digits, t.train_max_digits,
                   t.sampling == OperandSampling::Values       ? "each value equally likely, "
                   : t.sampling == OperandSampling::SameLength ? "one length per problem for all operands, "
                   : t.sampling == OperandSampling::Mixed
                       ? "half the problems one length for all operands, half each operand its own, "
                       : ""));
  if (isPadded(t.order) && t.padded_width > t.train_max_digits)
    line(fmt::format("  operands zero-padded to {} digits", t.padded_width));
  std::string tests;
  for (int d : t.test_digits) tests += (tests.empty() ? "" : " ") + std::to_string(d);
  line(fmt::format("  test digits [{}], {} problems each, test seed {}", tests, t.problems_per_length, t.test_seed));
  if (t.bos) line("  a <bos> token opens every sequence");
  line("  channels: position, column, row, kind");
}

std::string taskList(const std::vector<DocumentTask>& tasks) {
  std::string out;
  for (DocumentTask task : tasks) out += (out.empty() ? "" : ", ") + std::string(documentTaskName(task));
  return "[" + out + "]";
}

template <typename Line>
void dumpDocuments(const ExperimentPlan& p, Line& line) {
  const DocumentTaskPlan& d = p.task.documents;
  line("task documents " + taskList(d.tasks));
  const std::string prompts =
      d.filler ? fmt::format("training prompts of {}..{} tokens, evidence depth uniform in [0, 1]", d.train_min_length,
                             d.train_max_length)
               : "training prompts without filler (the statements alone), evidence depth uniform in [0, 1] among them";
  line(fmt::format("  {}, distractors from {}, {} template{}, fresh every batch; review questions on every statement "
                   "after the drawn one",
                   prompts, intList(d.train_distractors), d.templates, d.templates == 1 ? "" : "s"));
  line(fmt::format("  evidence absent in {} of retrieval and composition documents{}; contradictions: rule {}",
                   num(d.absent_share), d.near_duplicates ? ", distractor keys near-duplicates" : "",
                   authorityName(d.authority)));
  line("  a <bos> token opens every document");
  line("  channels: position, column 0, row 0, kind (content digit, marker separator, special), segment");
}

template <typename Line>
void dumpDocumentEval(const ExperimentPlan& p, Line& line) {
  const DocumentEvalPlan& e = p.eval.documents;
  std::string depths;
  for (double v : e.depths) depths += (depths.empty() ? "" : ", ") + num(v);
  line(fmt::format("  protocol {} x lengths {} x depths [{}] x distractors {}{}", taskList(e.tasks), intList(e.lengths),
                   depths, intList(e.distractors),
                   e.fraction < 1 ? fmt::format(", a seeded {} of the cells", num(e.fraction)) : ""));
  line(fmt::format("  {} documents per cell, {} template{}, evidence absent in {}, test seed {}; regression set: "
                   "lengths <= {}",
                   e.problems, e.templates, e.templates == 1 ? "" : "s", num(e.absent_share), p.task.test_seed,
                   p.task.documents.train_max_length));
  for (const DocumentRequirement& r : e.requirements) line("  require " + r.text);
}

}  // namespace

std::string dumpPlan(const ExperimentPlan& p) {
  std::string o;
  auto line = [&](const std::string& s) { o += s + "\n"; };
  line(fmt::format("experiment {}", p.name));
  if (!p.preset.empty()) line(fmt::format("  preset {}", p.preset));
  for (const std::string& s : p.overrides) line(fmt::format("  override {}", s));

  const TaskPlan& t = p.task;
  if (t.kind == TaskKind::Documents)
    dumpDocuments(p, line);
  else
    dumpAddition(p, line);
  if (p.handset) {
    dumpHandset(p, line);
    return o;
  }

  const ModelPlan& m = p.model;
  line("model");
  line(fmt::format("  {} layers, width {}, {} heads x {} (= {} rotation pairs per head){}", m.layers, m.width, m.heads,
                   m.head_dim, m.head_dim / 2,
                   m.kvHeads() != m.heads ? fmt::format(", {} key/value heads", m.kvHeads()) : ""));
  line(fmt::format("  mlp {} hidden {}, {}, {} embeddings", mlpName(m.mlp), m.mlp_hidden, normName(m.norm),
                   m.tied_embeddings ? "tied" : "untied"));
  if (!m.bias || m.qk_norm)
    line(fmt::format("  {}{}{}", m.bias ? "" : "no biases", !m.bias && m.qk_norm ? ", " : "",
                     m.qk_norm ? "RMSNorm on queries and keys" : ""));
  line(fmt::format("  precision {}, {}{}",
                   m.precision == Precision::F32 ? "f32" : m.precision == Precision::F64 ? "f64" : "bf16 mixed",
                   m.softmax == SoftmaxKind::Standard ? "softmax" : "softmax1 (1 + sum in the denominator)",
                   m.dropout > 0 ? fmt::format(", dropout {}", num(m.dropout)) : ""));
  if (m.init == InitKind::PyTorch)
    line("  initial weights as PyTorch's modules draw them (U(+-1/sqrt(fan_in)), embeddings N(0, 1))");
  else if (m.init_std != ModelPlan{}.init_std)
    line(fmt::format("  initial weights N(0, {})", num(m.init_std)));
  if (m.embedding_std) line(fmt::format("  initial token embeddings N(0, {})", num(*m.embedding_std)));

  const AttentionPlan& a = p.attention;
  line("attention");
  bool any = false;
  for (const AbsoluteEmbedding& e : a.embeddings) {
    any = true;
    line(fmt::format("  embed {} {} embedding{}{}   [{}]",
                     e.kind == AbsoluteEmbedding::Kind::Learned ? "learned" : "sinusoidal", channelName(e.channel),
                     e.kind == AbsoluteEmbedding::Kind::Learned ? fmt::format(" (table of {})", e.max_index) : "",
                     e.train_offset > 0 ? fmt::format(", training offset 0..{} on nonzero indices", e.train_offset) : "",
                     e.origin));
  }
  for (const ChannelSampling& c : a.sampled_channels) {
    any = true;
    line(fmt::format("  randomise {}: each sequence's values relabelled by a sorted sample of 0..{} (training and "
                     "evaluation)   [{}]",
                     channelName(c.channel), c.range - 1, c.origin));
  }
  // Which pairs turn by what, head by head (merged when every head agrees).
  for (const Rotation& r : a.rotations) {
    any = true;
    line(fmt::format("  rotate pairs {}..{} of {} by {}, base {}{}{}{}   [{}]", r.pair_begin, r.pair_end, heads(r.heads),
                     channelName(r.channel), num(r.base),
                     r.stretch ? ", stretch " + distribution(*r.stretch) : "",
                     r.xpos_scale_base > 0 ? ", xpos scale base " + num(r.xpos_scale_base) : "",
                     r.interpolate != 1 || r.yarn_length > 0
                         ? fmt::format(", interpolated by {}{}", num(r.interpolate),
                                       r.yarn_length > 0 ? fmt::format(" (YaRN ramp {}..{} turns within {})", num(r.yarn_alpha),
                                                                       num(r.yarn_beta), num(r.yarn_length))
                                                         : "")
                         : "",
                     r.origin));
  }
  {
    // Pairs no rotation covers (on every head): NoPE pairs.
    int pairs = m.head_dim / 2;
    std::vector<bool> covered(static_cast<size_t>(pairs), false);
    for (const Rotation& r : a.rotations)
      if (r.heads.empty())
        for (int i = r.pair_begin; i < r.pair_end; ++i) covered[static_cast<size_t>(i)] = true;
    int start = -1;
    std::string free;
    for (int i = 0; i <= pairs; ++i) {
      bool c = i == pairs || covered[static_cast<size_t>(i)];
      if (!c && start < 0) start = i;
      if (c && start >= 0) {
        free += (free.empty() ? "" : ", ") + fmt::format("{}..{}", start, i);
        start = -1;
      }
    }
    if (!free.empty() && !a.rotations.empty()) line(fmt::format("  pairs {} are not rotated on every head", free));
    if (a.rotations.empty() && (!a.embeddings.empty() || !a.score_terms.empty() || a.null_slot))
      line("  no rotation: queries and keys carry no rotary position");
  }
  for (const KeyZeroing& z : a.key_zeroing) {
    any = true;
    line(fmt::format("  sink: keys of kind {} have pairs {}..{} zeroed on {}   [{}]", kinds(z.kinds), z.pair_begin,
                     z.pair_end, heads(z.heads), z.origin));
  }
  for (const Param& prm : a.params) {
    any = true;
    auto list = [&](size_t begin, size_t end) {
      std::string values;
      for (size_t i = begin; i < end; ++i) values += (values.empty() ? "" : ", ") + num(prm.init[i]);
      return values;
    };
    if (!prm.table()) {
      line(fmt::format("  param {}{} {} = {}{}{}", prm.name, prm.per_head ? "[h]" : "", prm.learned ? "learned, from" : "fixed",
                       prm.per_head ? "[" : "", list(0, prm.init.size()), prm.per_head ? "]" : ""));
      continue;
    }
    // A table: one value when every entry starts equal, else its rows.
    std::string values;
    if (std::all_of(prm.init.begin(), prm.init.end(), [&](double v) { return v == prm.init.front(); })) {
      values = num(prm.init.front()) + " in every entry";
    } else {
      const size_t w = static_cast<size_t>(prm.size);
      for (size_t r = 0; r < prm.init.size() / w; ++r)
        values += (r ? ", [" : "[") + list(r * w, (r + 1) * w) + "]";
      if (prm.per_head) values = "[" + values + "]";
    }
    line(fmt::format("  param {}{}[{}] table {} = {}", prm.name, prm.per_head ? "[h]" : "", prm.size,
                     prm.learned ? "learned, from" : "fixed", values));
  }
  for (const ScoreTerm& s : a.score_terms) {
    any = true;
    line(fmt::format("  score {}: s <- {}   [{}]", s.name, renderFormula(s.formula, a), s.origin));
    line(fmt::format("    exempt keys {}, exempt queries {}, on {}", kinds(s.exempt_keys), kinds(s.exempt_queries),
                     heads(s.heads)));
  }
  if (a.null_slot) {
    any = true;
    line("  null slot: one extra key with score 0 and a learned value per head");
  }
  if (!any) line("  no positional components (NoPE): attention sees content and the causal mask only");

  const TrainPlan& tr = p.train;
  line("train");
  line(fmt::format("  {} steps, batch {}, adamw lr {} betas ({}, {}) eps {} weight decay {}{}{}", tr.steps, tr.batch,
                   num(tr.lr), num(tr.beta1), num(tr.beta2), num(tr.eps), num(tr.weight_decay),
                   tr.decay_scope == DecayScope::All ? " on every tensor" : "",
                   tr.bias_correction ? "" : ", no bias correction"));
  line(fmt::format("  schedule {}, warm-up {} steps{}, grad clip {}",
                   tr.schedule == Schedule::Cosine ? "cosine" : tr.schedule == Schedule::Linear ? "linear" : "constant",
                   tr.warmup, tr.schedule == Schedule::Constant ? "" : fmt::format(", down to {} x lr", num(tr.min_lr_ratio)),
                   tr.grad_clip > 0 ? num(tr.grad_clip) : "off"));
  std::string seeds;
  for (uint64_t s : tr.seeds) seeds += (seeds.empty() ? "" : " ") + std::to_string(s);
  line(fmt::format("  seeds [{}], checkpoint {}, log every {} steps", seeds,
                   tr.checkpoint_every > 0 ? fmt::format("every {} steps", tr.checkpoint_every) : "at the end",
                   tr.log_every));
  if (tr.init_from) line(fmt::format("  warm start from the final checkpoint of '{}' (same seed)", *tr.init_from));
  if (tr.init_file) line(fmt::format("  warm start from {} (every seed)", *tr.init_file));
  line("eval");
  if (t.kind == TaskKind::Documents) dumpDocumentEval(p, line);
  if (p.eval.protocol == EvalProtocol::AdderBoard) line("  protocol adderboard: 10 edge cases + 10,000 pairs of random.Random(2025)");
  line(fmt::format("  greedy decoding with a KV cache, {} problems per batch{}", p.eval.batch,
                   p.eval.every > 0 ? fmt::format(", every {} steps", p.eval.every) : ""));
  if (!p.eval.published.empty()) {
    std::string figures;
    for (const PublishedAccuracy& a : p.eval.published) {
      std::string per_seed;
      for (double v : a.percent) per_seed += (per_seed.empty() ? "" : " / ") + num(v);
      figures += fmt::format("{}{}: {}", figures.empty() ? "" : ", ", a.digits, per_seed);
    }
    line(fmt::format("  published exact match (%) by digits: {}{}", figures,
                     p.eval.published_source.empty() ? "" : "  [" + p.eval.published_source + "]"));
  }
  if (!p.probes.empty()) {
    line("probes");
    for (const ProbePlan& pr : p.probes) line("  " + describeProbe(pr));
  }
  return o;
}

namespace {

// Drops a dump line's source location ("   [rope2d @ file.pos:17]"): it names
// where a line came from, not what it computes.
void stripSourceLocation(std::string& line) {
  if (const size_t at = line.rfind("   ["); at != std::string::npos && !line.empty() && line.back() == ']')
    line.resize(at);
}

// The model-defining lines of a dump (see modelDifference).
std::vector<std::string> modelLines(const std::string& dump) {
  std::vector<std::string> out;
  std::istringstream in(dump);
  std::string line, section;
  bool first_of_section = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != ' ') {
      section = line.substr(0, line.find(' '));
      first_of_section = true;
      if (section == "model" || section == "attention") out.push_back(section);
      continue;
    }
    const bool keep = section == "model" || section == "attention" || (section == "task" && first_of_section);
    first_of_section = false;
    if (!keep) continue;
    stripSourceLocation(line);
    out.push_back(line);
  }
  return out;
}

}  // namespace

std::string dumpIdentity(const ExperimentPlan& plan) {
  std::istringstream in(dumpPlan(plan));
  std::string out, line;
  while (std::getline(in, line)) {
    stripSourceLocation(line);
    out += line + "\n";
  }
  return out;
}

namespace {

// A setting that only the evaluation after training reads (an override's
// key): see dumpTrainingIdentity.
bool evaluationOnlySetting(const std::string& override_text) {
  const std::string key = override_text.substr(0, override_text.find('='));
  return key.rfind("eval.", 0) == 0 || key == "task.test_digits" || key == "task.problems_per_length" ||
         key == "task.test_seed";
}

}  // namespace

std::string dumpTrainingIdentity(const ExperimentPlan& plan) {
  ExperimentPlan trained = plan;
  trained.probes.clear();
  if (plan.eval.every == 0) {
    const EvalPlan defaults;
    trained.eval = defaults;
    trained.task.test_digits.clear();
    trained.task.problems_per_length = 0;
    trained.task.test_seed = 0;
    std::erase_if(trained.overrides, evaluationOnlySetting);
  }
  return dumpIdentity(trained);
}

std::optional<DumpDifference> modelDifference(const std::string& recorded_dump, const std::string& current_dump) {
  const std::vector<std::string> a = modelLines(recorded_dump), b = modelLines(current_dump);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "(missing)", y = i < b.size() ? b[i] : "(missing)";
    if (x != y) return DumpDifference{x, y};
  }
  return std::nullopt;
}

}  // namespace posc::plan
