// Parameter types of components and primitives, and the checks that turn a
// compile-time Value into a value of that type.
//
//   int, real, bool, text   the obvious
//   channel                 position | column | row | kind
//   kinds                   a token kind or a list of them (digit, separator, special)
//   pairs                   a half-open range of rotation pairs within the head, or `all`
//   dist                    uniform(a, b), log_uniform(a, b), fixed(a), a number, or none
//   values                  a number or a list of numbers
//   heads                   head indices, or `all`
//   any                     unchecked
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/diag/diagnostics.h"
#include "compiler/plan/plan.h"
#include "compiler/sema/value.h"

namespace posc::sema {

const std::vector<std::string>& componentTypes();

// Reports an error (the caller adds its own context notes).
using ReportError = std::function<Diagnostic&(SourceRange, std::string)>;

// Checks `v` against `type` and writes the normalised value to `out` (`all`
// pairs become the full range, a single kind becomes a list, a number becomes
// a fixed distribution). `what` names the value in messages. Returns false
// after reporting.
bool convertValue(const Value& v, const std::string& type, const std::string& what, const plan::ModelPlan& model,
                  const ReportError& error, Value& out);

}  // namespace posc::sema
