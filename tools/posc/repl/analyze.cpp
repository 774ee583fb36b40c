// Analysis blocks (see analyze.h): each call runs a command of the shared
// table (tools/posc/repl/commands.h) and its result is written as files.
#include "tools/posc/repl/analyze.h"

#include <fmt/format.h>

#include "runtime/plot/table.h"
#include "tools/posc/repl/args.h"
#include "tools/posc/repl/commands.h"

namespace posc::repl {

namespace {

// The commands a block may call: every shared one but the terminal's renderings.
const analysis::Command* blockCommand(const std::string& name) {
  const analysis::Command* c = analysis::findCommand(analysisCommands(), name);
  return c && !c->repl_only ? c : nullptr;
}

std::vector<std::string> blockCommandNames() {
  std::vector<std::string> names;
  for (const analysis::Command& c : analysisCommands())
    if (!c.repl_only) names.push_back(c.name);
  return names;
}

// A file a command was asked to write by name must stay in the analysis's folder.
bool plainFileName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

struct Runner {
  DiagnosticEngine& diags;
  Definitions defs;
  AnalysisResult out;

  void add(const std::string& file, std::string content) { out.artefacts.push_back({file, std::move(content)}); }

  // Every table as CSV and, when it is short enough to read, as Markdown in
  // the summary, its section led by the command's text; every figure as SVG.
  void write(const analysis::Result& r, const std::string& command) {
    bool text_shown = r.text.empty();
    std::vector<std::string> files;
    for (const analysis::Result::Table& t : r.tables) {
      add(t.stem + ".csv", plot::toCsv(t.table));
      files.push_back(t.stem + ".csv");
      if (!t.print) continue;
      std::string md = "## " + t.heading + "\n\n" + (text_shown ? "" : r.text + "\n") +
                       (t.note.empty() ? "" : t.note + "\n\n") + plot::toMarkdown(t.table) + "\n";
      text_shown = true;
      add(t.stem + ".md", md);
      out.summary += md;
    }
    for (const analysis::Result::Figure& f : r.figures) {
      add(f.file, f.svg);
      files.push_back(f.file);
    }
    for (const analysis::Result::File& f : r.files) add(f.path, f.content);
    if (!text_shown) {
      std::string list;
      for (size_t i = 0; i < files.size(); ++i) list += (i ? ", " : "") + files[i];
      out.summary += "## " + (r.tables.empty() ? command : r.tables.front().heading) + "\n\n" + r.text +
                     (list.empty() ? "" : "\nFiles: " + list + "\n") + "\n";
    }
  }

  bool define(const ast::Item& item) {
    if (!item.options.empty()) {
      diags.error(item.options[0].name.range, "a definition in an analysis takes no options");
      return false;
    }
    auto p = lowerKernel(*item.value, "d", defs, diags);
    if (!p) return false;
    Definition def;
    def.name = item.name.text;
    def.source = std::string(item.name.text);
    if (p->isConstantKernel()) def.program = std::move(*p);  // a constant
    else {
      def.parameter = "d";
      def.program = std::move(*p);
    }
    defs[def.name] = std::move(def);
    return true;
  }

  bool call(const ast::Item& item) {
    const analysis::Command* command = blockCommand(item.name.text);
    if (!command) {
      Diagnostic& d = diags.error(item.name.range, fmt::format("unknown analysis '{}'", item.name.text));
      suggest(d, item.name.text, blockCommandNames());
      d.hint = "an analysis block holds definitions (k = ...) and the calls listed by `posc analyze --help`";
      return false;
    }
    Args args(*command, false, item.args, item.range, defs, diags);
    std::optional<analysis::Values> values = args.bind();
    if (!values) return false;
    analysis::Result r;
    try {
      r = command->run(*values, analysis::Limits{});
    } catch (const analysis::CommandError& e) {
      args.report(e);
      return false;
    }
    for (const analysis::Result::File& f : r.files)
      if (!plainFileName(f.path))
        return args.error(args.rangeOf(f.param), fmt::format("'{}' is not a file name inside the analysis's folder", f.path),
                          "give a plain file name such as \"ridge.csv\"");
    if (r.defines) {
      Definition def;
      def.name = r.defines->name;
      def.parameter = "d";
      def.program = std::move(r.defines->program);
      def.source = r.defines->source;
      defs[def.name] = std::move(def);
    }
    write(r, command->name);
    return true;
  }
};

}  // namespace

std::string analysisCallsHelp() {
  std::string out;
  for (const analysis::Command& c : analysisCommands())
    if (!c.repl_only) out += fmt::format("  {}\n      {}\n", c.usage(false), c.summary);
  return out;
}

std::optional<std::vector<AnalysisResult>> runAnalyses(const ast::File& file, const std::string& only,
                                                       DiagnosticEngine& diags) {
  std::vector<AnalysisResult> results;
  bool found = only.empty();
  for (const ast::Analysis& a : file.analyses) {
    if (!only.empty() && a.name.text != only) continue;
    found = true;
    Runner r{diags, {}, {}};
    r.out.name = a.name.text;
    r.out.summary = fmt::format("# Analysis {}\n\n", a.name.text);
    for (const ast::Item& item : a.items) {
      if (item.kind == ast::Item::Kind::Assign) r.define(item);
      else if (item.kind == ast::Item::Kind::Call) r.call(item);
      else diags.error(item.range, "an analysis holds definitions (k = ...) and calls; this is neither")
               .hint = "see `posc analyze --help` for the calls";
    }
    r.add("summary.md", r.out.summary);
    results.push_back(std::move(r.out));
  }
  if (!found) {
    Diagnostic& d = diags.error(SourceRange{file.source, 0, 0}, fmt::format("no analysis named '{}' in this file", only));
    std::vector<std::string> names;
    for (const ast::Analysis& a : file.analyses) names.push_back(a.name.text);
    suggest(d, only, names);
  }
  if (results.empty() && only.empty())
    diags.error(SourceRange{file.source, 0, 0}, "this file has no analysis block").hint =
        "add one: analysis NAME { rotation() }";
  if (diags.hasErrors()) return std::nullopt;
  return results;
}

}  // namespace posc::repl
