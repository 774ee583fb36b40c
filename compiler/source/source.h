// Source text and locations.
//
// Nodes and diagnostics carry a SourceRange: a file id and a half-open byte
// range. Line, column and the text of the line are computed only when a
// diagnostic is shown (as DuckDB does), so ranges stay two integers wide.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace posc {

struct SourceRange {
  int32_t file = -1;   // index into SourceManager; -1: no location
  uint32_t begin = 0;  // byte offsets, [begin, end)
  uint32_t end = 0;
  bool valid() const { return file >= 0; }
  // The smallest range covering both (same file).
  SourceRange to(const SourceRange& other) const;
};

struct LineColumn {
  int line = 1;    // 1-based
  int column = 1;  // 1-based, in bytes
};

// The largest source posc reads: 250 times the largest example. A longer
// file (or a device such as /dev/zero) is read only this far, plus one byte
// to know it is longer, so a mistyped path cannot exhaust memory.
inline constexpr size_t kMaxSourceBytes = size_t{1} << 20;

class SourceFile {
 public:
  // `first_line`: the line number of the text's first line (a REPL input
  // that starts on line 400 of a script is located there).
  SourceFile(std::string path, std::string text, int first_line = 1);
  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  // True when the file was longer than kMaxSourceBytes: text() holds only its
  // first kMaxSourceBytes + 1 bytes, and diskSize() its size where the file
  // system knows it (0 for a pipe or a device).
  bool cutShort() const { return cut_short_; }
  uintmax_t diskSize() const { return disk_size_; }
  void markCutShort(uintmax_t disk_size) {
    cut_short_ = true;
    disk_size_ = disk_size;
  }
  LineColumn lineColumn(uint32_t offset) const;
  std::string_view lineText(int line) const;  // without the newline
  std::string_view slice(uint32_t begin, uint32_t end) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
  int first_line_ = 1;
  bool cut_short_ = false;
  uintmax_t disk_size_ = 0;
};

// Owns every file read during one compilation (the main file, its imports and
// synthetic sources such as `--set` values).
class SourceManager {
 public:
  int32_t add(std::string path, std::string text, int first_line = 1);
  // Reads a file, at most kMaxSourceBytes + 1 bytes of it (see SourceFile::
  // cutShort); returns nullopt, with errno set, if it cannot be read or is a
  // folder.
  std::optional<int32_t> load(const std::string& path);
  const SourceFile& file(int32_t id) const { return *files_.at(static_cast<size_t>(id)); }
  std::string_view text(const SourceRange& r) const;
  size_t size() const { return files_.size(); }

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
};

}  // namespace posc
