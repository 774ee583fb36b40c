// Atomic file writes: temp file in the same folder, write, fsync, rename.
// See atomic_file.h for why.
#include "runtime/results/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
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

void writeFileAtomic(const std::filesystem::path& path, std::string_view content) {
  const std::filesystem::path tmp = temporaryPathFor(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create", tmp, errno);
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
