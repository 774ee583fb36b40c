// posc emit ast|plan FILE: the compiler's intermediate forms, as text.
#include <fmt/format.h>

#include <cstdio>

#include "compiler/ast/ast.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

int runEmit(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::puts("usage: posc emit ast FILE\n       posc emit plan FILE [--experiment NAME] [--preset NAME] [--set K=V]...\n\n"
              "ast:  the syntax tree, with the source range of every node\n"
              "plan: the resolved experiment: every setting, every positional component\n"
              "      (which pairs rotate by which channel, exempt kinds, learned params)");
    return 0;
  }
  const std::string what = args[0];
  ExperimentOptions o = parseExperimentOptions({args.begin() + 1, args.end()});
  if (o.files.size() != 1) throw UsageError{fmt::format("posc emit {} needs exactly one FILE", what)};
  driver::Compilation c;
  if (what == "ast") {
    if (!c.load(requestFor(o, o.files[0]))) return reportDiagnostics(c);
    std::fputs(ast::dump(c.program->main().file, c.sources).c_str(), stdout);
    return reportDiagnostics(c);
  }
  if (what == "plan") {
    if (!c.compile(requestFor(o, o.files[0]))) return reportDiagnostics(c);
    std::fputs(plan::dumpPlan(*c.plan).c_str(), stdout);
    return reportDiagnostics(c);
  }
  throw UsageError{fmt::format("posc emit takes ast or plan, not '{}'", what)};
}

const CommandRegistration reg{{"emit", "posc emit ast|plan FILE [options]",
                               "print the syntax tree or the resolved experiment plan", 20, false, runEmit}};

}  // namespace
}  // namespace posc::cli
