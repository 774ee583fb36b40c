// The shared command list: see tools/posc/repl/commands.h.
#include "tools/posc/repl/commands.h"

#include "runtime/longctx/retrieval_command.h"

namespace posc::repl {

const std::vector<analysis::Command>& analysisCommands() {
  static const std::vector<analysis::Command> all = [] {
    std::vector<analysis::Command> out = analysis::libraryCommands();
    out.push_back(longctx::retrievalCommand());
    return out;
  }();
  return all;
}

}  // namespace posc::repl
