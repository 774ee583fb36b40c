// posc check FILE...: parse and check every experiment of each file.
#include <cstdio>

#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

int runCheck(const std::vector<std::string>& args) {
  ExperimentOptions o = parseExperimentOptions(args);
  if (o.help) {
    std::puts("usage: posc check FILE...\n\nParses and checks every experiment of each file (and the components\n"
              "they use). Prints located errors and exits with 2 if there are any.");
    return 0;
  }
  if (o.files.empty()) throw UsageError{"posc check needs at least one FILE"};
  int status = 0;
  for (const std::string& f : o.files) {
    driver::Compilation c;
    c.checkAll(requestFor(o, f));
    if (reportDiagnostics(c) != 0) status = 2;
  }
  return status;
}

const CommandRegistration reg{{"check", "posc check FILE...", "check .pos files (every experiment in each)", 10,
                               false, runCheck}};

}  // namespace
}  // namespace posc::cli
