// Binding the written arguments of a REPL command or an analysis call to the
// parameters of its command (runtime/analysis/command.h): the arguments are
// matched as every call of the language matches them (compiler/sema/
// arguments.h), then each is checked against its parameter's kind and
// bounds, and absent ones take the parameter's default. Every error is
// located at the argument it is about.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/sema/arguments.h"
#include "runtime/analysis/command.h"
#include "tools/posc/repl/lower.h"

namespace posc::repl {

class Args {
 public:
  // `repl`: the call is a REPL command (its usage line is the REPL's).
  Args(const analysis::Command& command, bool repl, const std::vector<ast::Arg>& args, SourceRange call,
       const Definitions& defs, DiagnosticEngine& diags)
      : command_(command), repl_(repl), args_(args), call_(call), defs_(defs), diags_(diags) {}

  // Every argument matched, checked and bound, defaults filled in; nullopt
  // after reporting every error found.
  std::optional<analysis::Values> bind();

  bool has(const std::string& name) const { return given_.count(name) > 0; }
  const ast::Expr& expr(const std::string& name) const { return *given_.at(name)->value; }
  // Where a parameter's value is written (its `element`-th entry for a
  // list), or the call when it was not given.
  SourceRange rangeOf(const std::string& name, int element = -1) const;

  // A handler's error, located at what it names.
  void report(const analysis::CommandError& e);
  bool error(SourceRange r, std::string message, std::string hint = {});

 private:
  bool bindOne(const analysis::Param& p, analysis::Values& out);
  std::optional<double> number(const analysis::Param& p, const ast::Expr& e);

  const analysis::Command& command_;
  bool repl_;
  const std::vector<ast::Arg>& args_;
  SourceRange call_;
  const Definitions& defs_;
  DiagnosticEngine& diags_;
  std::map<std::string, const ast::Arg*> given_;
};

}  // namespace posc::repl
