// Binding the arguments of a REPL command or an analysis call to what the
// command expects: the arguments are matched to the command's parameters as
// every call of the language matches them (compiler/sema/arguments.h), then
// each is checked for its kind (a kernel, a range of distances, a number, a
// list of numbers, text, a name) with located errors.
#pragma once

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/sema/arguments.h"
#include "tools/posc/repl/lower.h"

namespace posc::repl {

struct ArgSpec {
  enum class Kind { Kernel, Range, Number, Numbers, Text, Symbol } kind;
  std::string name;
  bool required = false;
};

// What a command or call takes: "name" as the user writes it (":aliases",
// "aliases"), its arguments, a usage line for hints, and a one-line summary.
struct Signature {
  std::string name;
  std::vector<ArgSpec> args;
  std::string usage;
  std::string summary;
};

// A kernel argument: a defined kernel's name or an expression in d.
struct KernelArg {
  analysis::KernelProgram program;
  std::string label;
};

class Args {
 public:
  Args(const Signature& signature, const std::vector<ast::Arg>& args, SourceRange range, const Definitions& defs,
       DiagnosticEngine& diags)
      : signature_(signature), args_(args), range_(range), defs_(defs), diags_(diags) {}

  // Matches the arguments to the signature; false after reporting an error.
  bool bind();
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  SourceRange rangeOf(const std::string& name) const { return values_.at(name)->range; }
  const ast::Expr& expr(const std::string& name) const { return *values_.at(name)->value; }

  std::optional<KernelArg> kernel(const std::string& name);
  std::optional<std::pair<double, double>> range(const std::string& name);
  // A number, `fallback` when absent; checks lo <= value <= hi and integrality.
  std::optional<double> number(const std::string& name, double fallback, double lo = -HUGE_VAL, bool integer = false,
                               double hi = HUGE_VAL);
  // A list of numbers ([1, 2, 4] or a single number), `fallback` when absent.
  std::optional<std::vector<double>> numbers(const std::string& name, std::vector<double> fallback, double lo = -HUGE_VAL);
  std::optional<std::string> text(const std::string& name);
  std::optional<std::string> symbol(const std::string& name, const std::vector<std::string>& allowed);

  bool error(SourceRange r, std::string message, std::string hint = {});

 private:
  const Signature& signature_;
  const std::vector<ast::Arg>& args_;
  SourceRange range_;
  const Definitions& defs_;
  DiagnosticEngine& diags_;
  std::map<std::string, const ast::Arg*> values_;
};

}  // namespace posc::repl
