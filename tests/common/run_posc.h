// Runs the posc binary as a user would, for the command-line tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/common/files.h"

namespace posc::testing {

struct PoscResult {
  int status = -1;  // exit code; -1 if posc did not exit normally
  std::string out, err;
};

// Runs `posc ARGS` from the source folder (ARGS is passed to the shell as
// written), capturing stdout and stderr through files in the test's scratch
// folder (private to the test process: see private_tmpdir.cpp).
inline PoscResult runPosc(const std::string& args) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "posc_cli_output";
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
  const std::string cmd = "cd '" POSC_SOURCE_DIR "' && '" POSC_BINARY "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int raw = std::system(cmd.c_str());
  PoscResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = readFile(out);
  r.err = readFile(err);
  return r;
}

// Runs a shell command; its exit code, or -1 if it did not exit normally.
inline int sh(const std::string& cmd) {
  const int raw = std::system(cmd.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

// Runs `posc ARGS` from the source folder with stdout and stderr together in `log`.
inline int runPoscLogged(const std::string& args, const std::filesystem::path& log) {
  return sh("cd '" POSC_SOURCE_DIR "' && '" POSC_BINARY "' " + args + " >'" + log.string() + "' 2>&1");
}

}  // namespace posc::testing
