// Line tables and file loading for SourceManager.
#include "compiler/source/source.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

namespace posc {

SourceRange SourceRange::to(const SourceRange& other) const {
  if (!valid()) return other;
  if (!other.valid() || other.file != file) return *this;
  return {file, std::min(begin, other.begin), std::max(end, other.end)};
}

SourceFile::SourceFile(std::string path, std::string text, int first_line)
    : path_(std::move(path)), text_(std::move(text)), first_line_(std::max(1, first_line)) {
  line_starts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

LineColumn SourceFile::lineColumn(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  int line = static_cast<int>(it - line_starts_.begin());
  return {line + first_line_ - 1, static_cast<int>(offset - line_starts_[static_cast<size_t>(line - 1)]) + 1};
}

std::string_view SourceFile::lineText(int numbered) const {
  const int line = numbered - first_line_ + 1;
  if (line < 1 || static_cast<size_t>(line) > line_starts_.size()) return {};
  uint32_t begin = line_starts_[static_cast<size_t>(line - 1)];
  uint32_t end = static_cast<size_t>(line) < line_starts_.size()
                     ? line_starts_[static_cast<size_t>(line)]
                     : static_cast<uint32_t>(text_.size());
  std::string_view s(text_.data() + begin, end - begin);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string_view SourceFile::slice(uint32_t begin, uint32_t end) const {
  begin = std::min<uint32_t>(begin, static_cast<uint32_t>(text_.size()));
  end = std::clamp<uint32_t>(end, begin, static_cast<uint32_t>(text_.size()));
  return std::string_view(text_).substr(begin, end - begin);
}

int32_t SourceManager::add(std::string path, std::string text, int first_line) {
  files_.push_back(std::make_unique<SourceFile>(std::move(path), std::move(text), first_line));
  return static_cast<int32_t>(files_.size() - 1);
}

std::optional<int32_t> SourceManager::load(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    errno = EISDIR;
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= kMaxSourceBytes && in) {
    in.read(chunk, static_cast<std::streamsize>(std::min(sizeof chunk, kMaxSourceBytes + 1 - text.size())));
    text.append(chunk, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return std::nullopt;
  const bool cut_short = text.size() > kMaxSourceBytes;
  const int32_t id = add(path, std::move(text));
  if (cut_short) {
    const uintmax_t size = std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
    files_.back()->markCutShort(ec ? 0 : size);
  }
  return id;
}

std::string_view SourceManager::text(const SourceRange& r) const {
  if (!r.valid()) return {};
  return file(r.file).slice(r.begin, r.end);
}

}  // namespace posc
