// A `posc repl` session without terminal I/O: inputs in, text out.
//
// Each input is a command (`:sweep k, -2000..2000`), a definition
// (`k(d) = 20*cos(2*pi*d/6)`, `w = 2*pi/6`) or an expression (`k(-35)`),
// parsed with the .pos grammar's replLine rule. Definitions persist for the
// session; an error is rendered like any .pos diagnostic (location, the
// input line, a caret under the offending token, a hint) and leaves the
// session as it was. The terminal front end (tools/posc/cmd_repl.cpp) only
// reads lines, decides with `needsMoreInput` whether an input continues on
// the next line, and prints what `submit` returns; tests drive this class
// directly.
#pragma once

#include <functional>
#include <string>

#include "compiler/source/source.h"
#include "runtime/analysis/command.h"
#include "tools/posc/repl/lower.h"

namespace posc::repl {

struct Reply {
  std::string text;    // printed on stdout (ends with a newline when not empty)
  std::string errors;  // rendered diagnostics, for stderr
  bool quit = false;   // :quit
  bool failed() const { return !errors.empty(); }
};

// Writes a file for :svg, :csv and :ridge (the CLI passes an atomic writer).
using FileWriter = std::function<void(const std::string& path, const std::string& content)>;

class Session {
 public:
  explicit Session(FileWriter writer, bool color = false);

  // Whether `text` (the lines so far, joined by '\n') continues on the next
  // line: an open bracket, a trailing operator, comma or '=', or a trailing
  // backslash (which is removed when the input is submitted).
  static bool needsMoreInput(const std::string& text);

  // Runs one complete input. `origin` names it in diagnostics ("<input>",
  // "script.pos") and `first_line` is the line of its first character there.
  Reply submit(const std::string& text, const std::string& origin = "<input>", int first_line = 1);

  const Definitions& definitions() const { return defs_; }

  // The most points one command sweeps. A sweep holds its distances and
  // values (16 bytes a point): the default 1e8 is 1.6 GB; beyond it a typo
  // (0..200000000) would exhaust the memory. The fuzzing harness lowers it.
  void setMaxSweepPoints(double points) { max_sweep_points_ = points; }
  // The most terms :fit fits (default 100,000). A fit of 2,000 terms takes
  // seconds under the sanitizers, so the fuzzing harness lowers it too; the
  // bound is checked by the same code.
  void setMaxFitTerms(double terms) { max_fit_terms_ = terms; }
  static std::string help();

 private:
  // One command being run: its bound arguments and the reply it builds.
  struct Call;
  using Handler = void (Session::*)(Call&);
  // A REPL command: a session command with its handler (:help, :list,
  // :load, :quit), or a shared analysis command (handler null) whose result
  // is shown as text.
  struct Entry {
    analysis::Command command;
    Handler handler = nullptr;
  };
  static const std::vector<Entry>& commands();
  void listDefinitions(Call& call);
  void load(Call& call);
  void runAnalysis(Call& call);

  Definitions defs_;
  FileWriter writer_;
  bool color_;
  double max_sweep_points_ = 1e8;
  double max_fit_terms_ = 100000;
};

}  // namespace posc::repl
