// Assembling an experiment: extends chain, presets, overrides, checks.
#include "compiler/sema/experiment.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include "compiler/parse/parser.h"
#include "compiler/sema/attention.h"
#include "compiler/sema/documents.h"
#include "compiler/sema/evaluate.h"
#include "compiler/sema/handset.h"
#include "compiler/sema/probes.h"
#include "compiler/sema/resources.h"
#include "compiler/sema/settings.h"

namespace posc::sema {

namespace {

struct Assembler {
  const Program& program;
  SourceManager& sources;
  DiagnosticEngine& diags;
  plan::ExperimentPlan plan;
  std::vector<const ast::Item*> attention;
  std::vector<const ast::Section*> handset;  // shared/embed/layer/unembed, of the last experiment that has them
  bool in_preset = false;
  std::vector<const ast::Item*> probes;  // in application order; see sema/probes.h
  std::deque<ast::Item> command_line_probes;  // the items of `--probe CALL`; `probes` points into them
  std::deque<ast::Item> set_uses;  // `use`s with an argument set by `--set attention.C.A`; `attention` points into them
  std::map<std::string, SourceRange> written;  // "model.width" -> its value, for every setting given
  std::vector<std::string> experiment_names;
  // Errors reported before this experiment (checkAll compiles each in turn)
  // are not this one's.
  int errors_before = 0;

  bool failed() const { return diags.errorCount() > errors_before; }
  SettingsContext context() { return {plan, diags, experiment_names, written}; }

  void section(const ast::Section& s) {
    const std::string& name = s.name.text;
    if (name == "attention") {
      if (!s.append) attention.clear();
      for (const ast::Item& it : s.items) attention.push_back(&it);
      return;
    }
    if (isHandsetSection(name)) {
      if (in_preset) diags.error(s.name.range, "hand-set weights cannot be changed by a preset");
      else handset.push_back(&s);
      return;
    }
    if (name == "probes") {
      for (const ast::Item& it : s.items) probes.push_back(&it);
      return;
    }
    const auto& sections = settingSections();
    if (std::find(sections.begin(), sections.end(), name) == sections.end()) {
      Diagnostic& d = diags.error(s.name.range, fmt::format("unknown section '{}'", name));
      std::vector<std::string> names = sections;
      names.insert(names.end(), {"attention", "probes", "shared", "embed", "layer", "unembed"});
      suggest(d, name, names);
      d.hint = "an experiment has task, model, attention, train, eval and probes sections, and presets; a hand-set model also shared, embed, layer and unembed";
      return;
    }
    if (s.append) diags.error(s.name.range, fmt::format("only attention can be extended with '+='; write '{} {{ ... }}'", name));
    std::set<std::string> seen;
    std::vector<plan::DocumentRequirement> requirements;
    std::vector<SourceRange> requirement_ranges;
    for (const ast::Item& it : s.items) {
      if (name == "eval" && it.kind == ast::Item::Kind::Call && it.name.text == "require") {
        if (auto r = buildRequirement(it, diags)) {
          requirements.push_back(*r);
          requirement_ranges.push_back(it.range);
        }
        continue;
      }
      if (it.kind != ast::Item::Kind::Assign || !it.options.empty()) {
        Diagnostic& d = diags.error(it.range, fmt::format("the {} section holds settings written 'name = value'", name));
        if (it.kind == ast::Item::Kind::Use) d.hint = "components are used in the attention section";
        if (name == "eval" && it.kind == ast::Item::Kind::Call)
          d.hint = "besides settings, the eval section holds release criteria: require(lower_bound(retrieval) >= 0.9)";
        continue;
      }
      if (!seen.insert(it.name.text).second) {
        diags.error(it.name.range, fmt::format("'{}' is set twice in this section", it.name.text));
        continue;
      }
      Env env;
      auto v = evaluate(*it.value, env, diags);
      if (!v) continue;
      SettingsContext ctx = context();
      if (applySetting(name, it.name.text, it.name.range, *v, ctx)) {
        written[name + "." + it.name.text] = it.value->range;
      }
    }
    // A section's requirements replace those of the experiment it extends.
    if (!requirements.empty()) {
      for (size_t i = 0; i < plan.eval.documents.requirements.size(); ++i) written.erase(fmt::format("eval.require.{}", i));
      plan.eval.documents.requirements = requirements;
      for (size_t i = 0; i < requirement_ranges.size(); ++i) written[fmt::format("eval.require.{}", i)] = requirement_ranges[i];
    }
  }

  void override(const Override& o) {
    std::string label = fmt::format("--set {}", o.key);
    int32_t id = sources.add(label, o.value);
    size_t dot = o.key.find('.');
    if (dot == std::string::npos) {
      Diagnostic& d = diags.error({}, fmt::format("--set needs section.name=value, got '{}'", o.key));
      d.hint = "for example --set train.steps=500";
      return;
    }
    std::string section = o.key.substr(0, dot), name = o.key.substr(dot + 1);
    if (section == "attention") {
      attentionArgument(o, id, name);
      return;
    }
    const auto& sections = settingSections();
    if (std::find(sections.begin(), sections.end(), section) == sections.end()) {
      Diagnostic& d = diags.error({}, fmt::format("--set: unknown section '{}'", section));
      std::vector<std::string> names = sections;
      names.push_back("attention");
      suggest(d, section, names);
      return;
    }
    ast::ExprPtr e = parse::parseExpression(id, sources, diags);
    if (!e) return;
    Env env;
    auto v = evaluate(*e, env, diags);
    if (!v) return;
    SettingsContext ctx = context();
    if (applySetting(section, name, {id, 0, static_cast<uint32_t>(o.value.size())}, *v, ctx)) {
      written[o.key] = e->range;
      plan.overrides.push_back(o.key + "=" + o.value);
    }
  }

  // `--set attention.alibi.slopes=0.125`: an argument of one of the
  // attention section's `use`s, replaced (or added) as if the file said so.
  // `decay#2` names a component's second use, as the plan names its
  // parameters. Only the section's own uses can be set, not those inside a
  // component's body. The use is copied with the new argument, and the copy
  // takes its place in the section, so a second `--set` on the same use
  // keeps the first.
  void attentionArgument(const Override& o, int32_t id, const std::string& path) {
    const size_t dot = path.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == path.size()) {
      Diagnostic& d = diags.error({}, fmt::format("--set attention needs attention.COMPONENT.ARGUMENT=value, got '{}'", o.key));
      d.hint = "for example --set attention.alibi.slopes=0.125 (an argument of the section's `use alibi(...)`)";
      return;
    }
    std::string component = path.substr(0, dot);
    const std::string argument = path.substr(dot + 1);
    size_t occurrence = 0;  // 0: the only use
    if (const size_t hash = component.find('#'); hash != std::string::npos) {
      const std::string n = component.substr(hash + 1);
      component = component.substr(0, hash);
      if (n.empty() || n.size() > 3 || !std::all_of(n.begin(), n.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; }) || std::stoi(n) < 1) {
        Diagnostic& d = diags.error({}, fmt::format("--set: '{}' names no use; write {}#2 for the second", o.key, component));
        d.hint = "uses are counted from 1, in the order of the attention section";
        return;
      }
      occurrence = static_cast<size_t>(std::stoi(n));
    }
    std::vector<size_t> uses;
    std::vector<std::string> used;
    for (size_t i = 0; i < attention.size(); ++i) {
      if (attention[i]->kind != ast::Item::Kind::Use) continue;
      if (attention[i]->name.text == component) uses.push_back(i);
      if (std::find(used.begin(), used.end(), attention[i]->name.text) == used.end()) used.push_back(attention[i]->name.text);
    }
    if (uses.empty()) {
      Diagnostic& d = diags.error({}, fmt::format("--set {}: the attention section uses no component '{}'", o.key, component));
      suggest(d, component, used);
      d.hint = used.empty() ? "this experiment's attention section uses no component"
                            : fmt::format("its uses: {} (a component used inside another cannot be set)", fmt::join(used, ", "));
      return;
    }
    const bool ambiguous = occurrence == 0 && uses.size() > 1;
    if (ambiguous || occurrence > uses.size()) {
      Diagnostic& d = diags.error({}, fmt::format("--set {}: '{}' is used {} time{} in the attention section", o.key, component,
                                                   uses.size(), uses.size() == 1 ? "" : "s"));
      if (ambiguous)
        d.hint = fmt::format("say which: --set attention.{}#1.{}=... for the first, #2 for the second", component, argument);
      for (size_t u : uses) d.notes.push_back({attention[u]->range, "used here"});
      return;
    }
    const size_t at = uses[occurrence == 0 ? 0 : occurrence - 1];
    const ast::Item& original = *attention[at];
    // The argument must be one the component declares (an unknown component
    // is left to the attention section's own error at its use).
    const ast::Component* declared = nullptr;
    if (auto c = program.components.find(component); c != program.components.end()) {
      declared = c->second;
      std::vector<std::string> params;
      for (const ast::ComponentParam& p : declared->params) params.push_back(p.name.text);
      if (std::find(params.begin(), params.end(), argument) == params.end()) {
        Diagnostic& d = diags.error({}, fmt::format("--set {}: component '{}' has no parameter '{}'", o.key, component, argument));
        suggest(d, argument, params);
        d.hint = fmt::format("its parameters: {}", fmt::join(params, ", "));
        d.notes.push_back({declared->name.range, "declared here"});
        return;
      }
    }
    ast::ExprPtr e = parse::parseExpression(id, sources, diags);
    if (!e) return;
    // The copy names every argument, so dropping the one replaced cannot
    // shift the positions of the others.
    ast::Item& copy = set_uses.emplace_back();
    copy.kind = ast::Item::Kind::Use;
    copy.range = original.range;
    copy.name = original.name;
    for (size_t i = 0; i < original.args.size(); ++i) {
      ast::Arg a = ast::clone(original.args[i]);
      if (a.name.text.empty() && declared && i < declared->params.size())
        a.name = {declared->params[i].name.text, a.range};
      if (a.name.text == argument) continue;
      copy.args.push_back(std::move(a));
    }
    const SourceRange value_range = e->range;
    copy.args.push_back(ast::Arg{{argument, value_range}, std::move(e), value_range});
    attention[at] = &copy;
    plan.overrides.push_back(o.key + "=" + o.value);
  }

  // A probe call from the command line: one expression, `name(args)`, kept
  // as an item of `command_line_probes` and applied after every probes
  // section.
  void probeCall(const std::string& text) {
    const int32_t id = sources.add("--probe", text);
    ast::ExprPtr e = parse::parseExpression(id, sources, diags);
    if (!e) return;
    if (e->kind != ast::Expr::Kind::Call || e->name.text.empty()) {
      Diagnostic& d = diags.error(e->range, "--probe takes a declared probe's name or a probe call");
      d.hint = "for example --probe stop, or --probe 'reach(lengths = [100, 200, 400])'";
      return;
    }
    ast::Item& it = command_line_probes.emplace_back();
    it.kind = ast::Item::Kind::Call;
    it.range = e->range;
    it.name = e->name;
    it.args = std::move(e->args);
    probes.push_back(&it);
  }
};

// The stages of compileExperiment, in the order it calls them. Each reports
// its own errors; a stage that returns false leaves nothing for a later one.

// Which experiment: the one asked for, else the last of the main file.
const ast::Experiment* chooseExperiment(Assembler& a, const ExperimentRequest& request) {
  const Program& program = a.program;
  if (request.experiment) {
    auto it = program.experiments.find(*request.experiment);
    if (it != program.experiments.end()) return it->second;
    Diagnostic& d = a.diags.error({}, fmt::format("no experiment named '{}'", *request.experiment));
    suggest(d, *request.experiment, a.experiment_names);
    std::string list;
    for (const ast::Experiment& e : program.main().file.experiments) list += (list.empty() ? "" : ", ") + e.name.text;
    if (!list.empty()) d.hint = "this file defines: " + list;
    return nullptr;
  }
  if (!program.main().file.experiments.empty()) return &program.main().file.experiments.back();
  Diagnostic& d = a.diags.error({program.main().file.source, 0, 0}, "this file defines no experiment");
  d.hint = "add 'experiment NAME { ... }', or pass a file that has one";
  return nullptr;
}

// The extends chain, root first; an unknown base or a cycle is an error.
std::optional<std::vector<const ast::Experiment*>> extendsChain(Assembler& a, const ast::Experiment& target) {
  std::vector<const ast::Experiment*> chain{&target};
  while (!chain.back()->base.text.empty()) {
    const ast::Experiment* e = chain.back();
    auto it = a.program.experiments.find(e->base.text);
    if (it == a.program.experiments.end()) {
      Diagnostic& d = a.diags.error(e->base.range, fmt::format("unknown experiment '{}'", e->base.text));
      suggest(d, e->base.text, a.experiment_names);
      d.hint = "the experiment to extend must be defined in this file or one it imports";
      return std::nullopt;
    }
    if (std::find(chain.begin(), chain.end(), it->second) != chain.end()) {
      Diagnostic& d = a.diags.error(e->base.range, fmt::format("experiment '{}' extends itself through '{}'",
                                                                target.name.text, e->base.text));
      d.notes.push_back({it->second->name.range, "defined here"});
      return std::nullopt;
    }
    chain.push_back(it->second);
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

// The sections of every experiment on the chain, root first.
void applySections(Assembler& a, const std::vector<const ast::Experiment*>& chain) {
  for (const ast::Experiment* e : chain) {
    // A hand-set model is written whole: an experiment that writes weights
    // replaces the weights of the one it extends.
    if (std::any_of(e->sections.begin(), e->sections.end(), [](const ast::Section& s) { return isHandsetSection(s.name.text); }))
      a.handset.clear();
    for (const ast::Section& s : e->sections) a.section(s);
  }
}

// The preset asked for, as each experiment on the chain declares it, root
// first (a variant refines its base's preset).
bool applyPreset(Assembler& a, const std::vector<const ast::Experiment*>& chain, const ast::Experiment& target,
                 const ExperimentRequest& request) {
  a.in_preset = true;
  if (!request.preset) return true;
  bool found = false;
  std::vector<std::string> names;
  for (const ast::Experiment* e : chain)
    for (const ast::Preset& p : e->presets) {
      names.push_back(p.name.text);
      if (p.name.text != *request.preset) continue;
      found = true;
      for (const ast::Section& s : p.sections) a.section(s);
    }
  if (!found) {
    Diagnostic& d = a.diags.error(target.name.range, fmt::format("experiment '{}' has no preset '{}'", target.name.text, *request.preset));
    suggest(d, *request.preset, names);
    if (names.empty()) d.hint = "declare one inside the experiment: preset small { model { ... } train { ... } }";
    return false;
  }
  a.plan.preset = *request.preset;
  return true;
}

// `--set` overrides in order, then `--probe` calls.
void applyCommandLine(Assembler& a, const ExperimentRequest& request) {
  for (const Override& o : request.overrides) a.override(o);
  for (const std::string& call : request.probe_calls) a.probeCall(call);
}

// Derived defaults, then the checks across settings, the memory estimate and
// the CPU's precision. They run only when every setting was accepted: a
// rejected one still holds its default, and a check on it would invent a
// second error.
bool checkSettingsTogether(Assembler& a, const ast::Experiment& target, const ExperimentRequest& request) {
  if (!a.written.count("model.mlp_hidden")) a.plan.model.mlp_hidden = 4 * a.plan.model.width;
  SettingsContext ctx = a.context();
  checkSettings(target.name.range, ctx);
  checkDocumentSettings(target.name.range, ctx);
  if (a.failed()) return false;
  checkMemory(target.name.range, ctx);
  if (a.failed()) return false;
  if (request.on_cpu && a.handset.empty()) checkPrecision(target.name.range, ctx);
  return true;
}

// The attention items expanded with the final model, and what the task
// allows of them.
void expandAttention(Assembler& a, const ast::Experiment& target) {
  buildAttention(a.attention, a.program, a.plan, a.sources, a.diags);
  if (a.plan.task.kind == plan::TaskKind::Documents && !a.plan.attention.sampled_channels.empty()) {
    Diagnostic& d = a.diags.error(target.name.range, fmt::format("randomised channels ({}) are not available for document tasks",
                                                                  a.plan.attention.sampled_channels.front().origin));
    d.hint = "their evaluation labels are drawn per addition problem; document tasks train and evaluate on plain channels";
  }
}

// The hand-set weights, for the task they are written for.
bool buildHandsetModel(Assembler& a, const ast::Experiment& target) {
  if (a.handset.empty()) return true;
  if (a.plan.task.kind == plan::TaskKind::Documents) {
    Diagnostic& d = a.diags.error(a.handset.front()->name.range, "hand-set weights are written for the addition task");
    d.hint = "a document experiment trains its model; the analytic retrieval head is `posc analyze`'s retrieval(...)";
    return false;
  }
  buildHandset(a.handset, target.name.range, a.plan, a.diags);
  SettingsContext ctx = a.context();
  checkHandsetSettings(target.name.range, ctx);
  return true;
}

// The warm start: not from the experiment itself, and a file, when one is
// named, that exists now. A relative path written in a file is read from
// that file's folder; one given on the command line (--set), from the
// working folder, as a shell user means it.
bool resolveWarmStart(Assembler& a, const ast::Experiment& target) {
  if (a.plan.train.init_from && *a.plan.train.init_from == target.name.text) {
    Diagnostic& d = a.diags.error(target.name.range, fmt::format("experiment '{}' warm-starts from itself", target.name.text));
    d.hint = "init_from names the experiment whose final checkpoint to continue from";
  }
  if (!a.plan.train.init_file || a.failed()) return !a.failed();
  auto at = a.written.find("train.init_from");
  const bool from_command_line =
      at != a.written.end() && at->second.valid() && a.sources.file(at->second.file).path().rfind("--set ", 0) == 0;
  std::filesystem::path f(*a.plan.train.init_file);
  if (f.is_relative() && !from_command_line) f = std::filesystem::path(a.program.main().path).parent_path() / f;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(f, ec)) {
    Diagnostic& d = a.diags.error(at != a.written.end() ? at->second : target.name.range,
                                  fmt::format("cannot read the warm-start file '{}'", f.string()));
    d.hint = from_command_line ? "a relative path given with --set is read from the working folder"
                               : "a relative path is read from the folder of the experiment's .pos file";
    return false;
  }
  a.plan.train.init_file = std::filesystem::absolute(f).lexically_normal().string();
  return true;
}

}  // namespace

// The stages of an experiment's assembly, as a list of calls (the order of
// experiment.h). A stage that reports an error ends the list there, so no
// later check runs on a value an earlier one refused.
std::optional<plan::ExperimentPlan> compileExperiment(const Program& program, const ExperimentRequest& request,
                                                      SourceManager& sources, DiagnosticEngine& diags) {
  Assembler a{program, sources, diags, {}, {}, {}, false, {}, {}, {}, {}, {}, diags.errorCount()};
  for (const auto& [n, _] : program.experiments) a.experiment_names.push_back(n);

  const ast::Experiment* target = chooseExperiment(a, request);
  if (!target) return std::nullopt;
  const auto chain = extendsChain(a, *target);
  if (!chain) return std::nullopt;
  applySections(a, *chain);
  if (!applyPreset(a, *chain, *target, request)) return std::nullopt;
  applyCommandLine(a, request);
  if (a.failed() || !checkSettingsTogether(a, *target, request)) return std::nullopt;
  expandAttention(a, *target);
  if (!buildHandsetModel(a, *target)) return std::nullopt;
  buildProbes(a.probes, a.plan, diags);
  if (!resolveWarmStart(a, *target)) return std::nullopt;

  a.plan.name = target->name.text;
  a.plan.source_path = program.main().path;
  return std::move(a.plan);
}

}  // namespace posc::sema
