// Runs the posc binary as a user would, for the command-line tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

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

// Starts `posc ARGS` in the source folder with stdout and stderr together in
// `log`, without waiting; its pid (exec replaces the shell), for tests that
// signal a running posc.
inline pid_t spawnPosc(const std::string& args, const std::filesystem::path& log) {
  const std::string cmd = "exec '" POSC_BINARY "' " + args + " >'" + log.string() + "' 2>&1";
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(POSC_SOURCE_DIR) != 0) ::_exit(127);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Waits until `predicate` holds (polling every 20 ms), at most `seconds`.
inline bool waitFor(const std::function<bool()>& predicate, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return predicate();
}

}  // namespace posc::testing
