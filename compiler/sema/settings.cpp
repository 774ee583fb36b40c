// The settings tables of task, model, train and eval.
#include "compiler/sema/settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <type_traits>

namespace posc::sema {

namespace {

using Kind = Value::Kind;

// Checks a setting's value and writes it into the plan. With `shown` set, it
// instead writes the plan's current value there as text, reading nothing:
// run on a default plan, every setter that goes through it tells its default
// (`posc help settings`), so no default is written twice.
struct Checker {
  const Value& v;
  DiagnosticEngine& diags;
  std::string setting;
  std::string* shown = nullptr;

  template <typename T>
  static std::string text(const T& x) {
    if constexpr (std::is_floating_point_v<T>) return fmt::format("{:g}", x);
    else return fmt::format("{}", x);
  }

  bool fail(const std::string& wanted) {
    diags.error(v.range, fmt::format("'{}' takes {}, not {}", setting, wanted, v.describe()));
    return false;
  }
  bool integer(long long lo, long long hi, long long& out) {
    if (shown) return *shown = text(out), true;
    if (!v.isInteger()) return fail(hi == LLONG_MAX ? fmt::format("an integer >= {}", lo) : fmt::format("an integer in {}..{}", lo, hi));
    long long x = static_cast<long long>(v.number);
    if (x < lo || x > hi) {
      diags.error(v.range, hi == LLONG_MAX ? fmt::format("'{}' must be at least {}, got {}", setting, lo, x)
                                           : fmt::format("'{}' must be between {} and {}, got {}", setting, lo, hi, x));
      return false;
    }
    out = x;
    return true;
  }
  template <typename T>
  bool integer(long long lo, long long hi, T& out) {
    if (shown) return *shown = text(out), true;
    long long x;
    if (!integer(lo, hi, x)) return false;
    out = static_cast<T>(x);
    return true;
  }
  // A list of integers, a single integer, or a half-open range a..b.
  template <typename T>
  bool integers(long long lo, long long hi, const char* non_empty, std::vector<T>& out) {
    if (shown) {
      *shown = "[";
      for (size_t i = 0; i < out.size(); ++i) *shown += (i ? ", " : "") + text(out[i]);
      *shown += "]";
      return true;
    }
    std::vector<T> values;
    std::set<long long> seen;
    if (v.kind == Kind::Range) {
      if (v.lo < v.hi && (v.lo < lo || v.hi - 1 > hi))
        return fail(fmt::format("integers in {}..{} (the range {}..{} leaves them)", lo, hi, v.lo, v.hi));
      if (v.hi - v.lo > kMaxListLength)
        return fail(fmt::format("at most {} values (the range {}..{} holds {})", kMaxListLength, v.lo, v.hi, v.hi - v.lo));
      for (long long i = v.lo; i < v.hi; ++i) values.push_back(static_cast<T>(i));
    } else {
      for (const Value& e : v.kind == Kind::List ? v.elements : std::vector<Value>{v}) {
        Checker element{e, diags, setting};
        T x{};
        if (!element.integer(lo, hi, x)) return false;
        // Every list of integers among the settings (seeds, lengths, counts)
        // is a set: a repeat would train or evaluate the same thing twice.
        if (!seen.insert(static_cast<long long>(x)).second) {
          diags.error(e.range, fmt::format("'{}' lists {} twice", setting, x)).hint = "each value once";
          return false;
        }
        values.push_back(x);
      }
    }
    if (values.empty()) return fail(non_empty);
    out = std::move(values);
    return true;
  }
  bool real(double lo, double hi, double& out, bool lo_open = false) {
    if (shown) return *shown = text(out), true;
    if (v.kind != Kind::Number || !std::isfinite(v.number)) return fail("a number");
    if (v.number < lo || (lo_open && v.number == lo) || v.number > hi) {
      diags.error(v.range, fmt::format("'{}' must be {} {:g}{}, got {:g}", setting, lo_open ? ">" : ">=", lo,
                                       std::isinf(hi) ? "" : fmt::format(" and <= {:g}", hi), v.number));
      return false;
    }
    out = v.number;
    return true;
  }
  bool boolean(bool& out) {
    if (shown) return *shown = out ? "true" : "false", true;
    if (v.kind != Kind::Bool) return fail("true or false");
    out = v.boolean;
    return true;
  }
  template <typename E>
  bool word(const std::vector<std::pair<std::string, E>>& words, E& out) {
    if (shown) {
      for (auto& [n, e] : words)
        if (e == out) *shown = n;
      return true;
    }
    std::vector<std::string> names;
    for (auto& [n, e] : words) names.push_back(n);
    std::string list;
    for (size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + names[i];
    if (v.kind != Kind::Symbol) return fail("one of " + list);
    for (auto& [n, e] : words)
      if (n == v.text) { out = e; return true; }
    Diagnostic& d = diags.error(v.range, fmt::format("'{}' is not a valid {}; expected one of {}", v.text, setting, list));
    suggest(d, v.text, names);
    return false;
  }
};

// A list of words (or one word), e.g. the document tasks.
template <typename E>
bool wordList(Checker& c, const std::vector<std::pair<std::string, E>>& words, std::vector<E>& out) {
  if (c.shown) {
    *c.shown = "[";
    for (size_t i = 0; i < out.size(); ++i)
      for (auto& [n, e] : words)
        if (e == out[i]) *c.shown += (i ? ", " : "") + n;
    *c.shown += "]";
    return true;
  }
  std::vector<E> values;
  // Each element is checked as one word: "'ordr' is not a valid task".
  const std::string noun = c.setting.size() > 1 && c.setting.back() == 's' ? c.setting.substr(0, c.setting.size() - 1) : c.setting;
  for (const Value& e : c.v.kind == Kind::List ? c.v.elements : std::vector<Value>{c.v}) {
    Checker element{e, c.diags, noun};
    E x{};
    if (!element.word(words, x)) return false;
    if (std::find(values.begin(), values.end(), x) != values.end()) {
      c.diags.error(e.range, fmt::format("'{}' is listed twice", e.text));
      return false;
    }
    values.push_back(x);
  }
  if (values.empty()) return c.fail("at least one value");
  out = std::move(values);
  return true;
}

const std::vector<std::pair<std::string, plan::DocumentTask>>& documentTaskWords() {
  static const std::vector<std::pair<std::string, plan::DocumentTask>> words = [] {
    std::vector<std::pair<std::string, plan::DocumentTask>> out;
    for (int i = 0; i < plan::kDocumentTaskCount; ++i) {
      auto t = static_cast<plan::DocumentTask>(i);
      out.emplace_back(plan::documentTaskName(t), t);
    }
    return out;
  }();
  return words;
}

struct Setting {
  std::string name;
  std::string type;
  std::string help;
  std::function<bool(Checker&, SettingsContext&)> apply;
};

using Table = std::vector<Setting>;

const std::map<std::string, Table>& tables() {
  static const std::map<std::string, Table> t = {
      {"task",
       {
           {"kind", "addition | documents", "the task: multi-operand addition, or long-context documents",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::TaskKind>({{"addition", plan::TaskKind::Addition}, {"documents", plan::TaskKind::Documents}},
                                            x.plan.task.kind);
            }},
           {"operands", "int >= 2", "how many numbers are added",
            [](Checker& c, SettingsContext& x) { return c.integer(2, 1000, x.plan.task.operands); }},
           {"digits_per_token", "int 1..4", "k: decimal digits held by one token",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 4, x.plan.task.digits_per_token); }},
           {"order", "reversed | padded | padded_reversed",
            "units first; zero-padded most significant first; zero-padded units first",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::DigitOrder>({{"reversed", plan::DigitOrder::Reversed},
                                               {"padded", plan::DigitOrder::Padded},
                                               {"padded_reversed", plan::DigitOrder::PaddedReversed}},
                                              x.plan.task.order);
            }},
           {"train_min_digits", "int >= 1", "shortest training operand, in digits",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 100000, x.plan.task.train_min_digits); }},
           {"train_max_digits", "int >= 1", "longest training operand, in digits (fresh problems every batch)",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 100000, x.plan.task.train_max_digits); }},
           {"padded_width", "int >= 1",
            "padded orders: the width every training operand is zero-padded to, when larger than train_max_digits",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 100000, x.plan.task.padded_width); }},
           {"sampling", "lengths | values | same_length | mixed",
            "training operands: each length equally likely, each value (10^(min-1)..10^max - 1) equally likely, "
            "one length equally likely per problem, shared by its operands, or half the problems each way "
            "(same_length, lengths)",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::OperandSampling>(
                  {{"lengths", plan::OperandSampling::Lengths},
                   {"values", plan::OperandSampling::Values},
                   {"same_length", plan::OperandSampling::SameLength},
                   {"mixed", plan::OperandSampling::Mixed}},
                  x.plan.task.sampling);
            }},
           {"test_digits", "list of int", "operand lengths evaluated after training",
            [](Checker& c, SettingsContext& x) { return c.integers(1, 100000, "at least one length", x.plan.task.test_digits); }},
           {"problems_per_length", "int >= 1", "test problems per length",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 10000000, x.plan.task.problems_per_length); }},
           {"test_seed", "int >= 0", "seed of the fixed test problems",
            [](Checker& c, SettingsContext& x) { return c.integer(0, LLONG_MAX, x.plan.task.test_seed); }},
           {"bos", "bool", "a <bos> token opens every sequence",
            [](Checker& c, SettingsContext& x) { return c.boolean(x.plan.task.bos); }},
           {"tasks", "list of retrieval | composition | contradiction | order", "documents: the tasks trained on",
            [](Checker& c, SettingsContext& x) { return wordList(c, documentTaskWords(), x.plan.task.documents.tasks); }},
           {"train_min_length", "int >= 8", "documents: shortest training prompt, in tokens",
            [](Checker& c, SettingsContext& x) { return c.integer(8, 1 << 20, x.plan.task.documents.train_min_length); }},
           {"train_max_length", "int >= 8", "documents: longest training prompt, in tokens (fresh documents every batch)",
            [](Checker& c, SettingsContext& x) { return c.integer(8, 1 << 20, x.plan.task.documents.train_max_length); }},
           {"train_distractors", "list of int", "documents: distractor counts drawn for training documents",
            [](Checker& c, SettingsContext& x) {
              return c.integers(0, 100000, "at least one count", x.plan.task.documents.train_distractors);
            }},
           {"templates", "int 1..3", "documents: surface forms of statements and questions",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 3, x.plan.task.documents.templates); }},
           {"absent_share", "real 0..1", "documents: share of retrieval and composition documents without their evidence",
            [](Checker& c, SettingsContext& x) { return c.real(0, 1, x.plan.task.documents.absent_share); }},
           {"near_duplicates", "bool", "documents: each distractor key shares one half with the queried key",
            [](Checker& c, SettingsContext& x) { return c.boolean(x.plan.task.documents.near_duplicates); }},
           {"filler", "bool", "documents: filler words pad training documents (false: statements alone; retrieval only)",
            [](Checker& c, SettingsContext& x) { return c.boolean(x.plan.task.documents.filler); }},
           {"authority", "latest | earliest | correction", "documents: which of two contradicting statements holds",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::Authority>({{"latest", plan::Authority::Latest},
                                              {"earliest", plan::Authority::Earliest},
                                              {"correction", plan::Authority::Correction}},
                                             x.plan.task.documents.authority);
            }},
       }},
      {"model",
       {
           {"layers", "int >= 1", "transformer blocks",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 1000, x.plan.model.layers); }},
           {"width", "int >= 1", "model width (embedding size)",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 1 << 16, x.plan.model.width); }},
           {"heads", "int >= 1", "attention heads per layer",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 1024, x.plan.model.heads); }},
           {"kv_heads", "int >= 1", "key/value heads, dividing heads (default: heads; fewer: grouped-query attention)",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 1024, x.plan.model.kv_heads); }},
           {"head_dim", "int >= 2, even", "dimension of each head (default width / heads)",
            [](Checker& c, SettingsContext& x) { return c.integer(2, 1 << 12, x.plan.model.head_dim); }},
           {"mlp_hidden", "int >= 1", "hidden width of the feed-forward block (default 4 x width)",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 1 << 20, x.plan.model.mlp_hidden); }},
           {"mlp", "gelu | reglu | swiglu", "feed-forward kind",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::MlpKind>(
                  {{"gelu", plan::MlpKind::Gelu}, {"reglu", plan::MlpKind::Reglu}, {"swiglu", plan::MlpKind::Swiglu}},
                  x.plan.model.mlp);
            }},
           {"norm", "layernorm | rmsnorm", "normalisation before attention and MLP",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::NormKind>({{"layernorm", plan::NormKind::LayerNorm}, {"rmsnorm", plan::NormKind::RmsNorm}},
                                            x.plan.model.norm);
            }},
           {"tied_embeddings", "bool", "output head shares the token embedding",
            [](Checker& c, SettingsContext& x) { return c.boolean(x.plan.model.tied_embeddings); }},
           {"bias", "bool", "biases in the affine layers and LayerNorm (default true)",
            [](Checker& c, SettingsContext& x) { return c.boolean(x.plan.model.bias); }},
           {"qk_norm", "bool", "RMSNorm on each query and key head before rotation (default false)",
            [](Checker& c, SettingsContext& x) { return c.boolean(x.plan.model.qk_norm); }},
           {"precision", "f32 | f64 | bf16_mixed", "parameter and compute precision",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::Precision>(
                  {{"f32", plan::Precision::F32}, {"f64", plan::Precision::F64}, {"bf16_mixed", plan::Precision::Bf16Mixed}},
                  x.plan.model.precision);
            }},
           {"softmax", "standard | softmax1", "attention normalisation (softmax1 adds 1 to the denominator)",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::SoftmaxKind>({{"standard", plan::SoftmaxKind::Standard}, {"softmax1", plan::SoftmaxKind::Softmax1}},
                                               x.plan.model.softmax);
            }},
           {"dropout", "real 0..1", "dropout probability",
            [](Checker& c, SettingsContext& x) { return c.real(0, 0.99, x.plan.model.dropout); }},
           {"init", "gpt2 | pytorch", "how weights are drawn: GPT-2's N(0, init_std), or PyTorch's module defaults",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::InitKind>({{"gpt2", plan::InitKind::Gpt2}, {"pytorch", plan::InitKind::PyTorch}},
                                            x.plan.model.init);
            }},
           {"init_std", "real > 0", "standard deviation of the initial weights (default 0.02)",
            [](Checker& c, SettingsContext& x) { return c.real(0, 10, x.plan.model.init_std, true); }},
           {"embedding_std", "real > 0", "standard deviation of the initial token embeddings (default: init_std)",
            [](Checker& c, SettingsContext& x) {
              double s = 0;
              if (!c.real(0, 10, s, true)) return false;
              x.plan.model.embedding_std = s;
              return true;
            }},
       }},
      {"train",
       {
           {"steps", "int >= 0", "optimiser steps per seed",
            [](Checker& c, SettingsContext& x) { return c.integer(0, 1000000000, x.plan.train.steps); }},
           {"batch", "int >= 1", "problems per step",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 1 << 20, x.plan.train.batch); }},
           {"optimizer", "adamw", "the optimiser",
            [](Checker& c, SettingsContext& x) {
              int adamw = 0;
              return c.word<int>({{"adamw", 0}}, adamw);
            }},
           {"lr", "real > 0", "peak learning rate",
            [](Checker& c, SettingsContext& x) { return c.real(0, 10, x.plan.train.lr, true); }},
           {"min_lr_ratio", "real 0..1", "final learning rate as a fraction of lr (cosine, linear)",
            [](Checker& c, SettingsContext& x) { return c.real(0, 1, x.plan.train.min_lr_ratio); }},
           {"betas", "(real, real)", "AdamW betas",
            [](Checker& c, SettingsContext& x) {
              if (c.v.kind != Kind::Tuple || c.v.elements.size() != 2) return c.fail("a pair (beta1, beta2)");
              Checker b1{c.v.elements[0], c.diags, "betas"}, b2{c.v.elements[1], c.diags, "betas"};
              double a, b;
              if (!b1.real(0, 0.999999, a) || !b2.real(0, 0.999999, b)) return false;
              x.plan.train.beta1 = a;
              x.plan.train.beta2 = b;
              return true;
            }},
           {"eps", "real > 0", "AdamW epsilon",
            [](Checker& c, SettingsContext& x) { return c.real(0, 1, x.plan.train.eps, true); }},
           {"weight_decay", "real >= 0", "AdamW decoupled weight decay (on the tensors weight_decay_on names)",
            [](Checker& c, SettingsContext& x) { return c.real(0, 10, x.plan.train.weight_decay); }},
           {"weight_decay_on", "matrices | all",
            "tensors weight decay shrinks: every matrix (embeddings too), or also norm gains and biases (MLX's AdamW)",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::DecayScope>({{"matrices", plan::DecayScope::Matrices}, {"all", plan::DecayScope::All}},
                                              x.plan.train.decay_scope);
            }},
           {"bias_correction", "bool",
            "Adam's bias correction of the moments (default true, PyTorch's; false: MLX's AdamW default)",
            [](Checker& c, SettingsContext& x) { return c.boolean(x.plan.train.bias_correction); }},
           {"warmup", "int >= 0", "linear warm-up steps",
            [](Checker& c, SettingsContext& x) { return c.integer(0, 1000000000, x.plan.train.warmup); }},
           {"schedule", "constant | cosine | linear", "learning-rate decay after warm-up",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::Schedule>(
                  {{"constant", plan::Schedule::Constant}, {"cosine", plan::Schedule::Cosine}, {"linear", plan::Schedule::Linear}},
                  x.plan.train.schedule);
            }},
           {"grad_clip", "real >= 0", "global gradient-norm clip (0: none)",
            [](Checker& c, SettingsContext& x) { return c.real(0, 1e9, x.plan.train.grad_clip); }},
           {"seeds", "list of int", "one training run per seed",
            [](Checker& c, SettingsContext& x) { return c.integers(0, LLONG_MAX, "at least one seed", x.plan.train.seeds); }},
           {"checkpoint_every", "int >= 0", "steps between checkpoints (0: final only)",
            [](Checker& c, SettingsContext& x) { return c.integer(0, 1000000000, x.plan.train.checkpoint_every); }},
           {"log_every", "int >= 1", "steps between metric lines",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 1000000000, x.plan.train.log_every); }},
           {"init_from", "experiment name | \"FILE.safetensors\"",
            "warm start from that experiment's final checkpoint (same seed), or from a safetensors file",
            [](Checker& c, SettingsContext& x) {
              if (c.v.kind == Kind::None) {
                x.plan.train.init_from.reset();
                x.plan.train.init_file.reset();
                return true;
              }
              if (c.v.kind == Kind::String) {
                const std::string& f = c.v.text;
                if (f.size() < 12 || f.compare(f.size() - 12, 12, ".safetensors") != 0) {
                  Diagnostic& d = c.diags.error(c.v.range, fmt::format("'{}' is not a .safetensors file", f));
                  d.hint = "a file warm start reads safetensors (GPT names, docs/results.md); name an experiment "
                           "without quotes to continue from its run";
                  return false;
                }
                x.plan.train.init_from.reset();
                x.plan.train.init_file = f;  // resolved against the experiment's file once it is known
                return true;
              }
              if (c.v.kind != Kind::Symbol) return c.fail("the name of an experiment or a \"FILE.safetensors\"");
              x.plan.train.init_file.reset();
              bool known = false;
              for (const std::string& e : x.experiments) known = known || e == c.v.text;
              if (!known) {
                Diagnostic& d = c.diags.error(c.v.range, fmt::format("unknown experiment '{}'", c.v.text));
                suggest(d, c.v.text, x.experiments);
                d.hint = "init_from names an experiment defined in this file or one it imports";
                return false;
              }
              x.plan.train.init_from = c.v.text;
              return true;
            }},
       }},
      {"eval",
       {
           {"protocol", "lengths | adderboard", "test_digits x problems_per_length, or the 10-digit leaderboard's 10,010 cases",
            [](Checker& c, SettingsContext& x) {
              return c.word<plan::EvalProtocol>({{"lengths", plan::EvalProtocol::Lengths}, {"adderboard", plan::EvalProtocol::AdderBoard}},
                                                x.plan.eval.protocol);
            }},
           {"batch", "int >= 1", "problems decoded together",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 1 << 20, x.plan.eval.batch); }},
           {"every", "int >= 0", "evaluate every N training steps as well (0: only at the end)",
            [](Checker& c, SettingsContext& x) { return c.integer(0, 1000000000, x.plan.eval.every); }},
           {"published", "[(digits, [percent per seed]), ...]", "published accuracy, printed beside the measured one",
            [](Checker& c, SettingsContext& x) {
              if (c.v.kind != Kind::List) return c.fail("a list of (digits, [percent, ...]) pairs");
              std::vector<plan::PublishedAccuracy> out;
              for (const Value& e : c.v.elements) {
                Checker pair{e, c.diags, c.setting};
                if (e.kind != Kind::Tuple || e.elements.size() != 2) return pair.fail("(digits, [percent, ...]) pairs");
                plan::PublishedAccuracy a;
                Checker digits{e.elements[0], c.diags, c.setting};
                if (!digits.integer(1, 100000, a.digits)) return false;
                const Value& values = e.elements[1];
                for (const Value& v : values.kind == Kind::List ? values.elements : std::vector<Value>{values}) {
                  Checker percent{v, c.diags, c.setting};
                  double p;
                  if (!percent.real(0, 100, p)) return false;
                  a.percent.push_back(p);
                }
                out.push_back(a);
              }
              x.plan.eval.published = out;
              return true;
            }},
           {"published_source", "string", "where the published figures come from",
            [](Checker& c, SettingsContext& x) {
              if (c.v.kind != Kind::String) return c.fail("a string");
              x.plan.eval.published_source = c.v.text;
              return true;
            }},
           {"tasks", "list of retrieval | composition | contradiction | order",
            "documents: the protocol's tasks (default: the training tasks)",
            [](Checker& c, SettingsContext& x) { return wordList(c, documentTaskWords(), x.plan.eval.documents.tasks); }},
           {"lengths", "list of int", "documents: prompt lengths of the protocol (default: 1, 2, 4, 8, 16 x the longest training one)",
            [](Checker& c, SettingsContext& x) {
              return c.integers(8, 1 << 20, "at least one length", x.plan.eval.documents.lengths);
            }},
           {"depths", "list of real 0..1", "documents: evidence depths of the protocol (fraction of the body)",
            [](Checker& c, SettingsContext& x) {
              std::vector<double> depths;
              for (const Value& e : c.v.kind == Kind::List ? c.v.elements : std::vector<Value>{c.v}) {
                Checker element{e, c.diags, c.setting};
                double d;
                if (!element.real(0, 1, d)) return false;
                depths.push_back(d);
              }
              if (depths.empty()) return c.fail("at least one depth");
              x.plan.eval.documents.depths = depths;
              return true;
            }},
           {"distractors", "list of int", "documents: distractor counts of the protocol (default: the largest training one)",
            [](Checker& c, SettingsContext& x) {
              return c.integers(0, 100000, "at least one count", x.plan.eval.documents.distractors);
            }},
           {"templates", "int 1..3", "documents: problem i of a cell uses template i mod templates",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 3, x.plan.eval.documents.templates); }},
           {"problems", "int >= 1", "documents: independently generated documents per cell",
            [](Checker& c, SettingsContext& x) { return c.integer(1, 1000000, x.plan.eval.documents.problems); }},
           {"absent_share", "real 0..1", "documents: share of retrieval and composition documents without their evidence",
            [](Checker& c, SettingsContext& x) { return c.real(0, 1, x.plan.eval.documents.absent_share); }},
           {"fraction", "real 0..1", "documents: share of the cross product run (a seeded choice of cells)",
            [](Checker& c, SettingsContext& x) { return c.real(0, 1, x.plan.eval.documents.fraction, true); }},
       }},
  };
  return t;
}

}  // namespace

const std::vector<std::string>& settingSections() {
  static const std::vector<std::string> s = {"task", "model", "train", "eval"};
  return s;
}

std::vector<std::string> settingNames(const std::string& section) {
  std::vector<std::string> out;
  auto it = tables().find(section);
  if (it != tables().end())
    for (const Setting& s : it->second) out.push_back(s.name);
  return out;
}

std::string settingDefault(const std::string& section, const std::string& name) {
  static const plan::ExperimentPlan defaults;
  const Table& table = tables().at(section);
  auto it = std::find_if(table.begin(), table.end(), [&](const Setting& s) { return s.name == name; });
  if (it == table.end()) return "";
  // Defaults that follow other settings, and setters that read their value's
  // shape themselves rather than through a Checker.
  const std::string key = section + "." + name;
  if (key == "model.kv_heads") return "= heads";
  if (key == "model.head_dim") return "= width / heads";
  if (key == "model.mlp_hidden") return "= 4 x width";
  if (key == "model.embedding_std") return "= init_std";
  if (key == "train.betas") return fmt::format("({:g}, {:g})", defaults.train.beta1, defaults.train.beta2);
  if (key == "eval.depths") {
    std::string out = "[";
    for (size_t i = 0; i < defaults.eval.documents.depths.size(); ++i)
      out += (i ? ", " : "") + fmt::format("{:g}", defaults.eval.documents.depths[i]);
    return out + "]";
  }
  SourceManager sources;
  DiagnosticEngine diags(sources);
  plan::ExperimentPlan scratch = defaults;
  SettingsContext ctx{scratch, diags, {}};
  const Value none;
  std::string shown;
  Checker c{none, diags, name, &shown};
  it->apply(c, ctx);
  // An empty list or an unset optional: what applies is in the setting's help.
  return shown.empty() || shown == "[]" ? "-" : shown;
}

std::string describeSettings() {
  struct Row {
    std::string name, type, fallback, help;
  };
  std::vector<Row> rows{{"setting", "takes", "default", "what it sets"}};
  size_t w_name = 0, w_type = 0, w_default = 0;
  for (const std::string& section : settingSections())
    for (const Setting& s : tables().at(section))
      rows.push_back({section + "." + s.name, s.type, settingDefault(section, s.name), s.help});
  for (const Row& r : rows) {
    w_name = std::max(w_name, r.name.size());
    w_type = std::max(w_type, std::min<size_t>(r.type.size(), 36));
    w_default = std::max(w_default, r.fallback.size());
  }
  std::string out;
  for (const Row& r : rows)
    out += fmt::format("  {:<{}}  {:<{}}  {:<{}}  {}\n", r.name, w_name, r.type, w_type, r.fallback, w_default, r.help);
  return out;
}

bool applySetting(const std::string& section, const std::string& name, SourceRange name_range,
                  const Value& value, SettingsContext& ctx) {
  const Table& table = tables().at(section);
  for (const Setting& s : table) {
    if (s.name != name) continue;
    Checker c{value, ctx.diags, name};
    return s.apply(c, ctx);
  }
  Diagnostic& d = ctx.diags.error(name_range, fmt::format("unknown {} setting '{}'", section, name));
  suggest(d, name, settingNames(section));
  if (d.notes.empty()) {
    // Perhaps it belongs to another section.
    for (const std::string& other : settingSections())
      for (const std::string& n : settingNames(other))
        if (n == name && other != section)
          d.notes.push_back({{}, fmt::format("'{}' is a setting of the {} section", name, other)});
  }
  return false;
}

void checkSettings(SourceRange at, SettingsContext& ctx) {
  plan::ExperimentPlan& p = ctx.plan;
  auto where = [&](const char* key) {
    auto it = ctx.written.find(key);
    return it == ctx.written.end() ? at : it->second;
  };
  if (ctx.written.count("model.head_dim")) {
    if (p.model.head_dim % 2 != 0) {
      Diagnostic& d = ctx.diags.error(where("model.head_dim"),
                                      fmt::format("head dimension {} must be even for rotary pairs", p.model.head_dim));
      d.hint = fmt::format("choose {} or {}", p.model.head_dim - 1, p.model.head_dim + 1);
    }
  } else if (p.model.width % p.model.heads != 0) {
    Diagnostic& d = ctx.diags.error(where("model.width"), fmt::format("model width {} is not divisible by {} heads", p.model.width, p.model.heads));
    d.hint = "choose a width that is a multiple of the head count, or set model.head_dim";
  } else {
    p.model.head_dim = p.model.width / p.model.heads;
    if (p.model.head_dim % 2 != 0)
      ctx.diags.error(where("model.width"), fmt::format("head dimension {} (width {} / {} heads) must be even for rotary pairs",
                                      p.model.head_dim, p.model.width, p.model.heads));
  }
  if (p.model.init == plan::InitKind::PyTorch && ctx.written.count("model.init_std")) {
    Diagnostic& d = ctx.diags.error(where("model.init_std"), "init_std is the scale of the gpt2 init; the pytorch init draws "
                                                             "each matrix at 1/sqrt(fan_in)");
    d.hint = "remove init_std, or set model.init = gpt2";
  }
  if (ctx.written.count("model.kv_heads") && (p.model.kv_heads > p.model.heads || p.model.heads % p.model.kv_heads != 0)) {
    Diagnostic& d = ctx.diags.error(where("model.kv_heads"), fmt::format("{} key/value heads do not divide {} query heads",
                                                                       p.model.kv_heads, p.model.heads));
    d.hint = "each key/value head serves a group of heads / kv_heads query heads: choose a divisor of heads";
  }
  if (p.task.train_min_digits > p.task.train_max_digits)
    ctx.diags.error(where("task.train_min_digits"), fmt::format("train_min_digits ({}) is larger than train_max_digits ({})",
                                    p.task.train_min_digits, p.task.train_max_digits));
  if (p.eval.protocol == plan::EvalProtocol::AdderBoard &&
      (p.task.operands != 2 || p.task.digits_per_token != 1 ||
       (plan::isPadded(p.task.order) && plan::operandWidth(p.task, 1) != 10))) {
    Diagnostic& d = ctx.diags.error(where("eval.protocol"), "the adderboard protocol is two operands of up to 10 digits, one digit per token");
    d.hint = "set task.operands = 2 and digits_per_token = 1; in padded order also a padded width of 10 "
             "(train_max_digits = 10, or task.padded_width = 10 with shorter training operands)";
  }
  const bool padded_width_written = ctx.written.count("task.padded_width") > 0;
  if (padded_width_written && !plan::isPadded(p.task.order)) {
    Diagnostic& d = ctx.diags.error(where("task.padded_width"), "padded_width applies to the padded orders only");
    d.hint = "set task.order = padded or padded_reversed, or remove padded_width";
  } else if (padded_width_written && p.task.padded_width < p.task.train_max_digits) {
    Diagnostic& d = ctx.diags.error(where("task.padded_width"),
                                    fmt::format("padded_width ({}) is smaller than train_max_digits ({})",
                                                p.task.padded_width, p.task.train_max_digits));
    d.hint = "the padded width holds the longest training operand: raise it, or remove it to pad to train_max_digits";
  }
  if (p.train.warmup > p.train.steps && p.train.steps > 0)
    ctx.diags.warning(where("train.warmup"), fmt::format("warm-up ({} steps) is longer than training ({} steps)", p.train.warmup, p.train.steps));
}

void checkHandsetSettings(SourceRange at, SettingsContext& ctx) {
  plan::ExperimentPlan& p = ctx.plan;
  auto where = [&](const char* key) {
    auto it = ctx.written.find(key);
    return it == ctx.written.end() ? at : it->second;
  };
  if (ctx.written.count("model.precision") && p.model.precision != plan::Precision::F64) {
    Diagnostic& d = ctx.diags.error(where("model.precision"), "a hand-set model computes in f64");
    d.hint = "remove the setting or write precision = f64";
  }
  p.model.precision = plan::Precision::F64;
  if (!p.handset) return;
  if (p.eval.protocol == plan::EvalProtocol::AdderBoard && p.task.order != plan::DigitOrder::Padded) {
    Diagnostic& d = ctx.diags.error(where("eval.protocol"), "a hand-set model is scored on the adderboard cases as 11 zero-padded answer digits, most significant first");
    d.hint = "set task.order = padded";
  }
  const bool has_mlp = std::any_of(p.handset->layers.begin(), p.handset->layers.end(),
                                   [](const plan::HandsetLayer& l) { return l.mlp_hidden > 0; });
  if (has_mlp && ctx.written.count("model.mlp") && p.model.mlp != plan::MlpKind::Reglu) {
    Diagnostic& d = ctx.diags.error(where("model.mlp"), "hand-set feed-forward layers are ReGLU");
    d.hint = "write mlp = reglu";
  }
  p.model.mlp = plan::MlpKind::Reglu;
  const int layers = static_cast<int>(p.handset->layers.size());
  if (ctx.written.count("model.layers") && p.model.layers != layers)
    ctx.diags.error(where("model.layers"), fmt::format("model.layers is {}, but {} layer section{} written", p.model.layers, layers,
                                                       layers == 1 ? " is" : "s are"));
  p.model.layers = layers;
}

}  // namespace posc::sema
