// Gives every test process its own scratch folder.
//
// CTest runs each discovered test as its own process, several at a time
// (`ctest -j`). Tests write scratch files under testing::TempDir(); with one
// shared /tmp/ two tests of a suite would overwrite each other's files. Before
// main() runs, this points TEST_TMPDIR (which TempDir() reads) at
// <tmp>/posc-test-<pid>/ and removes that folder when the process ends.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace {

struct PrivateTmpDir {
  std::filesystem::path dir;
  PrivateTmpDir() {
    const char* base = std::getenv("TMPDIR");
    dir = std::filesystem::path(base && *base ? base : "/tmp") / ("posc-test-" + std::to_string(::getpid()));
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (!ec) setenv("TEST_TMPDIR", dir.c_str(), 1);
  }
  ~PrivateTmpDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

const PrivateTmpDir private_tmpdir;

}  // namespace
