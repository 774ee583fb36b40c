// Score formulas: ast::Expr -> plan::Formula (a flat, typed node list).
//
// A formula reads the score `s`, the head index `h`, channels of the query
// and key (`q.column`, `k.row`, or `q.c` where c is a component argument of
// type channel), declared parameters (`rate[h]` for per-head ones), entries
// of declared tables (`bias[h][i]`, `w[i]`) and numeric component arguments,
// which become constants. Constant subexpressions are folded. It is bound
// through the one binder of expressions (expression.h), as a context that
// knows these names. Everything is checked here, before any code is
// generated: unknown names and channels, per-head parameters not indexed by
// `h`, scalars indexed, tables read the wrong way, wrong arity of functions.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/plan/plan.h"
#include "compiler/sema/evaluate.h"

namespace posc::sema {

struct FormulaScope {
  const Env& env;                           // component arguments and builtins
  const std::map<std::string, int>& params; // visible parameter name -> plan param index
  const plan::AttentionPlan& attention;
};

std::optional<plan::Formula> compileFormula(const ast::Expr& e, const FormulaScope& scope,
                                            DiagnosticEngine& diags);

// Parses a channel name ("column"); false if unknown.
bool channelFromName(const std::string& name, plan::Channel& out);
const std::vector<std::string>& channelNames();

}  // namespace posc::sema
