// The REPL session: parsing, definitions and commands (see session.h).
#include "tools/posc/repl/session.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "compiler/parse/parser.h"
#include "tools/posc/repl/args.h"
#include "tools/posc/repl/commands.h"
#include "tools/posc/repl/score.h"
#include "runtime/plot/table.h"

namespace posc::repl {

namespace {

using analysis::KernelProgram;
using analysis::Param;

std::string number(double v) { return plot::formatNumber(v, 6); }

const std::set<std::string>& reservedNames() {
  static const std::set<std::string> names = {"pi", "e", "exp", "log", "sqrt", "abs", "cos", "sin", "tanh", "sigmoid",
                                              "relu", "min", "max", "pow", "where", "similarity", "separation",
                                              "recent_mass", "margin", "probability"};
  return names;
}

}  // namespace

struct Session::Call {
  Args& args;
  const analysis::Values& values;
  const analysis::Command& command;
  SourceRange range;  // the whole input
  Reply& reply;
};

const std::vector<Session::Entry>& Session::commands() {
  static const std::vector<Entry> table = [] {
    auto own = [](std::string name, std::vector<std::string> aliases, std::vector<Param> params, std::string summary,
                  Handler handler) {
      return Entry{analysis::Command{std::move(name), std::move(aliases), std::move(params), std::move(summary), {}},
                   handler};
    };
    std::vector<Entry> out;
    out.push_back(own("help", {"h"}, {}, "this text", nullptr));
    out.push_back(own("list", {}, {}, "the definitions of this session", &Session::listDefinitions));
    for (const analysis::Command& c : analysisCommands()) out.push_back(Entry{c, &Session::runAnalysis});
    Param source = Param::str("source", true);
    source.kind = Param::Kind::Source;
    source.shown = "\"file.pos\" | component";
    out.push_back(own("load",
                      {},
                      {source, Param::symbol("experiment", {}).showDefault("name"),
                       Param::str("args").showDefault("\"rates = [0.1]\""), Param::num("head", 0).atLeast(0).whole().atMost(1023),
                       Param::num("s", 1), Param::num("heads", 6).atLeast(1).whole().atMost(1024),
                       Param::symbol("as", {}, "score")},
                      "an experiment's score terms, or a stdlib component's (decay, alibi), as a kernel of d: s fixed, "
                      "q.c - k.c = d on every channel, parameters at their values for the head",
                      &Session::load));
    out.push_back(own("quit", {"q"}, {}, "leave (Ctrl-D also does)", nullptr));
    return out;
  }();
  return table;
}

Session::Session(FileWriter writer, bool color) : writer_(std::move(writer)), color_(color) {}

bool Session::needsMoreInput(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  char last = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    if (!std::isspace(static_cast<unsigned char>(c))) last = c;
  }
  if (in_string) return false;  // an unterminated string is an error, not a continuation
  if (depth > 0) return true;
  return last != 0 && std::string("\\+-*/^,=?&|<>!").find(last) != std::string::npos;
}

std::string Session::help() {
  std::string out =
      "Define kernels over the distance d and constants, evaluate, and analyse:\n"
      "  k(d) = 20*cos(2*pi*d/6) + 5*cos(2*pi*d/40 + 0.3)   a kernel (one parameter: the distance)\n"
      "  w = 2*pi/6                                           a constant\n"
      "  k(-35)                                               evaluate\n"
      "Commands (arguments positional in this order, or by name; kernels may be written inline in d):\n";
  for (const Entry& e : commands()) out += fmt::format("  {}\n      {}\n", e.command.usage(true), e.command.summary);
  out +=
      "Functions: exp log sqrt abs cos sin tanh sigmoid relu min max pow where(c, a, b); the analytic controls\n"
      "  similarity(omega, d, s) = cos(omega d / s), separation(omega, s) = 2|sin(omega/(2s))|,\n"
      "  recent_mass(m, h, L), margin(p, N) (needed for probability p against N distractors), probability(margin, N).\n"
      "An input continues on the next line after an open bracket, a trailing operator or comma, or a backslash.\n"
      "A kernel used in a definition is copied in: redefining it later does not change kernels defined before.\n";
  return out;
}

Reply Session::submit(const std::string& input, const std::string& origin, int first_line) {
  Reply reply;
  // Keep byte offsets: a continuation backslash becomes a space. The input
  // is numbered from its script line, so locations name that line.
  std::string text = input;
  for (size_t at = text.find("\\\n"); at != std::string::npos; at = text.find("\\\n", at)) text[at] = ' ';
  SourceManager sources;
  int32_t id = sources.add(origin, text, first_line);
  DiagnosticEngine diags(sources);
  auto finish = [&]() {
    if (diags.hasErrors()) {
      reply.errors = diags.render(color_);
      reply.text.clear();
    }
    return reply;
  };

  // Nothing to do: blank, or comments alone (`// the decay kernel`).
  bool blank = true;
  for (size_t i = 0; i < text.size() && blank; ++i) {
    if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '/')
      while (i < text.size() && text[i] != '\n') ++i;
    else if (!std::isspace(static_cast<unsigned char>(text[i])))
      blank = false;
  }
  if (blank) return reply;

  std::optional<ast::ReplLine> line = parse::parseReplLine(id, sources, diags);
  if (!line) return finish();

  if (line->kind == ast::ReplLine::Kind::Expression) {
    std::optional<KernelProgram> p = lowerKernel(*line->value, "", defs_, diags);
    if (p) reply.text = number(p->constantValue()) + "\n";
    return finish();
  }

  if (line->kind == ast::ReplLine::Kind::Definition) {
    const std::string& name = line->name.text;
    if (reservedNames().count(name)) {
      Diagnostic& d = diags.error(line->name.range, fmt::format("'{}' is built in and cannot be redefined", name));
      d.hint = "choose another name";
      return finish();
    }
    if (line->params.size() > 1) {
      Diagnostic& d = diags.error(line->params[1].range, "a kernel takes one parameter, the distance");
      d.hint = fmt::format("write {}({}) = ...", name, line->params[0].text);
      return finish();
    }
    Definition def;
    def.name = name;
    def.source = std::string(sources.text(line->range));
    if (!line->params.empty()) {
      def.parameter = line->params[0].text;
      if (reservedNames().count(def.parameter) || defs_.count(def.parameter)) {
        diags.error(line->params[0].range, fmt::format("the parameter '{}' hides a name defined before", def.parameter))
            .hint = "use d for the distance";
        return finish();
      }
      auto p = lowerKernel(*line->value, def.parameter, defs_, diags);
      if (!p) return finish();
      def.program = std::move(*p);
      reply.text = fmt::format("{}({}) defined\n", name, def.parameter);
    } else {
      auto v = lowerConstant(*line->value, defs_, diags);
      if (!v) return finish();
      def.program.constant(*v);
      reply.text = fmt::format("{} = {}\n", name, number(*v));
    }
    defs_[name] = std::move(def);
    return finish();
  }

  // A command.
  const std::string& name = line->name.text;
  const Entry* entry = nullptr;
  for (const Entry& e : commands())
    if (e.command.answersTo(name)) entry = &e;
  if (!entry) {
    Diagnostic& d = diags.error(line->name.range, fmt::format("unknown command ':{}'", name));
    std::vector<std::string> names;
    for (const Entry& e : commands()) names.push_back(e.command.name);
    suggest(d, name, names);
    d.hint = ":help lists the commands";
    return finish();
  }
  Args args(entry->command, true, line->args, line->range, defs_, diags);
  std::optional<analysis::Values> values = args.bind();
  if (!values) return finish();
  Call call{args, *values, entry->command, line->range, reply};
  if (entry->command.name == "help") reply.text = help();
  else if (entry->command.name == "quit") reply.quit = true;
  else (this->*entry->handler)(call);
  return finish();
}

void Session::listDefinitions(Call& call) {
  if (defs_.empty()) call.reply.text = "(nothing defined yet)\n";
  for (const auto& [n, def] : defs_) call.reply.text += def.source + "\n";
}

// An analysis command's result as text: its lines, its time, its short
// tables; the files it was asked to write, written; the kernel it defines,
// defined.
void Session::runAnalysis(Call& call) {
  analysis::Limits limits;
  limits.max_points = max_sweep_points_;
  limits.max_fit_terms = max_fit_terms_;
  analysis::Result r;
  try {
    r = call.command.run(call.values, limits);
  } catch (const analysis::CommandError& e) {
    call.args.report(e);
    return;
  }
  if (r.defines && reservedNames().count(r.defines->name)) {
    call.args.error(call.args.rangeOf("as"), fmt::format("'{}' is built in and cannot be redefined", r.defines->name));
    return;
  }
  std::string text = r.text + r.timing;
  for (const analysis::Result::Table& t : r.tables)
    if (t.print && !t.table.rows.empty()) text += plot::toMarkdown(t.table);
  std::vector<std::string> written;
  for (const analysis::Result::File& f : r.files) {
    try {
      writer_(f.path, f.content);
      written.push_back(f.path);
    } catch (const std::exception& x) {
      call.args.error(call.args.rangeOf(f.param), x.what());
      return;
    }
  }
  if (!written.empty()) {
    std::string list;
    for (size_t i = 0; i < written.size(); ++i) list += (i ? " and " : "") + written[i];
    text += "wrote " + list + "\n";
  }
  if (r.defines) {
    Definition def;
    def.name = r.defines->name;
    def.parameter = "d";
    def.program = std::move(r.defines->program);
    def.source = std::move(r.defines->source);
    defs_[def.name] = std::move(def);
  }
  call.reply.text = text;
}

// :load: an experiment's or a stdlib component's score terms as a kernel of d.
void Session::load(Call& call) {
  Args& args = call.args;
  const analysis::Values& v = call.values;
  const ast::Expr& src = args.expr("source");
  ScoreSource source;
  if (src.kind == ast::Expr::Kind::String) {
    source.file = src.text;
  } else if (src.kind == ast::Expr::Kind::Name) {
    source.component = src.name.text;
  } else {
    args.error(src.range, "expected a .pos file in double quotes or a stdlib component's name",
               "for example :load \"examples/quickstart.pos\" or :load decay");
    return;
  }
  const std::string as = v.text("as");
  const double head = v.number("head"), s = v.number("s");
  if (!source.file.empty() && (args.has("args") || args.has("heads"))) {
    args.error(args.rangeOf(args.has("args") ? "args" : "heads"),
               "args and heads are for a component; a file's experiment has its own");
    return;
  }
  if (source.file.empty() && args.has("experiment")) {
    args.error(args.rangeOf("experiment"), "experiment is for a .pos file", "write the file in double quotes");
    return;
  }
  if (reservedNames().count(as)) {
    args.error(args.rangeOf("as"), fmt::format("'{}' is built in and cannot be redefined", as));
    return;
  }
  source.experiment = v.given("experiment") ? v.text("experiment") : "";
  source.arguments = v.given("args") ? v.text("args") : "";
  source.heads = static_cast<int>(v.number("heads"));
  std::string errors;
  std::optional<plan::ExperimentPlan> plan = compileScoreSource(source, errors, color_);
  if (!plan) {
    call.reply.errors = errors;
    return;
  }
  if (head >= plan->model.heads) {
    args.error(args.rangeOf("head"), fmt::format("the model has {} heads (0..{})", plan->model.heads,
                                                 plan->model.heads - 1));
    return;
  }
  if (plan->attention.score_terms.empty()) {
    args.error(src.range, fmt::format("'{}' has no score terms", plan->name),
               "rotations and embeddings act on q and k; define their kernel directly, e.g. with :fit");
    return;
  }
  ScoreKernel k = scoreKernel(plan->attention, static_cast<int>(head), s);
  const std::string label = source.file.empty() ? fmt::format("{}({})", source.component, source.arguments)
                                                : fmt::format("{} ({})", plan->name, source.file);
  Definition def;
  def.name = as;
  def.parameter = "d";
  def.program = std::move(k.program);
  def.source = fmt::format("{}(d) = score terms of {} (head {}, s = {})", as, label, static_cast<int>(head), number(s));
  call.reply.text = fmt::format("{}(d) defined: the score after the terms of {}, head {}, s = {}, q.c - k.c = d\n", as,
                                label, static_cast<int>(head), number(s));
  for (const std::string& line : k.lines) call.reply.text += "  " + line + "\n";
  defs_[as] = std::move(def);
}

}  // namespace posc::repl
