// Shared pieces of the `posc` command line: the command registry, option
// parsing for commands that compile an experiment, and diagnostic output.
//
// Each command lives in its own file (cmd_<name>.cpp) and registers itself
// with a static `CommandRegistration`, so adding a command touches no other
// file. main.cpp dispatches by name and builds `posc --help` from the
// registered summaries.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"

namespace posc::cli {

inline constexpr const char* kVersion = POSC_VERSION;

// A mistake on the command line: printed with a pointer to --help, exit 2.
struct UsageError {
  std::string message;
};

using CommandFn = std::function<int(const std::vector<std::string>& args)>;

struct Command {
  std::string name;
  std::string synopsis;  // e.g. "posc run FILE [options]"
  std::string summary;   // one line for `posc --help`
  int order = 100;       // position in `posc --help` (smaller first)
  bool uses_blas = false;  // numeric work: choose OpenBLAS kernels first
  CommandFn run;
};

// Registered commands, sorted by `order` then name.
std::vector<const Command*> commands();
const Command* findCommand(const std::string& name);

struct CommandRegistration {
  explicit CommandRegistration(Command c);
};

// Whether diagnostics on stderr should be coloured.
bool colorOutput();
// Prints the compilation's diagnostics; returns 2 if any is an error, else 0.
int reportDiagnostics(const driver::Compilation& c);

// Options shared by commands that compile one experiment.
struct ExperimentOptions {
  std::vector<std::string> files;  // positional arguments
  sema::ExperimentRequest request;
  bool help = false;
};

// Parses --experiment, --preset, --set, --steps, --seed, -h/--help and
// positional FILEs. Any other argument is offered to `extra(flag, value)`,
// where `value()` consumes the flag's value (from `--flag=v` or the next
// argument); `extra` returns false when it does not know the flag.
using ExtraOption = std::function<bool(const std::string& arg, const std::function<std::string()>& value)>;
ExperimentOptions parseExperimentOptions(const std::vector<std::string>& args,
                                         const ExtraOption& extra = {});

// A non-negative integer option value, or a UsageError naming the flag.
int parseCount(const std::string& flag, const std::string& v);

driver::CompileRequest requestFor(const ExperimentOptions& o, const std::string& file);

// The text of `posc --help`.
std::string usage();

}  // namespace posc::cli
