// Crash-safe file writing for results folders.
//
// A run can be killed at any moment (Ctrl-C, a job scheduler, a full disk).
// Every file a run produces is therefore written to a temporary name in the
// same folder, flushed and fsync'ed, then renamed over the final name: a
// reader sees either the old complete file or the new complete file, never a
// half-written one. Temporary names start with '.' and end in ".tmp" so that
// a leftover (from a power cut between write and rename) is easy to spot.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace posc::results {

// Writes `content` to `path` atomically (temp file, fsync, rename). Creates
// nothing but the file itself: the folder must exist. Throws
// std::runtime_error naming the path and the system error on failure, and
// removes the temporary file in that case.
void writeFileAtomic(const std::filesystem::path& path, std::string_view content);

// The temporary name writeFileAtomic uses for `path` (exposed for tests).
std::filesystem::path temporaryPathFor(const std::filesystem::path& path);

// An append-only JSON-lines log that is rewritten atomically on every append,
// so the file on disk always consists of whole lines. Logs are small (one
// line per logged step), so rewriting costs little.
class JsonLinesLog {
 public:
  explicit JsonLinesLog(std::filesystem::path path);
  // A log that continues the file's whole lines (a resumed run).
  static JsonLinesLog reopen(std::filesystem::path path);
  // Appends one line (without its trailing newline) and rewrites the file.
  void append(std::string line);
  // Keeps the first `lines` lines (dropping what a killed run logged after
  // its resume point) and rewrites the file.
  void truncate(size_t lines);
  const std::filesystem::path& path() const { return path_; }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  std::filesystem::path path_;
  std::vector<std::string> lines_;
  std::string text_;
};

// The whole content of a results file, or nullopt when it cannot be read
// (reports and comparisons are rebuilt from the files alone).
std::optional<std::string> readFileText(const std::filesystem::path& path);

}  // namespace posc::results
