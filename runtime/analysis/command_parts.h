// The parts of the analysis library's command table (command.h), one per
// file, joined by libraryCommands(). Private to runtime/analysis.
#pragma once

#include <vector>

#include "runtime/analysis/command.h"

namespace posc::analysis {

std::vector<Command> kernelCommands();   // kernel_commands.cpp: table, sweep, aliases, windows, plot, svg
std::vector<Command> ladderCommands();   // ladder_commands.cpp: fit, ridge
std::vector<Command> controlCommands();  // control_commands.cpp: rotation, recent_mass, checks

}  // namespace posc::analysis
