// An analysis command, declared once for both of its front doors: the REPL
// (`:aliases k, -200..200, fraction = 0.9`) and the `analysis` blocks of a
// .pos file (`aliases(k, over = -200..200, fraction = 0.9)`).
//
// A command is its parameters (kind, default, bounds: the one place each
// default is written, and the usage line is generated from them) and a
// handler that computes a Result (tables, figures, text, a kernel it
// defines) from values already bound and checked against those parameters.
// How a result is shown is the caller's: the REPL renders it as text in the
// terminal, an analysis block writes it as CSV, Markdown and SVG files. Both
// take their numbers from the same Result, so the same command gives the
// same numbers in both (tests/repl checks it).
//
// Binding the written arguments to the parameters, with located errors, is
// the front end's (tools/posc/repl/args.h); a handler reports what only it
// can check by throwing CommandError, naming the parameter to point at.
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/analysis/kernel.h"
#include "runtime/plot/chart.h"
#include "runtime/plot/table.h"

namespace posc::analysis {

// One parameter: what its argument must be, and what an absent one means.
struct Param {
  enum class Kind {
    Kernel,   // a defined kernel's name, or an expression in d
    Range,    // lo..hi, a range of distances
    Number,   // a number (integer, between lo and hi when those are set)
    Numbers,  // [a, b, ...] or one number
    Text,     // "a string"
    Symbol,   // a bare name (one of `symbols` when that is not empty)
    Source,   // text in double quotes or a bare name, read by the handler's front door (:load)
  };
  Kind kind = Kind::Number;
  std::string name;
  bool required = false;
  // The default of an optional parameter, in its kind's field; `shown` is
  // how usage lines write it when it is not the plain value ("k" for a
  // target that defaults to a spike, "[16, 32, ..., 4096]").
  double number = 0;
  std::vector<double> numbers;
  std::pair<double, double> range{0, 0};
  std::string text;
  std::string shown;
  bool has_default = false;  // false: absent means "not given" (Values::given)
  // Checks on numbers (each element of Numbers).
  double lo = -HUGE_VAL, hi = HUGE_VAL;
  bool integer = false;
  std::vector<std::string> symbols;

  // Builders, so that a declaration reads as one line per parameter.
  static Param kernel(std::string name, bool required = true);
  static Param distances(std::string name, bool required = true);
  static Param num(std::string name, double fallback);
  static Param nums(std::string name, std::vector<double> fallback, std::string shown = {});
  static Param str(std::string name, bool required = false);
  static Param symbol(std::string name, std::vector<std::string> allowed, std::string fallback = {},
                      bool required = false);
  Param& atLeast(double v) { lo = v; return *this; }
  Param& atMost(double v) { hi = v; return *this; }
  Param& whole() { integer = true; return *this; }
  Param& showDefault(std::string s) { shown = std::move(s); return *this; }
  Param& optional() { required = false; return *this; }
};

// A kernel argument as bound: its program and how results name it (the
// defined name, or the expression's text).
struct KernelValue {
  KernelProgram program;
  std::string label;
  bool named = false;  // a defined kernel's name, not an expression
};

// The bound arguments of one call, defaults filled in.
class Values {
 public:
  bool given(const std::string& name) const { return given_.count(name) > 0; }
  double number(const std::string& name) const { return numbers_.at(name); }
  const std::vector<double>& numbers(const std::string& name) const { return lists_.at(name); }
  std::pair<double, double> range(const std::string& name) const { return ranges_.at(name); }
  const std::string& text(const std::string& name) const { return texts_.at(name); }
  // Null when the parameter was not given and has no default.
  const KernelValue* kernel(const std::string& name) const;

  // For the binder.
  void setNumber(const std::string& name, double v, bool given);
  void setNumbers(const std::string& name, std::vector<double> v, bool given);
  void setRange(const std::string& name, std::pair<double, double> v, bool given);
  void setText(const std::string& name, std::string v, bool given);
  void setKernel(const std::string& name, KernelValue v);

 private:
  std::map<std::string, bool> given_;
  std::map<std::string, double> numbers_;
  std::map<std::string, std::vector<double>> lists_;
  std::map<std::string, std::pair<double, double>> ranges_;
  std::map<std::string, std::string> texts_;
  std::map<std::string, KernelValue> kernels_;
};

// What a command computed.
struct Result {
  struct Table {
    std::string stem;     // file stem in an analysis folder: <stem>.csv, <stem>.md
    std::string heading;  // "Aliases of k"
    std::string note;     // the settings and what the columns mean
    plot::Table table;
    bool print = true;    // shown in a terminal (false: too long; files only)
  };
  struct Figure {
    std::string file;  // "k_sweep.svg"
    std::string svg;
  };
  struct Definition {  // a kernel of d the command defines (:fit)
    std::string name;
    KernelProgram program;
    std::string source;  // how `:list` shows it
  };
  std::string text;   // lines above the tables (both front doors show them)
  std::string timing; // how long it took (the REPL shows it; files never do)
  std::vector<Table> tables;
  std::vector<Figure> figures;
  std::optional<Definition> defines;
  struct File {        // a file asked for by name (:svg k, -50..50, "k.svg"; csv = "...")
    std::string param;  // the parameter that named it, for errors in writing it
    std::string path;
    std::string content;
  };
  std::vector<File> files;
};

// A failure only the handler can see, located at a parameter's argument (its
// `element`-th entry for a list; -1 the whole argument) or, with an empty
// `param`, at the call.
struct CommandError : std::runtime_error {
  CommandError(std::string param, std::string message, std::string hint = {}, int element = -1)
      : std::runtime_error(std::move(message)), param(std::move(param)), hint(std::move(hint)), element(element) {}
  std::string param;
  std::string hint;
  int element;
};

// Limits a front door sets on what one call may compute.
struct Limits {
  double max_points = 5e7;      // grid points of one sweep
  double max_fit_terms = 1e5;   // frequencies in one ladder fit
};

struct Command {
  std::string name;                  // as an analysis block writes it; the REPL adds ':'
  std::vector<std::string> aliases;  // other accepted names (an earlier spelling)
  std::vector<Param> params;
  std::string summary;
  std::function<Result(const Values&, const Limits&)> run;
  bool repl_only = false;  // a rendering for the terminal (plot, svg), not a block's call

  // "aliases(k, over = -2000..2000, window = 3, ...)" or, for the REPL,
  // ":aliases k, -2000..2000 [, window = 3, ...]": generated from params.
  std::string usage(bool repl) const;
  bool answersTo(const std::string& n) const;
};

// How a default is written in usage lines and help.
std::string showDefault(const Param& p);

// The commands of the analysis library: kernels over distance (table,
// sweep, aliases, windows), frequency ladders (fit, ridge) and the analytic
// controls (rotation, recent_mass, checks).
const std::vector<Command>& libraryCommands();

// The first of `commands` that answers to `name`, or null.
const Command* findCommand(const std::vector<Command>& commands, const std::string& name);

}  // namespace posc::analysis
