// Hand-set models: the `shared`, `embed`, `layer` and `unembed` sections of
// an experiment, checked against the model's shapes and turned into a
// plan::HandsetModel.
//
//   shared  { one = 1 }                         named values, tied wherever used
//   embed   { width = 4  table = sparse([(1, 0, 1), (2, 0, 2)]) }
//   layer   { width = 4  heads = 1  head_dim = 1  query_bias = [-40] ...
//             alibi = [log(10)]  mlp_hidden = 1  gate = [[1, 0, 0, 0]] ... }
//   unembed { table = identity() }
//
// A weight is a dense list literal ([[...], ...] for a matrix, [...] for a
// vector), zeros(), identity() or sparse([(row, col, value), ...]) (for a
// vector sparse([(index, value), ...])); shapes may be written in zeros(r, c)
// and identity(n) and are then checked. Every error points at the value,
// entry or index that is wrong and says which shape was expected.
#pragma once

#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/plan/plan.h"

namespace posc::sema {

// Section names that belong to a hand-set model.
bool isHandsetSection(const std::string& name);

// Builds plan.handset from the sections (in source order). `at` locates the
// experiment for errors without a better place. Reports errors to `diags`.
void buildHandset(const std::vector<const ast::Section*>& sections, SourceRange at,
                  plan::ExperimentPlan& plan, DiagnosticEngine& diags);

}  // namespace posc::sema
