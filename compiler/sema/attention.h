// The attention section: components expanded into plan primitives.
//
// `use decay(rates = linspace(0.5, 0.05))` binds the arguments to the
// component's typed parameters (defaults evaluated in order, so a default can
// use an earlier parameter), then expands the body. Bodies are made of
// primitives, which are the only things the runtime knows:
//
//   rotate(pairs = 0..16, by = column, base = 10000, stretch = none, heads = all)
//   zero_keys(kinds = [separator], pairs = 16..32, heads = all)
//   embed(table = learned | sinusoidal, channel = position, size = 1024)
//   null_slot()
//   param rate[h] = linspace(0.5, 0.05), learned = false
//   score = s * exp(-rate[h] * abs(q.column - k.column)), exempt_keys = [separator],
//           exempt_queries = [], heads = all
//   require(condition, "message")
//
// plus further `use`s. Parameters are named <component>.<name> in the plan
// (<component>#2.<name> for a second use of the same component).
#pragma once

#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/plan/plan.h"
#include "compiler/sema/program.h"

namespace posc::sema {

// Expands `items` (the effective attention items of an experiment, after
// `extends` and presets) into plan.attention. The model section must already
// be applied (heads and head_dim are known).
void buildAttention(const std::vector<const ast::Item*>& items, const Program& program,
                    plan::ExperimentPlan& plan, const SourceManager& sources, DiagnosticEngine& diags);

}  // namespace posc::sema
