// Atomic file writes: temp file in the same folder, write, fsync, rename.
// See atomic_file.h for why.
#include "runtime/results/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace posc::results {
namespace {

[[noreturn]] void fail(const char* what, const std::filesystem::path& path, int err) {
  throw std::runtime_error(fmt::format("cannot {} '{}': {}", what, path.string(), std::strerror(err)));
}

}  // namespace

std::filesystem::path temporaryPathFor(const std::filesystem::path& path) {
  // pid + counter: two writers (threads or processes) never share a temp file.
  static std::atomic<unsigned> counter{0};
  std::string name = fmt::format(".{}.{}-{}.tmp", path.filename().string(),
                                 static_cast<long>(::getpid()), counter++);
  return path.parent_path() / name;
}

namespace {

// Fault injection for the tests of resumable runs. Each variable holds
// <file name>:<n> and acts on the n-th write of that file name:
//   POSC_FAULT_KILL_BEFORE_RENAME  the process kills itself (SIGKILL) after
//                                  writing the temporary file, before the rename
//   POSC_FAULT_NO_SPACE            the write fails with ENOSPC (a full disk)
bool faultFires(const char* variable, const std::filesystem::path& path, std::atomic<int>& writes) {
  const char* spec = std::getenv(variable);
  if (spec == nullptr) return false;
  const std::string s(spec);
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || s.substr(0, colon) != path.filename().string()) return false;
  return ++writes == std::atoi(s.c_str() + colon + 1);
}

void faultBeforeRename(const std::filesystem::path& path) {
  static std::atomic<int> writes{0};
  if (faultFires("POSC_FAULT_KILL_BEFORE_RENAME", path, writes)) ::kill(::getpid(), SIGKILL);
}

bool faultNoSpace(const std::filesystem::path& path) {
  static std::atomic<int> writes{0};
  return faultFires("POSC_FAULT_NO_SPACE", path, writes);
}

}  // namespace

void writeFileAtomic(const std::filesystem::path& path, std::string_view content) {
  const std::filesystem::path tmp = temporaryPathFor(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create", tmp, errno);
  if (faultNoSpace(path)) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail("write", tmp, ENOSPC);
  }
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("write", tmp, err);
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail("sync", tmp, err);
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("close", tmp, err);
  }
  faultBeforeRename(path);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("rename into", path, err);
  }
  // Make the rename itself durable; a failure here loses nothing already
  // visible, so it is not an error.
  std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

JsonLinesLog::JsonLinesLog(std::filesystem::path path) : path_(std::move(path)) {}

JsonLinesLog JsonLinesLog::reopen(std::filesystem::path path) {
  JsonLinesLog log(std::move(path));
  if (std::optional<std::string> text = readFileText(log.path_)) {
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) log.lines_.push_back(line);
    for (const std::string& l : log.lines_) log.text_ += l + '\n';
  }
  return log;
}

void JsonLinesLog::truncate(size_t lines) {
  if (lines >= lines_.size()) return;
  lines_.resize(lines);
  text_.clear();
  for (const std::string& l : lines_) text_ += l + '\n';
  writeFileAtomic(path_, text_);
}

void JsonLinesLog::append(std::string line) {
  text_ += line;
  text_ += '\n';
  lines_.push_back(std::move(line));
  writeFileAtomic(path_, text_);
}

std::optional<std::string> readFileText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace posc::results
