// Matching the arguments of a call to what the callee declares.
//
// Four kinds of call take arguments by name, most also by position: a
// component's use (`use decay(rates = ..., exempt_keys = [separator])`), an
// attention primitive (`rotate(pairs = 0..8, by = column)`), a probe
// (`kernel(place = 3, sweep = -200..201)`) and a REPL command or analysis
// call (`:aliases k, 0..2000, top = 3`). What their values mean differs
// (typed settings values, numbers, kernels of distance); how a call's
// arguments meet the callee's parameters does not, and it is decided here
// once, with one set of located messages:
//
// - positional arguments fill the parameters in declaration order and come
//   before named ones (callees that take names only say so in their hint);
// - a name the callee does not declare is an error at the name, with "did
//   you mean" and the callee's usage;
// - a parameter given twice is an error at the second argument;
// - a required parameter not given is an error at the call, with a note at
//   its declaration where it has one.
//
// Every problem is reported (a call with two misspelt names gets two
// errors); the arguments that did match are still returned so that the
// caller can check their values too and report those errors in the same run.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"

namespace posc::sema {

struct Parameter {
  std::string name;
  bool required = false;
  SourceRange declared;  // where the callee declares it (a component's parameter); may be invalid
};

struct CallShape {
  std::string callee;          // as messages name it: "component 'decay'", "probe 'kernel'", "'rotate'", ":aliases"
  std::vector<Parameter> parameters;
  bool positional = true;      // false: every argument is written `name = value`
  std::string noun = "argument";  // "has no argument 'x'" ("parameter" for components)
  std::string usage;           // the hint of shape errors ("usage: :aliases KERNEL, RANGE")
  SourceRange declared;        // the callee's declaration, noted on shape errors; may be invalid
  std::vector<DiagnosticNote> context;  // added to every error ("in component 'rope' used here")
};

struct MatchedArguments {
  std::map<std::string, const ast::Arg*> given;  // parameter name -> its argument
  bool ok = true;                                // false after any error was reported

  bool has(const std::string& name) const { return given.count(name) > 0; }
  // (parameter, argument) in the order the arguments are written, so that
  // the errors in their values come in the order of the text.
  std::vector<std::pair<std::string, const ast::Arg*>> inSourceOrder() const;
};

MatchedArguments matchArguments(const CallShape& shape, const std::vector<ast::Arg>& args, SourceRange call,
                                DiagnosticEngine& diags);

}  // namespace posc::sema
