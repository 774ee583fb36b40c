// The analysis commands the REPL and `analysis` blocks share: the analysis
// library's (runtime/analysis/command.h) and the long-context retrieval
// control (runtime/longctx/retrieval_command.h). The REPL adds its session
// commands (:help, :list, :load, :quit) in session.cpp; an analysis block
// offers every command here except the terminal's renderings (plot, svg).
#pragma once

#include <vector>

#include "runtime/analysis/command.h"

namespace posc::repl {

const std::vector<analysis::Command>& analysisCommands();

}  // namespace posc::repl
