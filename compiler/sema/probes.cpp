// The probes section: see probes.h.
#include "compiler/sema/probes.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "compiler/sema/arguments.h"
#include "compiler/sema/evaluate.h"

namespace posc::sema {

namespace {

using plan::ProbeKind;
using plan::ProbePlan;

// What an argument takes, for error messages and `posc help probes`.
struct Argument {
  std::string name;
  std::string type;
  std::string help;
};

struct KindInfo {
  ProbeKind kind;
  std::string help;
  std::vector<Argument> args;
};

const std::vector<KindInfo>& kinds() {
  static const std::vector<KindInfo> k = {
      {ProbeKind::Reach, "exact-match accuracy against length; the longest length up to which every length keeps the threshold",
       {{"lengths", "list or range of int", "operand lengths (default: the test lengths); a range a..b takes `step`"},
        {"step", "int >= 1", "step of a range of lengths (default 1)"},
        {"threshold", "real in (0, 1]", "accuracy the reach must keep (default 0.9)"},
        {"problems", "int >= 1", "problems per length (default: task.problems_per_length)"},
        {"seed", "int >= 0", "seed of the probe's problems (default: task.test_seed)"}}},
      {ProbeKind::SinkShare, "attention mass on separator keys per layer, head, answer place and length",
       {{"lengths", "list or range of int", "operand lengths (default: the test lengths)"},
        {"step", "int >= 1", "step of a range of lengths (default 1)"},
        {"problems", "int >= 1", "problems per length (default 10)"},
        {"seed", "int >= 0", "seed of the probe's problems (default: task.test_seed)"}}},
      {ProbeKind::Kernel, "a real query and its real target key; the key alone moves along its row, column by column",
       {{"place", "int >= 1", "answer place (units = 1) whose decision is the query (default: half the training length)"},
        {"operand", "int >= 0", "the target is this operand's digit in the answer place's column (default 0)"},
        {"length", "int >= 1", "operand length of the problem (default: the training length)"},
        {"sweep", "range of int", "key column offsets from the target (default -2000..2001)"},
        {"window", "int >= 1", "columns per window of the windowed maxima (default 10)"},
        {"far", "int >= 0", "windows at |offset| >= far are far windows (default 100)"},
        {"layer", "int or auto", "layer of the head (default auto: the strongest lookup head)"},
        {"head", "int or auto", "head (default auto)"},
        {"seed", "int >= 0", "seed of the probe's problem (default: task.test_seed)"}}},
      {ProbeKind::Bands, "a head's score on target, strongest alias and separator split by rotation-pair period",
       {{"place", "int >= 1", "answer place whose decision is the query (default: half the training length)"},
        {"operand", "int >= 0", "target operand (default 0)"},
        {"lengths", "list or range of int", "operand lengths (default: training length and longest test length)"},
        {"step", "int >= 1", "step of a range of lengths (default 1)"},
        {"fast", "real > 0", "pairs with a shorter period (in their channel's units) are fast (default 20)"},
        {"slow", "real > 0", "pairs with a longer period are slow (default 200)"},
        {"layer", "int or auto", "layer of the head (default auto)"},
        {"head", "int or auto", "head (default auto)"},
        {"problems", "int >= 1", "problems per length, contributions averaged (default 10)"},
        {"seed", "int >= 0", "seed of the probe's problems (default: task.test_seed)"}}},
      {ProbeKind::TeacherForced, "every decision of N problems scored on its own: errors by place and carry chain",
       {{"length", "int >= 1", "operand length (default: the longest test length)"},
        {"problems", "int >= 1", "problems (default 150)"},
        {"lookup_heads", "int >= 1", "main lookup heads whose separator share is reported (default 2)"},
        {"seed", "int >= 0", "seed of the probe's problems (default: task.test_seed)"}}},
      {ProbeKind::Stop,
       "where each head looks at the stop decision: separators, operand digits near and far, answer; the sink's margin",
       {{"lengths", "list or range of int", "operand lengths (default: training length and the longest test length)"},
        {"step", "int >= 1", "step of a range of lengths (default 1)"},
        {"problems", "int >= 1", "problems per length (default 60)"},
        {"seed", "int >= 0", "seed of the probe's problems (default: task.test_seed)"}}},
      {ProbeKind::EvidenceMass,
       "documents: a head's attention on the evidence key against N distractor keys; margin fitted to 1 / (1 + N e^-m) per length",
       {{"lengths", "list or range of int", "prompt lengths in tokens (default: the protocol's lengths)"},
        {"step", "int >= 1", "step of a range of lengths (default 1)"},
        {"distractors", "list of int >= 1", "distractor counts N at every length (default [1, 4, 16])"},
        {"problems", "int >= 1", "retrieval documents per length and count, depths spread evenly (default 20)"},
        {"layer", "int or auto", "layer of the head (default auto: the most evidence mass at the shortest length)"},
        {"head", "int or auto", "head (default auto)"},
        {"seed", "int >= 0", "seed of the probe's documents (default: task.test_seed)"}}},
  };
  return k;
}

struct ProbeBuilder {
  const ast::Item& item;
  const KindInfo& info;
  const plan::ExperimentPlan& plan;
  DiagnosticEngine& diags;
  std::map<std::string, Value> values;
  bool ok = true;

  bool collect() {
    CallShape shape;
    shape.callee = fmt::format("probe '{}'", item.name.text);
    shape.positional = false;
    std::string list;
    for (const Argument& a : info.args) {
      shape.parameters.push_back({a.name, false, {}});
      list += (list.empty() ? "" : ", ") + a.name;
    }
    shape.usage = fmt::format("{} takes {}", item.name.text, list);
    MatchedArguments matched = matchArguments(shape, item.args, item.range, diags);
    ok = matched.ok;
    for (const auto& [name, arg] : matched.inSourceOrder()) {
      Env env;
      auto v = evaluate(*arg->value, env, diags);
      if (!v) {
        ok = false;
        continue;
      }
      values[name] = *v;
    }
    return ok;
  }

  const Value* find(const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  }

  bool fail(const Value& v, const std::string& name, const std::string& wanted) {
    diags.error(v.range, fmt::format("'{}' takes {}, not {}", name, wanted, v.describe()));
    ok = false;
    return false;
  }

  void integer(const std::string& name, long long lo, long long hi, int& out) {
    const Value* v = find(name);
    if (!v) return;
    if (!v->isInteger()) { fail(*v, name, hi == INT_MAX ? fmt::format("an integer >= {}", lo) : fmt::format("an integer in {}..{}", lo, hi)); return; }
    long long x = static_cast<long long>(v->number);
    if (x < lo || x > hi) {
      diags.error(v->range, hi == INT_MAX ? fmt::format("'{}' must be at least {}, got {}", name, lo, x)
                                          : fmt::format("'{}' must be between {} and {}, got {}", name, lo, hi, x));
      ok = false;
      return;
    }
    out = static_cast<int>(x);
  }

  void seed(uint64_t& out) {
    const Value* v = find("seed");
    if (!v) return;
    if (!v->isInteger() || v->number < 0) { fail(*v, "seed", "an integer >= 0"); return; }
    out = static_cast<uint64_t>(v->number);
  }

  void real(const std::string& name, double lo, double hi, bool lo_open, double& out) {
    const Value* v = find(name);
    if (!v) return;
    if (v->kind != Value::Kind::Number || !std::isfinite(v->number)) { fail(*v, name, "a number"); return; }
    if (v->number < lo || (lo_open && v->number == lo) || v->number > hi) {
      diags.error(v->range, fmt::format("'{}' must be {} {:g}{}, got {:g}", name, lo_open ? ">" : ">=", lo,
                                        std::isinf(hi) ? "" : fmt::format(" and <= {:g}", hi), v->number));
      ok = false;
      return;
    }
    out = v->number;
  }

  // -1 for `auto`.
  void layerOrHead(const std::string& name, int count, int& out) {
    const Value* v = find(name);
    if (!v) return;
    if (v->kind == Value::Kind::Symbol && v->text == "auto") { out = -1; return; }
    if (!v->isInteger()) { fail(*v, name, "an integer or auto"); return; }
    long long x = static_cast<long long>(v->number);
    if (x < 0 || x >= count) {
      Diagnostic& d = diags.error(v->range, fmt::format("the model has no {} {}", name, x));
      d.hint = fmt::format("{}s are numbered 0..{} (model.{} = {})", name, count - 1, name == "layer" ? "layers" : "heads", count);
      ok = false;
      return;
    }
    out = static_cast<int>(x);
  }

  void lengths(std::vector<int>& out) {
    const bool tokens = info.kind == ProbeKind::EvidenceMass;
    const int lo = tokens ? 8 : 1, hi = tokens ? (1 << 20) : 100000;
    const Value* v = find("lengths");
    int step = 1;
    integer("step", 1, INT_MAX, step);
    if (!v) return;
    std::vector<int> xs;
    if (v->kind == Value::Kind::Range) {
      if (v->lo < v->hi && (v->lo < lo || v->hi - 1 > hi)) {
        diags.error(v->range, fmt::format("'lengths' holds {} (integers {}..{}); the range {}..{} leaves them",
                                          tokens ? "prompt lengths in tokens" : "operand lengths", lo, hi, v->lo, v->hi));
        ok = false;
        return;
      }
      for (long long i = v->lo; i < v->hi; i += step) xs.push_back(static_cast<int>(i));
    } else {
      for (const Value& e : v->kind == Value::Kind::List ? v->elements : std::vector<Value>{*v}) {
        if (!e.isInteger() || e.number < lo || e.number > hi) {
          diags.error(e.range, fmt::format("'lengths' holds {} (integers {}..{}), not {}",
                                           tokens ? "prompt lengths in tokens" : "operand lengths", lo, hi, e.describe()));
          ok = false;
          return;
        }
        xs.push_back(static_cast<int>(e.number));
      }
    }
    if (xs.empty() || xs.front() < lo) {
      diags.error(v->range, fmt::format("'lengths' needs at least one length, each at least {}", lo));
      ok = false;
      return;
    }
    std::set<int> seen;
    for (int x : xs)
      if (!seen.insert(x).second) {
        diags.error(v->range, fmt::format("'lengths' lists {} twice", x));
        ok = false;
        return;
      }
    out = xs;
  }

  // The answer place must have an operand digit in its column at every length.
  void checkPlace(const ProbePlan& p, const std::vector<int>& ls) {
    for (int l : ls)
      if (p.place > l) {
        const Value* v = find("place");
        Diagnostic& d = diags.error(v ? v->range : item.name.range,
                                    fmt::format("answer place {} has no operand digit in its column at {} digits", p.place, l));
        d.hint = fmt::format("choose a place in 1..{}", *std::min_element(ls.begin(), ls.end()));
        ok = false;
        return;
      }
    if (p.operand >= plan.task.operands) {
      const Value* v = find("operand");
      Diagnostic& d = diags.error(v ? v->range : item.name.range, fmt::format("the task has no operand {}", p.operand));
      d.hint = fmt::format("operands are numbered 0..{}", plan.task.operands - 1);
      ok = false;
    }
  }

  // Distractor counts N >= 1 (with none, the evidence has nothing to beat).
  void distractors(std::vector<int>& out) {
    const Value* v = find("distractors");
    if (!v) return;
    std::vector<int> xs;
    for (const Value& e : v->kind == Value::Kind::List ? v->elements : std::vector<Value>{*v}) {
      if (!e.isInteger() || e.number < 1 || e.number > 100000) {
        diags.error(e.range, fmt::format("'distractors' holds counts (integers 1..100000), not {}", e.describe()));
        ok = false;
        return;
      }
      xs.push_back(static_cast<int>(e.number));
    }
    if (xs.empty()) {
      fail(*v, "distractors", "at least one count");
      return;
    }
    out = xs;
  }

  // Addition probes read digits and columns; evidence_mass reads documents.
  bool fitsTask() {
    const bool documents = plan.task.kind == plan::TaskKind::Documents;
    if (documents == (info.kind == ProbeKind::EvidenceMass)) return true;
    Diagnostic& d = diags.error(item.name.range, fmt::format("the {} probe measures the {} task, and this experiment's task is {}",
                                                             item.name.text, documents ? "addition" : "documents",
                                                             documents ? "documents" : "addition"));
    d.hint = documents ? "document experiments take evidence_mass(...)"
                       : "evidence_mass needs task { kind = documents }";
    return false;
  }

  std::optional<ProbePlan> build() {
    if (!fitsTask()) return std::nullopt;
    if (!collect()) return std::nullopt;
    const plan::TaskPlan& task = plan.task;
    const plan::ModelPlan& model = plan.model;
    const int train = task.train_max_digits;
    const int longest = task.test_digits.empty() ? train : *std::max_element(task.test_digits.begin(), task.test_digits.end());
    ProbePlan p;
    p.kind = info.kind;
    p.name = plan::probeKindName(info.kind);
    p.problem_seed = task.test_seed;
    seed(p.problem_seed);
    switch (info.kind) {
      case ProbeKind::Reach:
        p.lengths = task.test_digits;
        p.problems = task.problems_per_length;
        lengths(p.lengths);
        real("threshold", 0, 1, true, p.threshold);
        integer("problems", 1, 1000000, p.problems);
        break;
      case ProbeKind::SinkShare:
        p.lengths = task.test_digits;
        p.problems = 10;
        lengths(p.lengths);
        integer("problems", 1, 1000000, p.problems);
        break;
      case ProbeKind::Kernel: {
        p.length = train;
        p.place = std::max(1, train / 2);
        p.sweep_begin = -2000;
        p.sweep_end = 2001;
        integer("place", 1, INT_MAX, p.place);
        integer("operand", 0, INT_MAX, p.operand);
        integer("length", 1, 100000, p.length);
        if (const Value* v = find("sweep")) {
          if (v->kind != Value::Kind::Range) fail(*v, "sweep", "a range of column offsets such as -2000..2001");
          else if (v->hi - v->lo < 2 || v->lo > 0 || v->hi <= 0 || v->hi - v->lo > 1000000) {
            Diagnostic& d = diags.error(v->range, "'sweep' must contain offset 0 (the target) and at least one other offset");
            d.hint = "for example sweep = -2000..2001";
            ok = false;
          } else {
            p.sweep_begin = static_cast<int>(v->lo);
            p.sweep_end = static_cast<int>(v->hi);
          }
        }
        integer("window", 1, 100000, p.window);
        integer("far", 0, INT_MAX, p.far);
        layerOrHead("layer", model.layers, p.head.layer);
        layerOrHead("head", model.heads, p.head.head);
        if (ok) checkPlace(p, {p.length});
        break;
      }
      case ProbeKind::Bands:
        p.place = std::max(1, train / 2);
        p.lengths = {train};
        if (longest != train) p.lengths.push_back(longest);
        p.problems = 10;
        integer("place", 1, INT_MAX, p.place);
        integer("operand", 0, INT_MAX, p.operand);
        lengths(p.lengths);
        real("fast", 0, INFINITY, true, p.fast_period);
        real("slow", 0, INFINITY, true, p.slow_period);
        layerOrHead("layer", model.layers, p.head.layer);
        layerOrHead("head", model.heads, p.head.head);
        integer("problems", 1, 1000000, p.problems);
        if (ok && p.slow_period < p.fast_period) {
          const Value* v = find("slow");
          Diagnostic& d = diags.error(v ? v->range : item.name.range,
                                      fmt::format("'slow' ({:g}) is below 'fast' ({:g})", p.slow_period, p.fast_period));
          d.hint = "pairs are fast below `fast`, slow above `slow`, mid in between";
          ok = false;
        }
        if (ok) checkPlace(p, p.lengths);
        break;
      case ProbeKind::TeacherForced:
        p.length = longest;
        p.problems = 150;
        integer("length", 1, 100000, p.length);
        integer("problems", 1, 1000000, p.problems);
        integer("lookup_heads", 1, INT_MAX, p.lookup_heads);
        if (ok && p.lookup_heads > model.layers * model.heads) {
          Diagnostic& d = diags.error(find("lookup_heads")->range,
                                      fmt::format("the model has only {} heads in all", model.layers * model.heads));
          d.hint = "lookup_heads counts heads over every layer";
          ok = false;
        }
        break;
      case ProbeKind::Stop:
        p.lengths = {train};
        if (longest != train) p.lengths.push_back(longest);
        p.problems = 60;
        lengths(p.lengths);
        integer("problems", 1, 1000000, p.problems);
        break;
      case ProbeKind::EvidenceMass:
        p.lengths = plan.eval.documents.lengths;
        p.distractors = {1, 4, 16};
        p.problems = 20;
        lengths(p.lengths);
        distractors(p.distractors);
        integer("problems", 1, 1000000, p.problems);
        layerOrHead("layer", model.layers, p.head.layer);
        layerOrHead("head", model.heads, p.head.head);
        break;
    }
    if (!ok) return std::nullopt;
    return p;
  }
};

}  // namespace

std::string describeProbeArguments() {
  std::string out;
  for (const KindInfo& k : kinds()) {
    out += fmt::format("{}(...)  {}\n", plan::probeKindName(k.kind), k.help);
    for (const Argument& a : k.args) out += fmt::format("  {:<13} {:<22} {}\n", a.name, a.type, a.help);
  }
  return out;
}

void buildProbes(const std::vector<const ast::Item*>& items, plan::ExperimentPlan& plan, DiagnosticEngine& diags) {
  std::vector<std::string> names;
  for (const KindInfo& k : kinds()) names.push_back(plan::probeKindName(k.kind));
  // A later declaration of the same kind (a variant, a preset) replaces the
  // earlier one; only the one that applies is checked.
  std::vector<std::pair<const KindInfo*, const ast::Item*>> chosen;
  for (const ast::Item* it : items) {
    if (it->kind != ast::Item::Kind::Call) {
      Diagnostic& d = diags.error(it->range, "the probes section holds probe calls such as reach(lengths = [10, 20, 40])");
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      d.hint = "the probes are " + list;
      continue;
    }
    const KindInfo* info = nullptr;
    for (const KindInfo& k : kinds())
      if (it->name.text == plan::probeKindName(k.kind)) info = &k;
    if (!info) {
      Diagnostic& d = diags.error(it->name.range, fmt::format("unknown probe '{}'", it->name.text));
      suggest(d, it->name.text, names);
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      d.hint = "the probes are " + list;
      continue;
    }
    auto same = std::find_if(chosen.begin(), chosen.end(), [&](const auto& c) { return c.first == info; });
    if (same != chosen.end()) same->second = it;
    else chosen.push_back({info, it});
  }
  std::vector<ProbePlan> probes;
  for (const auto& [info, it] : chosen) {
    ProbeBuilder b{*it, *info, plan, diags, {}};
    if (auto p = b.build()) probes.push_back(*p);
  }
  plan.probes = std::move(probes);
}

}  // namespace posc::sema
