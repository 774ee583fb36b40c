// The REPL session: parsing, definitions and commands (see session.h).
#include "tools/posc/repl/session.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <set>

#include "compiler/parse/parser.h"
#include "tools/posc/repl/args.h"
#include "tools/posc/repl/score.h"
#include "runtime/analysis/figures.h"
#include "runtime/analysis/ladder.h"
#include "runtime/analysis/sweep.h"
#include "runtime/analysis/terminal_plot.h"
#include "runtime/plot/chart.h"
#include "runtime/plot/table.h"

namespace posc::repl {

namespace {

using analysis::KernelProgram;


const std::vector<Signature>& commandTable() {
  using K = ArgSpec::Kind;
  static const std::vector<Signature> table = {
      {":help", {}, ":help", "this text"},
      {":list", {}, ":list", "the definitions of this session"},
      {":table", {{K::Kernel, "kernel", true}, {K::Range, "over", true}, {K::Number, "step"}},
       ":table k, -10..10 [, step = 1]", "the kernel's value at each distance"},
      {":sweep", {{K::Kernel, "kernel", true}, {K::Range, "over", true}, {K::Number, "step"}},
       ":sweep k, -2000..2000 [, step = 1]", "evaluate over a range: extremes and evaluation speed"},
      {":aliases",
       {{K::Kernel, "kernel", true}, {K::Range, "over", true}, {K::Number, "window"}, {K::Number, "fraction"},
        {K::Number, "target"}, {K::Number, "top"}},
       ":aliases k, -2000..2000 [, window = 3, fraction = 0.5, target = 0, top = 10]",
       "peaks beyond the window around the target that reach the fraction of its score"},
      {":windows",
       {{K::Kernel, "kernel", true}, {K::Range, "over", true}, {K::Number, "width"}, {K::Number, "target"}},
       ":windows k, -2000..2000 [, width = 10, target = 0]",
       "the highest value in each window as a fraction of the target's"},
      {":plot",
       {{K::Kernel, "kernel", true}, {K::Range, "over", true}, {K::Number, "step"}, {K::Number, "width"},
        {K::Number, "height"}},
       ":plot k, -50..50 [, step = 1, width = 72, height = 16]", "plot in the terminal"},
      {":svg", {{K::Kernel, "kernel", true}, {K::Range, "over", true}, {K::Text, "file", true}, {K::Number, "step"}},
       ":svg k, -50..50, \"k.svg\" [, step = 1]", "plot to an SVG file (and its data to a CSV beside it)"},
      {":fit",
       {{K::Symbol, "ladder", true}, {K::Number, "terms"}, {K::Number, "base"}, {K::Number, "period"},
        {K::Number, "train"}, {K::Number, "range"}, {K::Number, "ridge"}, {K::Kernel, "target"}, {K::Symbol, "as"}},
       ":fit geometric | harmonic [, terms = 16, base = 10000, period = 4000, train = 20, range = 2000, "
       "ridge = 1e-5, target = k, as = fit]",
       "ridge-fit a frequency ladder to a target (a spike at 0 by default) on -train..train; defines the fitted kernel"},
      {":ridge",
       {{K::Number, "train"}, {K::Number, "range"}, {K::Number, "ridge"}, {K::Text, "csv"}},
       ":ridge [train = 20, range = 2000, ridge = 1e-5, csv = \"ridge.csv\"]",
       "the study's four-row ridge-fit table (geometric 16 and 2000 terms, harmonic 256 and 2000)"},
      {":load",
       {{K::Text, "source", true}, {K::Symbol, "experiment"}, {K::Text, "args"}, {K::Number, "head"},
        {K::Number, "s"}, {K::Number, "heads"}, {K::Symbol, "as"}},
       ":load \"file.pos\" | component [, experiment = name, args = \"rates = [0.1]\", head = 0, s = 1, heads = 6, "
       "as = score]",
       "an experiment's score terms, or a stdlib component's (decay, alibi), as a kernel of d: s fixed, "
       "q.c - k.c = d on every channel, parameters at their values for the head"},
      {":quit", {}, ":quit", "leave (Ctrl-D also does)"},
  };
  return table;
}

std::string number(double v) { return plot::formatNumber(v, 6); }

// "0.00" rather than "-0.00" for values that round to zero.
std::string twoDecimals(double v) {
  if (std::isnan(v)) return "nan";
  std::string s = fmt::format("{:.2f}", v);
  return s == "-0.00" ? "0.00" : s;
}

const std::set<std::string>& reservedNames() {
  static const std::set<std::string> names = {"pi", "e", "exp", "log", "sqrt", "abs", "cos", "sin", "tanh", "sigmoid",
                                              "relu", "min", "max", "pow", "where", "similarity", "separation",
                                              "recent_mass", "margin", "probability"};
  return names;
}

}  // namespace

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
  for (const auto& c : commandTable()) out += fmt::format("  {}\n      {}\n", c.usage, c.summary);
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
  const Signature* command = nullptr;
  for (const Signature& c : commandTable())
    if (c.name == ":" + name || (name == "q" && c.name == ":quit") || (name == "h" && c.name == ":help")) command = &c;
  if (!command) {
    Diagnostic& d = diags.error(line->name.range, fmt::format("unknown command ':{}'", name));
    std::vector<std::string> names;
    for (const Signature& c : commandTable()) names.push_back(c.name.substr(1));
    suggest(d, name, names);
    d.hint = ":help lists the commands";
    return finish();
  }
  Args args(*command, line->args, line->range, defs_, diags);
  if (!args.bind()) return finish();
  const std::string c = command->name.substr(1);

  if (c == "help") {
    reply.text = help();
  } else if (c == "quit") {
    reply.quit = true;
  } else if (c == "list") {
    if (defs_.empty()) reply.text = "(nothing defined yet)\n";
    for (const auto& [n, def] : defs_) reply.text += def.source + "\n";
  } else if (c == "load") {
    const ast::Expr& src = args.expr("source");
    ScoreSource source;
    if (src.kind == ast::Expr::Kind::String) {
      source.file = src.text;
    } else if (src.kind == ast::Expr::Kind::Name) {
      source.component = src.name.text;
    } else {
      args.error(src.range, "expected a .pos file in double quotes or a stdlib component's name",
                 "for example :load \"examples/quickstart.pos\" or :load decay");
      return finish();
    }
    std::optional<std::string> experiment, arguments, as = std::string("score");
    if (args.has("experiment") && !(experiment = args.symbol("experiment", {}))) return finish();
    if (args.has("args") && !(arguments = args.text("args"))) return finish();
    if (args.has("as") && !(as = args.symbol("as", {}))) return finish();
    auto heads = args.number("heads", 6, 1, true, 1024);
    auto head = args.number("head", 0, 0, true, 1023);
    auto s = args.number("s", 1.0);
    if (!heads || !head || !s) return finish();
    if (!source.file.empty() && (args.has("args") || args.has("heads"))) {
      args.error(args.rangeOf(args.has("args") ? "args" : "heads"),
                 "args and heads are for a component; a file's experiment has its own");
      return finish();
    }
    if (source.file.empty() && args.has("experiment")) {
      args.error(args.rangeOf("experiment"), "experiment is for a .pos file", "write the file in double quotes");
      return finish();
    }
    if (reservedNames().count(*as)) {
      args.error(args.rangeOf("as"), fmt::format("'{}' is built in and cannot be redefined", *as));
      return finish();
    }
    source.experiment = experiment.value_or("");
    source.arguments = arguments.value_or("");
    source.heads = static_cast<int>(*heads);
    std::string errors;
    std::optional<plan::ExperimentPlan> plan = compileScoreSource(source, errors, color_);
    if (!plan) {
      reply.errors = errors;
      return reply;
    }
    if (*head >= plan->model.heads) {
      args.error(args.rangeOf("head"), fmt::format("the model has {} heads (0..{})", plan->model.heads,
                                                   plan->model.heads - 1));
      return finish();
    }
    if (plan->attention.score_terms.empty()) {
      args.error(src.range, fmt::format("'{}' has no score terms", plan->name),
                 "rotations and embeddings act on q and k; define their kernel directly, e.g. with :fit");
      return finish();
    }
    ScoreKernel k = scoreKernel(plan->attention, static_cast<int>(*head), *s);
    const std::string label = source.file.empty() ? fmt::format("{}({})", source.component, source.arguments)
                                                  : fmt::format("{} ({})", plan->name, source.file);
    Definition def;
    def.name = *as;
    def.parameter = "d";
    def.program = std::move(k.program);
    def.source = fmt::format("{}(d) = score terms of {} (head {}, s = {})", *as, label,
                             static_cast<int>(*head), number(*s));
    reply.text = fmt::format("{}(d) defined: the score after the terms of {}, head {}, s = {}, q.c - k.c = d\n",
                             *as, label, static_cast<int>(*head), number(*s));
    for (const std::string& line : k.lines) reply.text += "  " + line + "\n";
    defs_[*as] = std::move(def);
  } else if (c == "fit") {
    auto ladder_name = args.symbol("ladder", {"geometric", "harmonic"});
    auto terms = args.number("terms", 16, 1, true, max_fit_terms_);
    auto base = args.number("base", 10000, 1.000001);
    auto period = args.number("period", 4000, 1e-9);
    auto train = args.number("train", 20, 1, true, 1e6);
    auto range = args.number("range", 2000, 2, true, 1e7);
    auto ridge = args.number("ridge", 1e-5, 0);
    std::optional<KernelArg> target;
    if (args.has("target")) target = args.kernel("target");
    std::string as = "fit";
    if (args.has("as")) {
      auto s = args.symbol("as", {});
      if (!s) return finish();
      as = *s;
    }
    if (!ladder_name || !terms || !base || !period || !train || !range || !ridge || (args.has("target") && !target))
      return finish();
    if (*range <= *train) {
      args.error(args.rangeOf("range"), "the evaluation range must extend beyond the training distances");
      return finish();
    }
    if (reservedNames().count(as)) {
      args.error(args.rangeOf("as"), fmt::format("'{}' is built in and cannot be redefined", as));
      return finish();
    }
    analysis::Ladder ladder;
    ladder.kind = *ladder_name == "geometric" ? analysis::Ladder::Kind::Geometric : analysis::Ladder::Kind::Harmonic;
    ladder.terms = static_cast<int>(*terms);
    ladder.base = *base;
    ladder.period = *period;
    analysis::FitSettings settings;
    settings.train = static_cast<int>(*train);
    settings.range = static_cast<int>(*range);
    settings.ridge = *ridge;
    std::unique_ptr<analysis::KernelEvaluator> target_eval;
    if (target) {
      target_eval = analysis::makeEvaluator(target->program);
      settings.target = target_eval.get();
    }
    try {
      analysis::FitResult r = analysis::fitLadder(ladder, settings);
      reply.text = fmt::format(
          "{}, {} terms; {}\n  peak {}  worst side bump in range {} (at {})  highest beyond training {} (at {}, {:.1f}x "
          "the peak)  rms error on the training distances {}\n{}(d) defined: the fitted kernel\n",
          ladder.describe(), ladder.terms, settings.describe(), twoDecimals(r.peak), twoDecimals(r.side_bump),
          number(r.side_bump_at), twoDecimals(r.beyond), number(r.beyond_at), r.beyond / r.peak, number(r.fit_residual),
          as);
      Definition def;
      def.name = as;
      def.parameter = "d";
      def.program = r.program();
      def.source = fmt::format("{}(d) = <{} ladder, {} terms, fitted by :fit>", as, *ladder_name, ladder.terms);
      defs_[as] = std::move(def);
    } catch (const std::exception& x) {
      args.error(line->range, x.what());
    }
  } else if (c == "ridge") {
    auto train = args.number("train", 20, 1, true, 1e6);
    auto range = args.number("range", 2000, 2, true, 1e7);
    auto ridge = args.number("ridge", 1e-5, 0);
    std::optional<std::string> csv;
    if (args.has("csv")) csv = args.text("csv");
    if (!train || !range || !ridge || (args.has("csv") && !csv)) return finish();
    if (*range <= *train) {
      args.error(args.rangeOf("range"), "the evaluation range must extend beyond the training distances");
      return finish();
    }
    analysis::FitSettings settings;
    settings.train = static_cast<int>(*train);
    settings.range = static_cast<int>(*range);
    settings.ridge = *ridge;
    std::vector<analysis::FitResult> fits;
    try {
      for (const analysis::Ladder& l : analysis::studyLadders()) fits.push_back(analysis::fitLadder(l, settings));
    } catch (const std::exception& x) {
      args.error(line->range, x.what());
      return finish();
    }
    plot::Table t = analysis::ridgeTable(fits);
    reply.text = plot::toMarkdown(t) + "Fit: " + settings.describe() + "\n";
    if (csv) {
      try {
        writer_(*csv, plot::toCsv(t));
        reply.text += fmt::format("wrote {}\n", *csv);
      } catch (const std::exception& x) {
        args.error(args.rangeOf("csv"), x.what());
      }
    }
  } else {
    // Commands over a kernel and a range of distances.
    std::optional<KernelArg> k = args.kernel("kernel");
    auto over = args.range("over");
    auto step = args.number("step", 1, 1e-9);
    if (!k || !over || !step) return finish();
    const double points = std::floor((over->second - over->first) / *step + 0.5) + 1;
    if (points > max_sweep_points_) {
      args.error(args.rangeOf("over"),
                 fmt::format("{:g} points is more than this session sweeps at once ({:g})", points, max_sweep_points_),
                 "use a larger step or a smaller range");
      return finish();
    }
    std::unique_ptr<analysis::KernelEvaluator> eval = analysis::makeEvaluator(k->program);
    const auto start = std::chrono::steady_clock::now();
    analysis::Sweep s = analysis::sweep(*eval, over->first, over->second, *step);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    if (c == "table") {
      if (s.d.size() > 2000) {
        args.error(args.rangeOf("over"), fmt::format("{} rows is too many to print", s.d.size()),
                   "use :sweep, :plot or :svg for long ranges, or a larger step");
        return finish();
      }
      plot::Table t;
      t.columns = {"d", k->label};
      for (size_t i = 0; i < s.d.size(); ++i) t.addRow({number(s.d[i]), number(s.value[i])});
      reply.text = plot::toMarkdown(t);
    } else if (c == "sweep") {
      // Extremes over the points that are numbers; NaN points are counted apart.
      std::optional<size_t> lo, hi, first_nan;
      size_t nans = 0;
      for (size_t i = 0; i < s.value.size(); ++i) {
        if (std::isnan(s.value[i])) {
          if (nans++ == 0) first_nan = i;
          continue;
        }
        if (!lo || s.value[i] < s.value[*lo]) lo = i;
        if (!hi || s.value[i] > s.value[*hi]) hi = i;
      }
      auto extreme = [&](const char* what, std::optional<size_t> at) {
        return at ? fmt::format("  {} {} at d = {}\n", what, number(s.value[*at]), number(s.d[*at]))
                  : fmt::format("  {}: none, every point is NaN\n", what);
      };
      reply.text = fmt::format("{}: {} points on {}..{} (step {})\n{}{}{}  {} in {:.3g} ms ({:.3g} evaluations/s)\n",
                               k->label, s.d.size(), number(over->first), number(over->second), number(*step),
                               extreme("max", hi), extreme("min", lo),
                               nans ? fmt::format("  {} of {} points are NaN, the first at d = {}\n", nans,
                                                  s.value.size(), number(s.d[*first_nan]))
                                    : "",
                               eval->name(), seconds * 1e3, static_cast<double>(s.d.size()) / std::max(seconds, 1e-9));
    } else if (c == "aliases" || c == "windows") {
      auto target = args.number("target", 0);
      if (!target) return finish();
      double target_value = 0;
      try {
        target_value = analysis::valueAt(s, *target);
      } catch (const std::exception&) {
        args.error(args.has("target") ? args.rangeOf("target") : args.rangeOf("over"),
                   fmt::format("the target distance {} is not on the swept grid", number(*target)));
        return finish();
      }
      if (c == "aliases") {
        auto window = args.number("window", 3, 0);
        auto fraction = args.number("fraction", 0.5);
        auto top = args.number("top", 10, 1, true, 1e6);
        if (!window || !fraction || !top) return finish();
        std::vector<analysis::Alias> aliases = analysis::findAliases(s, *target, *window, *fraction);
        reply.text = fmt::format("target: {} at d = {} is {}; {} peak{} beyond |d - {}| > {} reach {} of it{}\n", k->label,
                                 number(*target), number(target_value), aliases.size(), aliases.size() == 1 ? "" : "s",
                                 number(*target), number(*window), number(*fraction),
                                 aliases.size() > *top ? fmt::format(" (highest {} shown)", *top) : "");
        plot::Table t;
        t.columns = {"d", "score", "fraction of target", "gap to target"};
        for (size_t i = 0; i < aliases.size() && i < static_cast<size_t>(*top); ++i)
          t.addRow({number(aliases[i].d), number(aliases[i].value), twoDecimals(aliases[i].fraction),
                    number(aliases[i].gap)});
        if (!aliases.empty()) reply.text += plot::toMarkdown(t);
      } else {
        auto width = args.number("width", 10, 1, true, 1e9);  // a whole number of points
        if (!width) return finish();
        std::vector<analysis::WindowMax> w = analysis::windowMaxima(s, *target, static_cast<size_t>(*width));
        if (w.size() > 2000) {
          args.error(args.rangeOf("over"), fmt::format("{} windows is too many to print", w.size()), "use a wider window");
          return finish();
        }
        plot::Table t;
        t.columns = {"window", "highest at", "score", "fraction of target"};
        for (const auto& x : w)
          t.addRow({fmt::format("{}..{}", number(x.lo), number(x.hi)), number(x.d), number(x.value), twoDecimals(x.fraction)});
        reply.text = fmt::format("target: {} at d = {} is {}\n", k->label, number(*target), number(target_value)) + plot::toMarkdown(t);
      }
    } else if (c == "plot") {
      auto width = args.number("width", 72, 8, true, 1000);
      auto height = args.number("height", 16, 4, true, 200);
      if (!width || !height) return finish();
      reply.text = k->label + "\n" + analysis::terminalPlot(s.d, s.value, static_cast<int>(*width), static_cast<int>(*height));
    } else if (c == "svg") {
      auto file = args.text("file");
      if (!file) return finish();
      const plot::Chart chart = analysis::sweepFigure(k->label, s);
      const plot::Table t = analysis::sweepTable(s);
      std::string csv = *file;
      if (csv.size() > 4 && csv.substr(csv.size() - 4) == ".svg") csv.resize(csv.size() - 4);
      csv += ".csv";
      try {
        writer_(*file, plot::renderSvg(chart));
        writer_(csv, plot::toCsv(t));
        reply.text = fmt::format("wrote {} and {}\n", *file, csv);
      } catch (const std::exception& x) {
        args.error(args.rangeOf("file"), x.what());
      }
    }
  }
  return finish();
}

}  // namespace posc::repl
