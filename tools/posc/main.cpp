// posc: the command line. Dispatches to the commands registered by the
// cmd_*.cpp files (see cli.h); `posc --help` lists them.
//
// Exit codes: 0 success, 2 a problem with the input or the command line
// (reported with file:line:col and a caret), 3 `posc run` finished but
// missed a release criterion of its document protocol, 1 an internal error.
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "compiler/jit/compiled.h"
#include "compiler/sema/probes.h"
#include "runtime/onnx/export_onnx.h"
#include "compiler/sema/settings.h"
#include "tools/posc/blas_kernels.h"
#include "tools/posc/cli.h"

#ifndef POSC_WITH_LIBEDIT
#define POSC_WITH_LIBEDIT 0
#endif

int main(int argc, char** argv) {
  using namespace posc::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  // --error-limit N (any position, any command): errors shown before the rest are only counted.
  for (size_t i = 0; i < args.size(); ++i) {
    std::string value;
    if (args[i].rfind("--error-limit=", 0) == 0) {
      value = args[i].substr(14);
      args.erase(args.begin() + static_cast<long>(i));
    } else if (args[i] == "--error-limit" && i + 1 < args.size()) {
      value = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
    } else {
      continue;
    }
    try {
      posc::DiagnosticEngine::setDefaultErrorLimit(parseCount("--error-limit", value));
    } catch (const UsageError& e) {
      std::fprintf(stderr, "posc: error: %s\n(run 'posc --help' for usage)\n", e.message.c_str());
      return 2;
    }
    break;
  }
  const Command* command = args.empty() ? nullptr : findCommand(args[0]);
  // Only commands that do numeric work (or report the kernels) pay for the
  // possible re-exec; check and emit never touch the BLAS.
  if ((command && command->uses_blas) ||
      (!args.empty() && (args[0] == "--version" || args[0] == "--blas-kernels" || args[0] == "--blas-library")))
    posc::tools::chooseBlasKernels(argv);
  try {
    if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
      if (args.size() >= 2 && args[1] == "settings") {
        std::fputs(posc::sema::describeSettings().c_str(), stdout);
        return 0;
      }
      if (args.size() >= 2 && args[1] == "probes") {
        std::fputs(posc::sema::describeProbeArguments().c_str(), stdout);
        return 0;
      }
      // `posc help CMD` is `posc CMD --help`.
      if (args.size() >= 2 && args[0] == "help") {
        if (const Command* topic = findCommand(args[1])) return topic->run({"--help"});
        throw UsageError{fmt::format("posc help: no command or topic '{}' (commands: posc --help; topics: settings, "
                                     "probes)",
                                     args[1])};
      }
      std::fputs(usage().c_str(), stdout);
      return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
      const std::string blas = posc::tools::blasDescription();
      std::printf("posc %s (BLAS: %s)\n", kVersion, blas.empty() ? "not OpenBLAS" : blas.c_str());
      // The optional features of this build (CMakeLists.txt: POSC_WITH_*).
      const bool libedit = POSC_WITH_LIBEDIT + 0 != 0;
      std::printf("features: jit %s, onnx %s, libedit %s\n",
                  posc::jit::available() ? "yes (LLVM ORC)" : "no (built without LLVM)",
                  posc::onnx_export::available() ? "yes" : "no (built without libonnx-dev)",
                  libedit ? "yes" : "no (plain lines in posc repl)");
      return 0;
    }
    if (args[0] == "--blas-kernels") {  // the OpenBLAS core in use, for scripts and tests
      std::printf("%s\n", posc::tools::blasCoreName().c_str());
      return 0;
    }
    if (args[0] == "--blas-library") {  // the OpenBLAS file in use, so that benchmarks load the same one
      std::printf("%s\n", posc::tools::blasLibraryPath().c_str());
      return 0;
    }
    if (!command) throw UsageError{fmt::format("unknown command '{}'", args[0])};
    return command->run({args.begin() + 1, args.end()});
  } catch (const UsageError& e) {
    std::fprintf(stderr, "posc: error: %s\n(run 'posc --help' for usage)\n", e.message.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "posc: internal error: %s\n", e.what());
    return 1;
  }
}
