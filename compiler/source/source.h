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

class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  LineColumn lineColumn(uint32_t offset) const;
  std::string_view lineText(int line) const;  // without the newline
  std::string_view slice(uint32_t begin, uint32_t end) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

// Owns every file read during one compilation (the main file, its imports and
// synthetic sources such as `--set` values).
class SourceManager {
 public:
  int32_t add(std::string path, std::string text);
  // Reads a file; returns nullopt if it cannot be read.
  std::optional<int32_t> load(const std::string& path);
  const SourceFile& file(int32_t id) const { return *files_.at(static_cast<size_t>(id)); }
  std::string_view text(const SourceRange& r) const;
  size_t size() const { return files_.size(); }

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
};

}  // namespace posc
