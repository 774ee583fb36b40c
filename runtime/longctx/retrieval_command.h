// The retrieval control as an analysis command (runtime/analysis/command.h):
// the analytic retrieval head on the protocol's documents under a positional
// bias kernel. It lives with the long-context task, which the analysis
// library sits below.
#pragma once

#include "runtime/analysis/command.h"

namespace posc::longctx {

const analysis::Command& retrievalCommand();

}  // namespace posc::longctx
