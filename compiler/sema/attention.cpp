// Component expansion and the primitives of the attention section.
#include "compiler/sema/attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "compiler/sema/arguments.h"
#include "compiler/sema/evaluate.h"
#include "compiler/sema/formula.h"
#include "compiler/sema/resources.h"
#include "compiler/sema/types.h"

namespace posc::sema {

namespace {

// The most entries a table parameter may have (a T5 table has 32; the kernels
// keep every head's entries beside its other parameters).
constexpr int kMaxTableSize = 65536;

using VK = Value::Kind;

struct UseSite {
  std::string component;
  SourceRange range;
};

// One component instance (or the experiment's own attention section).
struct Scope {
  std::string prefix;                 // "" or "decay", "decay#2"
  std::map<std::string, int> params;  // local name -> plan param index
};

struct PrimitiveParam {
  std::string name;
  std::string type;
  bool required;
};

class Builder {
 public:
  Builder(const Program& program, plan::ExperimentPlan& plan, const SourceManager& sources,
          DiagnosticEngine& diags)
      : program_(program), plan_(plan), sources_(sources), diags_(diags), base_env_(nullptr) {
    base_env_.bind("heads", Value::makeNumber(plan.model.heads, {}));
    base_env_.bind("head_dim", Value::makeNumber(plan.model.head_dim, {}));
    base_env_.bind("head_pairs", Value::makeNumber(plan.model.head_dim / 2, {}));
  }

  void run(const std::vector<const ast::Item*>& items) {
    Scope top;
    for (const ast::Item* it : items) item(*it, base_env_, top);
    checkOverlaps();
  }

 private:
  const Program& program_;
  plan::ExperimentPlan& plan_;
  const SourceManager& sources_;
  DiagnosticEngine& diags_;
  Env base_env_;
  std::vector<UseSite> stack_;
  std::map<std::string, int> instances_;
  std::vector<SourceRange> rotation_sites_;

  // An error with "in component X used here" notes for each enclosing use.
  Diagnostic& error(SourceRange r, std::string msg) {
    Diagnostic& d = diags_.error(r, std::move(msg));
    d.notes = useSites();
    return d;
  }

  // Where the components being expanded were used, innermost first.
  std::vector<DiagnosticNote> useSites() const {
    std::vector<DiagnosticNote> notes;
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it)
      notes.push_back({it->range, fmt::format("in component '{}' used here", it->component)});
    return notes;
  }

  // "rope > rotate @ decay.pos:12": the chain of components and the outermost
  // use site (file name only, so plans do not depend on where posc lives).
  std::string origin(SourceRange r) const {
    std::string chain;
    for (const UseSite& u : stack_) chain += (chain.empty() ? "" : " > ") + u.component;
    SourceRange site = stack_.empty() ? r : stack_.front().range;
    if (chain.empty()) chain = "attention";
    if (!site.valid()) return chain;
    const SourceFile& f = sources_.file(site.file);
    return fmt::format("{} @ {}:{}", chain, std::filesystem::path(f.path()).filename().string(),
                       f.lineColumn(site.begin).line);
  }

  bool convert(const Value& v, const std::string& type, const std::string& what, Value& out) {
    return convertValue(v, type, what, plan_.model,
                        [this](SourceRange r, std::string msg) -> Diagnostic& { return error(r, std::move(msg)); }, out);
  }

  static std::vector<int> headsOf(const Value& v) {
    std::vector<int> out;
    if (v.kind == VK::List)
      for (const Value& h : v.elements) out.push_back(static_cast<int>(h.number));
    return out;
  }
  static plan::KindSet kindsOf(const Value& v) {
    plan::KindSet s;
    static const std::map<std::string, plan::TokenKind> names = {
        {"digit", plan::TokenKind::Digit}, {"separator", plan::TokenKind::Separator}, {"special", plan::TokenKind::Special}};
    for (const Value& k : v.elements) s.insert(names.at(k.text));
    return s;
  }
  static plan::Channel channelOf(const Value& v) {
    plan::Channel c = plan::Channel::Position;
    channelFromName(v.text, c);
    return c;
  }

  // Binds call arguments to a list of typed parameters (primitives).
  bool bindPrimitive(const ast::Item& it, const std::vector<PrimitiveParam>& params, const Env& env,
                     std::map<std::string, Value>& out, std::map<std::string, Value> defaults) {
    CallShape shape;
    shape.callee = fmt::format("'{}'", it.name.text);
    shape.context = useSites();
    for (const PrimitiveParam& p : params) shape.parameters.push_back({p.name, p.required, {}});
    MatchedArguments matched = matchArguments(shape, it.args, it.range, diags_);
    bool ok = matched.ok;
    for (const PrimitiveParam& p : params) {  // what is not given: its default
      Value converted;
      if (!matched.has(p.name) && defaults.count(p.name) && convert(defaults[p.name], p.type, p.name, converted))
        out[p.name] = converted;
    }
    for (const auto& [name, arg] : matched.inSourceOrder()) {
      const std::string& given = name;
      const PrimitiveParam& p = *std::find_if(params.begin(), params.end(), [&](const auto& x) { return x.name == given; });
      auto v = evaluate(*arg->value, env, diags_);
      Value converted;
      if (!v || !convert(*v, p.type, fmt::format("'{}' of {}", p.name, it.name.text), converted)) {
        ok = false;
        continue;
      }
      out[p.name] = converted;
    }
    return ok;
  }

  // ---- items ------------------------------------------------------------------------
  void item(const ast::Item& it, const Env& env, Scope& scope) {
    switch (it.kind) {
      case ast::Item::Kind::Use: use(it, env); return;
      case ast::Item::Kind::Param: param(it, env, scope); return;
      case ast::Item::Kind::Assign:
        if (it.name.text == "score") { score(it, env, scope); return; }
        {
          Diagnostic& d = error(it.name.range, fmt::format("'{}' cannot be assigned in an attention section", it.name.text));
          suggest(d, it.name.text, {"score"});
          d.hint = "attention items are: use <component>(...), param, score = <formula>, rotate(...), zero_keys(...), embed(...), null_slot(), require(...)";
        }
        return;
      case ast::Item::Kind::Call: primitive(it, env); return;
    }
  }

  // ---- primitives -------------------------------------------------------------------
  // The attention primitives, one row each: the name, the typed parameters
  // (optional ones with their defaults) and the member that adds the plan
  // struct from the bound arguments. A new primitive is a row, its plan
  // struct and its member; binding, errors and suggestions come from here.
  using Args = std::map<std::string, Value>;
  struct Primitive {
    const char* name;
    std::vector<PrimitiveParam> params;
    Args defaults;
    void (Builder::*add)(const ast::Item& it, Args& a);
  };

  // YaRN's ramp for LLaMA (alpha = 1, beta = 32 turns within the original length).
  static Value yarnRamp() {
    Value v;
    v.kind = Value::Kind::List;
    v.elements = {Value::makeNumber(1, {}), Value::makeNumber(32, {})};
    return v;
  }

  static const std::vector<Primitive>& primitives() {
    static const Value none = Value::makeNone({});
    static const Value all = Value::makeSymbol("all", {});
    static const std::vector<Primitive> table = {
        {"rotate",
         {{"pairs", "pairs", true}, {"by", "channel", true}, {"base", "real", false}, {"stretch", "dist", false},
          {"heads", "heads", false}, {"xpos", "real", false}, {"interpolate", "real", false}, {"yarn", "real", false},
          {"yarn_ramp", "values", false}},
         {{"base", Value::makeNumber(10000, {})}, {"stretch", none}, {"heads", all}, {"xpos", Value::makeNumber(0, {})},
          {"interpolate", Value::makeNumber(1, {})}, {"yarn", Value::makeNumber(0, {})}, {"yarn_ramp", yarnRamp()}},
         &Builder::addRotation},
        {"zero_keys",
         {{"kinds", "kinds", true}, {"pairs", "pairs", true}, {"heads", "heads", false}},
         {{"heads", all}},
         &Builder::addKeyZeroing},
        {"embed",
         {{"table", "any", true}, {"channel", "channel", false}, {"size", "int", false}, {"offset", "int", false}},
         {{"channel", Value::makeSymbol("position", {})}, {"size", Value::makeNumber(1024, {})},
          {"offset", Value::makeNumber(0, {})}},
         &Builder::addEmbedding},
        {"randomize", {{"channel", "channel", false}, {"range", "int", true}},
         {{"channel", Value::makeSymbol("position", {})}},
         &Builder::addSampling},
        {"null_slot", {}, {}, &Builder::addNullSlot},
        {"require", {{"condition", "bool", true}, {"message", "text", true}}, {}, &Builder::checkRequirement},
    };
    return table;
  }

  void primitive(const ast::Item& it, const Env& env) {
    const std::string& name = it.name.text;
    for (const Primitive& p : primitives()) {
      if (name != p.name) continue;
      Args a;
      if (bindPrimitive(it, p.params, env, a, p.defaults)) (this->*p.add)(it, a);
      return;
    }
    std::vector<std::string> names;
    for (const Primitive& p : primitives()) names.emplace_back(p.name);
    Diagnostic& d = error(it.name.range, fmt::format("unknown attention primitive '{}'", name));
    suggest(d, name, names);
    if (program_.components.count(name)) d.hint = fmt::format("'{}' is a component: write 'use {}(...)'", name, name);
    else if (d.notes.size() == stack_.size())
      d.hint = fmt::format("primitives are {}; components are used with 'use'", listWithAnd(names));
  }

  static std::string listWithAnd(const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
      out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return out;
  }

  void addRotation(const ast::Item& it, Args& a) {
    if (a["base"].number <= 1) {
      error(a["base"].range, fmt::format("rotation base must be greater than 1, got {:g}", a["base"].number));
      return;
    }
    if (a["xpos"].number < 0) {
      Diagnostic& d = error(a["xpos"].range, fmt::format("xPos's scale base must be positive, got {:g}", a["xpos"].number));
      d.hint = "xpos = 512 as in the xPos paper; 0 turns the scaling off";
      return;
    }
    if (!(a["interpolate"].number >= 1)) {
      Diagnostic& d = error(a["interpolate"].range,
                            fmt::format("the interpolation factor must be at least 1, got {:g}", a["interpolate"].number));
      d.hint = "interpolate = 4 evaluates at 4 times the trained length (Position Interpolation divides every "
               "frequency by it)";
      return;
    }
    if (a["yarn"].number < 0) {
      Diagnostic& d = error(a["yarn"].range, fmt::format("YaRN's original length must be positive, got {:g}", a["yarn"].number));
      d.hint = "yarn = the context length the model was trained at; 0 turns the ramp off";
      return;
    }
    const Value& ramp = a["yarn_ramp"];
    if (ramp.elements.size() != 2 || !(ramp.elements[0].number < ramp.elements[1].number)) {
      Diagnostic& d = error(ramp.range, "YaRN's ramp is two numbers of turns, the first below the second");
      d.hint = "yarn_ramp = [1, 32] as in the YaRN paper for LLaMA";
      return;
    }
    plan::Rotation r;
    r.xpos_scale_base = a["xpos"].number;
    r.interpolate = a["interpolate"].number;
    r.yarn_length = a["yarn"].number;
    r.yarn_alpha = ramp.elements[0].number;
    r.yarn_beta = ramp.elements[1].number;
    r.channel = channelOf(a["by"]);
    r.pair_begin = static_cast<int>(a["pairs"].lo);
    r.pair_end = static_cast<int>(a["pairs"].hi);
    r.base = a["base"].number;
    if (a["stretch"].kind == VK::Dist) r.stretch = a["stretch"].dist;
    r.heads = headsOf(a["heads"]);
    r.origin = origin(it.range);
    plan_.attention.rotations.push_back(r);
    rotation_sites_.push_back(stack_.empty() ? it.range : stack_.front().range);
  }

  void addKeyZeroing(const ast::Item& it, Args& a) {
    plan::KeyZeroing z;
    z.kinds = kindsOf(a["kinds"]);
    z.pair_begin = static_cast<int>(a["pairs"].lo);
    z.pair_end = static_cast<int>(a["pairs"].hi);
    z.heads = headsOf(a["heads"]);
    z.origin = origin(it.range);
    plan_.attention.key_zeroing.push_back(z);
  }

  void addEmbedding(const ast::Item& it, Args& a) {
    plan::AbsoluteEmbedding e;
    const Value& t = a["table"];
    if (t.kind == VK::Symbol && t.text == "learned") e.kind = plan::AbsoluteEmbedding::Kind::Learned;
    else if (t.kind == VK::Symbol && t.text == "sinusoidal") e.kind = plan::AbsoluteEmbedding::Kind::Sinusoidal;
    else {
      Diagnostic& d = error(t.range, fmt::format("embedding table must be learned or sinusoidal, not {}", t.describe()));
      if (t.kind == VK::Symbol) suggest(d, t.text, {"learned", "sinusoidal"});
      return;
    }
    e.channel = channelOf(a["channel"]);
    if (a["size"].number < 1) {
      error(a["size"].range, "embedding size must be at least 1");
      return;
    }
    e.max_index = static_cast<int>(a["size"].number);
    if (a["offset"].number < 0 || (a["offset"].number > 0 && e.kind != plan::AbsoluteEmbedding::Kind::Learned)) {
      Diagnostic& d = error(a["offset"].range, a["offset"].number < 0 ? "a training offset cannot be negative"
                                                                      : "a training offset needs a learned table");
      d.hint = "offset = k draws a shift of 0..k per training sequence (Abacus); 0 turns it off";
      return;
    }
    e.train_offset = static_cast<int>(a["offset"].number);
    e.origin = origin(it.range);
    plan_.attention.embeddings.push_back(e);
  }

  // randomize(channel, range): see plan::ChannelSampling. Training and
  // evaluation both draw labels from the range, so it must hold every value
  // of the longest training and the longest test sequence.
  void addSampling(const ast::Item& it, Args& a) {
    plan::ChannelSampling c;
    c.channel = channelOf(a["channel"]);
    const Value& range = a["range"];
    if (c.channel == plan::Channel::Kind) {
      Diagnostic& d = error(a["channel"].range, "the kind channel names token kinds; it has no order to randomise");
      d.hint = "randomize(channel = position, ...) or column or row";
      return;
    }
    for (const auto& other : plan_.attention.sampled_channels)
      if (other.channel == c.channel) {
        Diagnostic& d = error(it.range, fmt::format("the {} channel is already randomised", plan::channelName(c.channel)));
        d.notes.push_back({{}, fmt::format("first randomised at {}", other.origin)});
        return;
      }
    const plan::TaskPlan& task = plan_.task;
    int test_digits = 0;
    for (int digits : task.test_digits) test_digits = std::max(test_digits, digits);
    const bool test_longer = test_digits > task.train_max_digits;
    const int digits = test_longer ? test_digits : task.train_max_digits;
    const int largest = channelMaximum(task, c.channel, digits);
    if (range.number < largest + 1) {
      Diagnostic& d = error(range.range, fmt::format("a range of {:g} cannot hold the {} values 0..{} of the longest "
                                                     "{} sequence ({} digits)",
                                                     range.number, plan::channelName(c.channel), largest,
                                                     test_longer ? "test" : "training", digits));
      d.hint = fmt::format("range = {} or more: training and evaluation both draw the {} labels from it", largest + 1,
                           plan::channelName(c.channel));
      return;
    }
    c.range = static_cast<int>(range.number);
    c.origin = origin(it.range);
    plan_.attention.sampled_channels.push_back(c);
  }

  void addNullSlot(const ast::Item&, Args&) { plan_.attention.null_slot = true; }

  void checkRequirement(const ast::Item& it, Args& a) {
    if (!a["condition"].boolean) {
      Diagnostic& d = diags_.error(stack_.empty() ? it.range : stack_.back().range, a["message"].text);
      d.notes.push_back({it.range, "required here"});
    }
  }

  // Declares `p` in the scope. A parameter whose declaration had an error is
  // still declared (with zeros), so formulas that use it report nothing more.
  void declare(const ast::Item& it, Scope& scope, plan::Param p) {
    if (scope.params.count(it.name.text)) {
      error(it.name.range, fmt::format("parameter '{}' is declared twice", it.name.text));
      return;
    }
    scope.params[it.name.text] = static_cast<int>(plan_.attention.params.size());
    plan_.attention.params.push_back(std::move(p));
  }

  void param(const ast::Item& it, const Env& env, Scope& scope) {
    plan::Param fallback;
    fallback.name = scope.prefix.empty() ? it.name.text : scope.prefix + "." + it.name.text;
    fallback.per_head = !it.index.text.empty();
    fallback.size = it.size ? 1 : 0;
    fallback.init.assign(fallback.per_head ? static_cast<size_t>(plan_.model.heads) : 1, 0.0);
    if (!paramChecked(it, env, scope)) declare(it, scope, fallback);
  }

  // The size of a table parameter (`bias[h][32]`), or nullopt after an error.
  std::optional<int> tableSize(const ast::Expr& e, const Env& env) {
    auto v = evaluate(e, env, diags_);
    if (!v) return std::nullopt;
    if (v->kind != VK::Number || v->number != std::floor(v->number) || v->number < 1 || v->number > kMaxTableSize) {
      Diagnostic& d = error(v->range, fmt::format("a table's size must be a whole number from 1 to {}, not {}",
                                                  kMaxTableSize, v->describe()));
      d.hint = "write param name[h][size] for a table per head, param name[size] for one table shared by the heads";
      return std::nullopt;
    }
    return static_cast<int>(v->number);
  }

  // A table's starting values: a number for every entry, a list of `size`
  // numbers (every head the same), or for a per-head table a list of one
  // such list per head. Row-major (head, entry) into p.init.
  bool tableInit(const Value& init, plan::Param& p) {
    const size_t rows = p.per_head ? static_cast<size_t>(plan_.model.heads) : 1, w = static_cast<size_t>(p.size);
    auto row = [&](const Value& list, std::vector<double>& out) {
      if (list.kind != VK::List || list.elements.size() != w) {
        error(list.range, fmt::format("a row of table '{}' has {} entries; give {}", p.name,
                                      list.kind == VK::List ? fmt::format("{}", list.elements.size()) : list.describe(), w));
        return false;
      }
      for (const Value& x : list.elements) {
        if (x.kind != VK::Number) {
          error(x.range, fmt::format("parameter values must be numbers, not {}", x.describe()));
          return false;
        }
        out.push_back(x.number);
      }
      return true;
    };
    if (init.kind == VK::Number) {
      p.init.assign(rows * w, init.number);
      return true;
    }
    if (init.kind == VK::List && !init.elements.empty() && init.elements.front().kind == VK::List) {
      if (!p.per_head) {
        error(init.range, fmt::format("table '{}' is shared by the heads: give one row of {} numbers", p.name, w));
        return false;
      }
      if (init.elements.size() != rows) {
        Diagnostic& d = error(init.range, fmt::format("table '{}' has {} row{} but the model has {} heads", p.name,
                                                      init.elements.size(), init.elements.size() == 1 ? "" : "s", rows));
        d.hint = "give one row per head, one row for every head, or a single number";
        return false;
      }
      for (const Value& r : init.elements)
        if (!row(r, p.init)) return false;
      return true;
    }
    std::vector<double> one;
    if (!row(init, one)) return false;
    for (size_t r = 0; r < rows; ++r) p.init.insert(p.init.end(), one.begin(), one.end());
    return true;
  }

  // Returns false if the declaration had an error (reported).
  bool paramChecked(const ast::Item& it, const Env& env, Scope& scope) {
    bool per_head = !it.index.text.empty();
    if (per_head && it.index.text != "h") {
      error(it.index.range, fmt::format("per-head parameters are indexed by 'h', not '{}'", it.index.text));
      return false;
    }
    if (!it.extra_dims.empty()) {
      Diagnostic& d = error(it.extra_dims.front()->range, "a parameter has at most two brackets");
      d.hint = "[h] makes one per head and [size] a table: param name[h][size] = ...";
      return false;
    }
    std::optional<int> size;
    if (it.size && !(size = tableSize(*it.size, env))) return false;
    auto init = evaluate(*it.value, env, diags_);
    if (!init) return false;
    bool learned = false;
    for (const ast::Option& o : it.options) {
      if (o.name.text != "learned") {
        Diagnostic& d = error(o.name.range, fmt::format("unknown param option '{}'", o.name.text));
        suggest(d, o.name.text, {"learned"});
        return false;
      }
      auto v = evaluate(*o.value, env, diags_);
      if (!v) return false;
      if (v->kind != VK::Bool) {
        error(v->range, fmt::format("'learned' must be true or false, not {}", v->describe()));
        return false;
      }
      learned = v->boolean;
    }
    plan::Param p;
    p.name = scope.prefix.empty() ? it.name.text : scope.prefix + "." + it.name.text;
    p.per_head = per_head;
    p.learned = learned;
    if (size) {
      p.size = *size;
      if (!tableInit(*init, p)) return false;
      declare(it, scope, p);
      return true;
    }
    int heads = plan_.model.heads;
    if (init->kind == VK::Number) {
      p.init.assign(per_head ? static_cast<size_t>(heads) : 1, init->number);
    } else if (init->kind == VK::List && per_head) {
      for (const Value& x : init->elements) {
        if (x.kind != VK::Number) {
          error(x.range, fmt::format("parameter values must be numbers, not {}", x.describe()));
          return false;
        }
        p.init.push_back(x.number);
      }
      if (static_cast<int>(p.init.size()) != heads) {
        Diagnostic& d = error(init->range, fmt::format("per-head parameter '{}' has {} value{} but the model has {} heads",
                                                       it.name.text, p.init.size(), p.init.size() == 1 ? "" : "s", heads));
        d.hint = "give one value per head, or a single number for every head";
        return false;
      }
    } else {
      error(init->range, per_head ? fmt::format("a per-head parameter starts from a number or a list, not {}", init->describe())
                                  : fmt::format("a scalar parameter starts from a number, not {}", init->describe()));
      return false;
    }
    declare(it, scope, p);
    return true;
  }

  void score(const ast::Item& it, const Env& env, Scope& scope) {
    FormulaScope fs{env, scope.params, plan_.attention};
    auto formula = compileFormula(*it.value, fs, diags_);
    plan::ScoreTerm term;
    for (const ast::Option& o : it.options) {
      const std::string& n = o.name.text;
      if (n != "exempt_keys" && n != "exempt_queries" && n != "heads") {
        Diagnostic& d = error(o.name.range, fmt::format("unknown score option '{}'", n));
        suggest(d, n, {"exempt_keys", "exempt_queries", "heads"});
        continue;
      }
      auto v = evaluate(*o.value, env, diags_);
      if (!v) continue;
      Value c;
      if (!convert(*v, n == "heads" ? "heads" : "kinds", "'" + n + "'", c)) continue;
      if (n == "heads") term.heads = headsOf(c);
      else if (n == "exempt_keys") term.exempt_keys = kindsOf(c);
      else term.exempt_queries = kindsOf(c);
    }
    if (!formula) return;
    term.formula = *formula;
    term.name = scope.prefix.empty() ? "score" : scope.prefix;
    term.origin = origin(it.range);
    plan_.attention.score_terms.push_back(term);
  }

  void use(const ast::Item& it, const Env& env) {
    auto found = program_.components.find(it.name.text);
    if (found == program_.components.end()) {
      Diagnostic& d = error(it.name.range, fmt::format("unknown component '{}'", it.name.text));
      std::vector<std::string> names;
      for (const auto& [n, _] : program_.components) names.push_back(n);
      suggest(d, it.name.text, names);
      d.hint = "components come from imported modules, e.g. 'import rope' for rope(...)";
      return;
    }
    if (stack_.size() >= 16) {
      error(it.range, fmt::format("components are nested more than 16 deep; does '{}' use itself?", it.name.text));
      return;
    }
    const ast::Component& c = *found->second;
    Env args(&base_env_);
    CallShape shape;
    shape.callee = fmt::format("component '{}'", c.name.text);
    shape.noun = "parameter";
    shape.declared = c.name.range;
    shape.context = useSites();
    for (const ast::ComponentParam& p : c.params)
      shape.parameters.push_back({p.name.text, p.default_value == nullptr, p.range});
    MatchedArguments matched = matchArguments(shape, it.args, it.range, diags_);
    bool ok = matched.ok;
    auto declared = [&](const std::string& name) -> const ast::ComponentParam& {
      return *std::find_if(c.params.begin(), c.params.end(), [&](const auto& x) { return x.name.text == name; });
    };
    for (const auto& [name, arg] : matched.inSourceOrder()) {
      const ast::ComponentParam& p = declared(name);
      auto v = evaluate(*arg->value, env, diags_);
      Value converted;
      if (!v || !convert(*v, p.type.text, fmt::format("argument '{}' of {}", p.name.text, c.name.text), converted)) {
        ok = false;
        continue;
      }
      args.bind(p.name.text, converted);
    }
    // Defaults, in declaration order, may use earlier parameters.
    stack_.push_back({c.name.text, it.range});
    for (const ast::ComponentParam& p : c.params) {
      if (matched.has(p.name.text) || !p.default_value) continue;
      auto v = evaluate(*p.default_value, args, diags_);
      Value converted;
      if (!v || !convert(*v, p.type.text, fmt::format("default of '{}'", p.name.text), converted)) {
        ok = false;
        continue;
      }
      args.bind(p.name.text, converted);
    }
    if (ok) {
      Scope scope;
      int n = ++instances_[c.name.text];
      scope.prefix = n == 1 ? c.name.text : fmt::format("{}#{}", c.name.text, n);
      for (const ast::Item& body : c.body) item(body, args, scope);
    }
    stack_.pop_back();
  }

  void checkOverlaps() {
    const auto& rs = plan_.attention.rotations;
    auto covers = [&](const plan::Rotation& r, int h) {
      return r.heads.empty() || std::find(r.heads.begin(), r.heads.end(), h) != r.heads.end();
    };
    for (size_t j = 0; j < rs.size(); ++j)
      for (size_t i = 0; i < j; ++i) {
        int lo = std::max(rs[i].pair_begin, rs[j].pair_begin), hi = std::min(rs[i].pair_end, rs[j].pair_end);
        if (lo >= hi) continue;
        for (int h = 0; h < plan_.model.heads; ++h) {
          if (!covers(rs[i], h) || !covers(rs[j], h)) continue;
          Diagnostic& d = diags_.error(rotation_sites_[j],
                                       fmt::format("rotation pairs {}..{} of head {} are already rotated by {}", lo, hi, h,
                                                   plan::channelName(rs[i].channel)));
          d.notes.push_back({rotation_sites_[i], "first rotated here"});
          d.hint = "give each rotation its own pair range, e.g. rows on 0..16 and columns on 16..32";
          break;
        }
      }
  }
};

}  // namespace

void buildAttention(const std::vector<const ast::Item*>& items, const Program& program,
                    plan::ExperimentPlan& plan, const SourceManager& sources, DiagnosticEngine& diags) {
  Builder b(program, plan, sources, diags);
  b.run(items);
}

}  // namespace posc::sema
