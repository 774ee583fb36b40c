// posc repl: explore kernels over distance interactively (libedit line
// editing and history, or plain lines in a build without libedit), from a
// script on stdin, or from -e inputs. The session itself (parsing,
// definitions, commands, errors) is tools/posc/repl/session.h; this file only
// moves lines in and text out.
#if POSC_WITH_LIBEDIT
#include <editline/readline.h>
#endif
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "runtime/results/atomic_file.h"
#include "tools/posc/cli.h"
#include "tools/posc/repl/session.h"

namespace posc::cli {
namespace {

const char* kReplHelp = R"(usage: posc repl [-e INPUT]...

Defines kernels over the distance d and analyses them: evaluate, tabulate,
sweep, find aliases, windowed maxima, plot (terminal or SVG), ridge-fit
frequency ladders, and the analytic controls. Type :help in the session.

  posc repl                 interactive (line editing; history in $POSC_HISTORY,
                            default ~/.posc_history; empty to keep none)
  posc repl < script        one input per line (a line ending in an operator,
                            a comma or '\' continues); errors name the line
  posc repl -e 'k(d) = cos(d)' -e ':table k, 0..3'

From a script or -e, exits with 2 if any input had an error (after running
the rest), else 0.
)";

void print(const repl::Reply& r) {
  std::fputs(r.text.c_str(), stdout);
  std::fflush(stdout);
  std::fputs(r.errors.c_str(), stderr);
  std::fflush(stderr);
}

void writeFile(const std::string& path, const std::string& content) { results::writeFileAtomic(path, content); }

// Lines from stdin (a script or a pipe): inputs continue across lines like
// in the terminal, and diagnostics name the line where each input starts.
// Like a compiler's error limit (`posc --error-limit N`, 20 by default), the
// diagnostics of the first N failed inputs are shown and the rest counted:
// a pipe of garbage gets a bounded answer, not one error per line.
int runScript(repl::Session& session) {
  const int shown = DiagnosticEngine::defaultErrorLimit();
  int line_no = 0, first = 1, failed = 0;
  std::string line, pending;
  auto submit = [&]() {
    repl::Reply r = session.submit(pending, "<stdin>", first);
    pending.clear();
    if (r.failed() && ++failed > shown && shown > 0) r.errors.clear();
    print(r);
    return !r.quit;
  };
  bool going = true;
  while (going && std::getline(std::cin, line)) {
    ++line_no;
    if (pending.empty()) first = line_no;
    pending += pending.empty() ? line : "\n" + line;
    if (repl::Session::needsMoreInput(pending)) continue;
    going = submit();
  }
  if (going && !pending.empty()) submit();
  if (shown > 0 && failed > shown)
    std::fprintf(stderr, "%d inputs had errors; the first %d are shown (--error-limit N changes it, 0 shows all).\n",
                 failed, shown);
  return failed > 0 ? 2 : 0;
}

#if POSC_WITH_LIBEDIT
std::string historyPath() {
  if (const char* p = std::getenv("POSC_HISTORY")) return p;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.posc_history";
  return "";
}

// One line from the terminal with line editing; false at end of input.
bool readLine(const char* prompt, std::string& line) {
  static const std::string history = [] {
    std::string h = historyPath();
    using_history();
    if (!h.empty()) read_history(h.c_str());
    return h;
  }();
  char* raw = readline(prompt);
  if (raw == nullptr) return false;
  line = raw;
  std::free(raw);
  if (line.find_first_not_of(" \t") != std::string::npos) {
    add_history(line.c_str());
    if (!history.empty()) write_history(history.c_str());
  }
  return true;
}
#else
// A build without libedit: plain lines, no editing or history.
bool readLine(const char* prompt, std::string& line) {
  std::fputs(prompt, stdout);
  std::fflush(stdout);
  return static_cast<bool>(std::getline(std::cin, line));
}
#endif

int runInteractive(repl::Session& session) {
  std::puts("posc repl: kernels over distance. :help lists the commands, Ctrl-D leaves.");
  std::string pending, line;
  while (true) {
    if (!readLine(pending.empty() ? "posc> " : "  ... ", line)) {  // Ctrl-D
      std::puts("");
      break;
    }
    pending += pending.empty() ? line : "\n" + line;
    if (repl::Session::needsMoreInput(pending)) continue;
    repl::Reply r = session.submit(pending);
    pending.clear();
    print(r);  // an error is shown and the session goes on
    if (r.quit) break;
  }
  return 0;
}

int runRepl(const std::vector<std::string>& args) {
  std::vector<std::string> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      std::fputs(kReplHelp, stdout);
      return 0;
    }
    if (args[i] == "-e") {
      if (i + 1 == args.size()) throw UsageError{"-e needs an input"};
      inputs.push_back(args[++i]);
    } else {
      throw UsageError{fmt::format("posc repl does not take '{}'", args[i])};
    }
  }
  repl::Session session(writeFile, colorOutput());
  if (!inputs.empty()) {
    int status = 0;
    for (const std::string& input : inputs) {
      repl::Reply r = session.submit(input, "-e");
      print(r);
      if (r.failed()) status = 2;
      if (r.quit) break;
    }
    return status;
  }
  if (!isatty(fileno(stdin))) return runScript(session);
  return runInteractive(session);
}

const CommandRegistration reg{{"repl", "posc repl [-e INPUT]...", "explore kernels over distance: aliases, ridge fits, the analytic controls",
                               60, false, runRepl}};

}  // namespace
}  // namespace posc::cli
