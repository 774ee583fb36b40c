// The document tasks' part of an experiment: release criteria of the
// factorial protocol, settings that belong to one task kind, and the
// protocol's defaults.
//
// A requirement is written in the eval section as a call:
//
//     require(lower_bound(retrieval, length = 1024) >= 0.9)
//
// the Wilson 95% lower bound of the matching cells, pooled over their
// documents, must reach the threshold (plan::DocumentRequirement). The
// filters (length, depth, distractors) must name levels the protocol runs.
#pragma once

#include <optional>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/plan/plan.h"
#include "compiler/sema/settings.h"

namespace posc::sema {

// The requirement written by a `require(...)` item; nullopt after reporting
// an error.
std::optional<plan::DocumentRequirement> buildRequirement(const ast::Item& item, DiagnosticEngine& diags);

// After all settings: refuses settings of the other task kind (an addition
// setting in a documents experiment and the reverse), checks the training
// lengths, fills in the protocol's defaults (plan.h) and checks that every
// requirement matches cells the protocol runs. Requirement i was written at
// ctx.written["eval.require.<i>"].
void checkDocumentSettings(SourceRange at, SettingsContext& ctx);

}  // namespace posc::sema
