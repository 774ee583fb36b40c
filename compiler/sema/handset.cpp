// Hand-set model sections -> plan::HandsetModel (see handset.h).
#include "compiler/sema/handset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "compiler/sema/evaluate.h"

namespace posc::sema {

namespace {

using plan::WeightTensor;

const std::vector<std::string>& handsetSections() {
  static const std::vector<std::string> s = {"shared", "embed", "layer", "unembed"};
  return s;
}

struct Shape {
  int rows = 0, cols = 1;
  bool vector = false;
  std::string describe() const {
    return vector ? fmt::format("a vector of {}", rows) : fmt::format("a {} x {} matrix", rows, cols);
  }
};

struct Builder {
  plan::ExperimentPlan& plan;
  DiagnosticEngine& diags;
  Env shared_env;
  std::map<std::string, int> shared_index;

  // A number written as an entry; `tie` is the shared value it names, if any.
  bool entry(const ast::Expr& e, double& out, int& tie) {
    tie = -1;
    if (e.kind == ast::Expr::Kind::Name) {
      auto it = shared_index.find(e.name.text);
      if (it != shared_index.end()) tie = it->second;
    }
    auto v = evaluate(e, shared_env, diags);
    if (!v) return false;
    if (v->kind != Value::Kind::Number || !std::isfinite(v->number)) {
      Diagnostic& d = diags.error(e.range, fmt::format("a weight entry must be a finite number, not {}", v->describe()));
      if (v->kind == Value::Kind::Symbol) {
        std::vector<std::string> names;
        for (const auto& [n, _] : shared_index) names.push_back(n);
        suggest(d, v->text, names);
        d.hint = "names in weights are the values declared in the shared section";
      }
      return false;
    }
    out = v->number;
    return true;
  }

  bool integerArg(const ast::Expr& e, int& out) {
    auto v = evaluate(e, shared_env, diags);
    if (!v) return false;
    if (!v->isInteger() || v->number < 0) {
      diags.error(e.range, fmt::format("expected a non-negative integer, not {}", v->describe()));
      return false;
    }
    out = static_cast<int>(v->number);
    return true;
  }

  void shapeError(const ast::Expr& e, const std::string& what, const Shape& want, const std::string& got) {
    Diagnostic& d = diags.error(e.range, fmt::format("{} is {}, but this is {}", what, want.describe(), got));
    d.hint = want.vector ? fmt::format("write [v0, ..., v{}] or sparse([(index, value), ...])", want.rows - 1)
                         : fmt::format("write {} rows of {} numbers, or zeros(), identity() or sparse([(row, col, value), ...])",
                                       want.rows, want.cols);
  }

  // Fills `t` from the weight expression `e`; false after reporting.
  bool weight(const ast::Expr& e, const std::string& what, const Shape& want, WeightTensor& t) {
    t.present = true;
    t.rows = want.rows;
    t.cols = want.vector ? 1 : want.cols;
    t.name = what;
    t.values.assign(static_cast<size_t>(t.rows) * t.cols, 0.0);
    t.tie.assign(t.values.size(), -1);
    if (e.kind == ast::Expr::Kind::Call) return builtin(e, what, want, t);
    if (e.kind != ast::Expr::Kind::List) {
      shapeError(e, what, want, "not a list, zeros(), identity() or sparse(...)");
      return false;
    }
    if (want.vector) {
      if (static_cast<int>(e.elements.size()) != want.rows) {
        shapeError(e, what, want, fmt::format("a list of {}", e.elements.size()));
        return false;
      }
      bool ok = true;
      for (int i = 0; i < want.rows; ++i) ok &= entry(*e.elements[static_cast<size_t>(i)], t.values[static_cast<size_t>(i)], t.tie[static_cast<size_t>(i)]);
      return ok;
    }
    if (static_cast<int>(e.elements.size()) != want.rows) {
      shapeError(e, what, want, fmt::format("a list of {} rows", e.elements.size()));
      return false;
    }
    bool ok = true;
    for (int r = 0; r < want.rows; ++r) {
      const ast::Expr& row = *e.elements[static_cast<size_t>(r)];
      if (row.kind != ast::Expr::Kind::List || static_cast<int>(row.elements.size()) != want.cols) {
        Diagnostic& d = diags.error(row.range, row.kind != ast::Expr::Kind::List
            ? fmt::format("row {} of {} must be a list of {} numbers", r, what, want.cols)
            : fmt::format("row {} of {} has {} entr{}, expected {}", r, what, row.elements.size(),
                          row.elements.size() == 1 ? "y" : "ies", want.cols));
        d.hint = fmt::format("{} is {}", what, want.describe());
        ok = false;
        continue;
      }
      for (int c = 0; c < want.cols; ++c) {
        size_t i = static_cast<size_t>(r) * want.cols + c;
        ok &= entry(*row.elements[static_cast<size_t>(c)], t.values[i], t.tie[i]);
      }
    }
    return ok;
  }

  bool builtin(const ast::Expr& e, const std::string& what, const Shape& want, WeightTensor& t) {
    const std::string& f = e.name.text;
    auto argCount = [&](size_t lo, size_t hi) {
      if (e.args.size() >= lo && e.args.size() <= hi) return true;
      diags.error(e.range, fmt::format("{}() takes {} argument{}, got {}", f,
                                       lo == hi ? fmt::format("{}", lo) : fmt::format("{} to {}", lo, hi),
                                       hi == 1 ? "" : "s", e.args.size()));
      return false;
    };
    if (f == "zeros") {
      if (!argCount(0, 2)) return false;
      std::vector<int> dims;
      for (const ast::Arg& a : e.args) {
        int n;
        if (!integerArg(*a.value, n)) return false;
        dims.push_back(n);
      }
      const std::vector<int> expected = want.vector ? std::vector<int>{want.rows} : std::vector<int>{want.rows, want.cols};
      if (!dims.empty() && dims != expected) {
        std::string got = dims.size() == 1 ? fmt::format("zeros({})", dims[0]) : fmt::format("zeros({}, {})", dims[0], dims[1]);
        shapeError(e, what, want, got);
        return false;
      }
      return true;
    }
    if (f == "identity") {
      if (!argCount(0, 1)) return false;
      if (want.vector || want.rows != want.cols) {
        shapeError(e, what, want, "an identity, which is square");
        return false;
      }
      if (e.args.size() == 1) {
        int n;
        if (!integerArg(*e.args[0].value, n)) return false;
        if (n != want.rows) {
          shapeError(e, what, want, fmt::format("identity({})", n));
          return false;
        }
      }
      for (int i = 0; i < want.rows; ++i) t.values[static_cast<size_t>(i) * t.cols + i] = 1.0;
      return true;
    }
    if (f == "sparse") {
      if (!argCount(1, 1)) return false;
      const ast::Expr& list = *e.args[0].value;
      if (list.kind != ast::Expr::Kind::List) {
        diags.error(list.range, want.vector ? "sparse() takes a list of (index, value) pairs"
                                            : "sparse() takes a list of (row, col, value) triples");
        return false;
      }
      const size_t arity = want.vector ? 2 : 3;
      std::set<size_t> seen;
      bool ok = true;
      for (const ast::ExprPtr& item : list.elements) {
        if (item->kind != ast::Expr::Kind::Tuple || item->elements.size() != arity) {
          Diagnostic& d = diags.error(item->range, want.vector ? "a sparse entry of a vector is (index, value)"
                                                               : "a sparse entry of a matrix is (row, col, value)");
          d.hint = fmt::format("{} is {}", what, want.describe());
          ok = false;
          continue;
        }
        int index[2] = {0, 0};
        const int bound[2] = {want.rows, want.cols};
        const char* axis[2] = {want.vector ? "index" : "row", "column"};
        bool entry_ok = true;
        for (size_t k = 0; k + 1 < arity; ++k) {
          const ast::Expr& ix = *item->elements[k];
          if (!integerArg(ix, index[k])) { entry_ok = false; break; }
          if (index[k] >= bound[k]) {
            Diagnostic& d = diags.error(ix.range, fmt::format("{} {} is out of range for {}", axis[k], index[k], what));
            d.hint = fmt::format("{} is {}: {} indices run from 0 to {}", what, want.describe(), axis[k], bound[k] - 1);
            entry_ok = false;
            break;
          }
        }
        if (!entry_ok) { ok = false; continue; }
        size_t i = static_cast<size_t>(index[0]) * t.cols + index[1];
        if (!seen.insert(i).second) {
          diags.error(item->range, fmt::format("this entry of {} is written twice", what));
          ok = false;
          continue;
        }
        ok &= entry(*item->elements[arity - 1], t.values[i], t.tie[i]);
      }
      return ok;
    }
    Diagnostic& d = diags.error(e.name.range, fmt::format("unknown weight builtin '{}'", f));
    suggest(d, f, {"zeros", "identity", "sparse"});
    d.hint = "a weight is a list literal, zeros(), identity() or sparse([...])";
    return false;
  }
};

// Integer settings of embed/layer sections.
bool sizeSetting(const ast::Item& it, Env& env, DiagnosticEngine& diags, int lo, int& out) {
  auto v = evaluate(*it.value, env, diags);
  if (!v) return false;
  if (!v->isInteger() || v->number < lo || v->number > 1 << 16) {
    diags.error(it.value->range, fmt::format("'{}' takes an integer >= {}, not {}", it.name.text, lo, v->describe()));
    return false;
  }
  out = static_cast<int>(v->number);
  return true;
}

}  // namespace

bool isHandsetSection(const std::string& name) {
  const auto& s = handsetSections();
  return std::find(s.begin(), s.end(), name) != s.end();
}

void buildHandset(const std::vector<const ast::Section*>& sections, SourceRange at, plan::ExperimentPlan& plan,
                  DiagnosticEngine& diags) {
  plan::HandsetModel m;
  const int digit_tokens = [&] { int n = 1; for (int i = 0; i < plan.task.digits_per_token; ++i) n *= 10; return n; }();
  m.vocab = digit_tokens + 4 + (plan.task.bos ? 1 : 0);
  Builder b{plan, diags, Env{}, {}};
  const int errors_before = diags.errorCount();

  // Items of one section by name; reports unknown and repeated names.
  auto collect = [&](const ast::Section& s, const std::vector<std::string>& known) {
    std::map<std::string, const ast::Item*> items;
    for (const ast::Item& it : s.items) {
      if (it.kind != ast::Item::Kind::Assign || !it.options.empty()) {
        diags.error(it.range, fmt::format("the {} section holds weights written 'name = value'", s.name.text));
        continue;
      }
      if (std::find(known.begin(), known.end(), it.name.text) == known.end()) {
        Diagnostic& d = diags.error(it.name.range, fmt::format("unknown {} entry '{}'", s.name.text, it.name.text));
        suggest(d, it.name.text, known);
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        d.hint = fmt::format("the {} section has: {}", s.name.text, list);
        continue;
      }
      if (!items.emplace(it.name.text, &it).second) diags.error(it.name.range, fmt::format("'{}' is written twice in this section", it.name.text));
    }
    return items;
  };

  bool have_embed = false;
  const ast::Section* embed_section = nullptr;
  for (const ast::Section* s : sections) {
    if (s->name.text == "shared") {
      for (const ast::Item& it : s->items) {
        if (it.kind != ast::Item::Kind::Assign) {
          diags.error(it.range, "the shared section holds values written 'name = number'");
          continue;
        }
        if (b.shared_index.count(it.name.text)) {
          diags.error(it.name.range, fmt::format("shared value '{}' is declared twice", it.name.text));
          continue;
        }
        double v;
        int tie;
        if (!b.entry(*it.value, v, tie)) continue;
        b.shared_index[it.name.text] = static_cast<int>(m.shared.size());
        m.shared.push_back({it.name.text, v});
        b.shared_env.bind(it.name.text, Value::makeNumber(v, it.value->range));
      }
    }
  }
  for (const ast::Section* s : sections) {
    const std::string& kind = s->name.text;
    if (kind == "embed") {
      if (have_embed) {
        Diagnostic& d = diags.error(s->name.range, "a hand-set model has one embed section");
        d.notes.push_back({embed_section->name.range, "the first one is here"});
        continue;
      }
      have_embed = true;
      embed_section = s;
      auto items = collect(*s, {"width", "table"});
      if (!items.count("width")) { diags.error(s->name.range, "the embed section needs 'width = N'"); continue; }
      if (!sizeSetting(*items["width"], b.shared_env, diags, 1, m.embed_width)) continue;
      if (!items.count("table")) { diags.error(s->name.range, "the embed section needs 'table = ...' (vocabulary x width)"); continue; }
      b.weight(*items["table"]->value, "embed table", {m.vocab, m.embed_width, false}, m.embed);
    } else if (kind == "layer") {
      if (!have_embed) {
        diags.error(s->name.range, "a layer section comes after the embed section");
        continue;
      }
      plan::HandsetLayer l;
      const int index = static_cast<int>(m.layers.size()) + 1;
      const int previous = m.finalWidth();
      auto items = collect(*s, {"width", "heads", "head_dim", "mlp_hidden", "query", "query_bias", "key", "key_bias",
                                "value", "value_bias", "out", "out_bias", "alibi", "gate", "gate_bias", "up",
                                "up_bias", "down", "down_bias"});
      l.width = previous;
      if (items.count("width") && sizeSetting(*items["width"], b.shared_env, diags, 1, l.width) && l.width < previous) {
        Diagnostic& d = diags.error(items["width"]->value->range,
                                    fmt::format("layer {} is narrower ({}) than the residual before it ({})", index, l.width, previous));
        d.hint = "the residual stream only grows: each layer's width is at least the previous one's";
        l.width = previous;
      }
      if (items.count("heads")) sizeSetting(*items["heads"], b.shared_env, diags, 0, l.heads);
      if (items.count("head_dim")) sizeSetting(*items["head_dim"], b.shared_env, diags, 1, l.head_dim);
      else if (l.heads > 0) diags.error(s->name.range, fmt::format("layer {} has {} heads but no 'head_dim'", index, l.heads));
      if (items.count("mlp_hidden")) sizeSetting(*items["mlp_hidden"], b.shared_env, diags, 0, l.mlp_hidden);
      const int inner = l.heads * l.head_dim;
      // `mlp`: a feed-forward tensor (needs mlp_hidden), else an attention one (needs heads).
      auto tensor = [&](const char* key, Shape shape, WeightTensor& t, bool mlp) {
        auto it = items.find(key);
        if (it == items.end()) return;
        if ((mlp ? l.mlp_hidden : inner) == 0) {
          Diagnostic& d = diags.error(it->second->name.range, fmt::format("layer {} writes '{}' but has no {}", index, key,
                                                                          mlp ? "feed-forward (mlp_hidden = 0)" : "attention (heads = 0)"));
          d.hint = mlp ? "set mlp_hidden" : "set heads and head_dim";
          return;
        }
        b.weight(*it->second->value, fmt::format("layer {} {}", index, key), shape, t);
      };
      tensor("query", {inner, l.width}, l.query, false);
      tensor("query_bias", {inner, 1, true}, l.query_bias, false);
      tensor("key", {inner, l.width}, l.key, false);
      tensor("key_bias", {inner, 1, true}, l.key_bias, false);
      tensor("value", {inner, l.width}, l.value, false);
      tensor("value_bias", {inner, 1, true}, l.value_bias, false);
      tensor("out", {l.width, inner}, l.out, false);
      tensor("out_bias", {l.width, 1, true}, l.out_bias, false);
      tensor("gate", {l.mlp_hidden, l.width}, l.gate, true);
      tensor("gate_bias", {l.mlp_hidden, 1, true}, l.gate_bias, true);
      tensor("up", {l.mlp_hidden, l.width}, l.up, true);
      tensor("up_bias", {l.mlp_hidden, 1, true}, l.up_bias, true);
      tensor("down", {l.width, l.mlp_hidden}, l.down, true);
      tensor("down_bias", {l.width, 1, true}, l.down_bias, true);
      l.alibi.assign(static_cast<size_t>(l.heads), 0.0);
      if (auto it = items.find("alibi"); it != items.end()) {
        WeightTensor slopes;
        if (l.heads == 0) diags.error(it->second->name.range, fmt::format("layer {} has ALiBi slopes but no heads", index));
        else if (b.weight(*it->second->value, fmt::format("layer {} alibi", index), {l.heads, 1, true}, slopes))
          l.alibi = slopes.values;
      }
      m.layers.push_back(std::move(l));
    } else if (kind == "unembed") {
      auto items = collect(*s, {"table"});
      if (!items.count("table")) { diags.error(s->name.range, "the unembed section needs 'table = ...' (vocabulary x width, or identity())"); continue; }
      const ast::Expr& e = *items["table"]->value;
      const int width = m.finalWidth();
      if (e.kind == ast::Expr::Kind::Call && e.name.text == "identity" && e.args.empty()) {
        if (width != m.vocab) {
          Diagnostic& d = diags.error(e.range, fmt::format("an identity output head needs the final width ({}) to equal the vocabulary ({})", width, m.vocab));
          d.hint = "widen the last layer, or write the head as a matrix";
        }
        m.identity_head = true;
        continue;
      }
      b.weight(e, "unembed table", {m.vocab, width, false}, m.unembed);
    }
  }
  if (!have_embed) diags.error(at, "a hand-set model needs an embed section");
  if (!m.identity_head && !m.unembed.present && diags.errorCount() == errors_before) {
    Diagnostic& d = diags.error(at, "a hand-set model needs an unembed section");
    d.hint = "write 'unembed { table = identity() }' when the final residual is the logits";
  }
  if (diags.errorCount() == errors_before) plan.handset = std::move(m);
}

}  // namespace posc::sema
