// Byte-level rules of source text: a .pos file is UTF-8 without NUL bytes.
//
// The parser's input stream decodes UTF-8 and throws on a malformed
// sequence, so every source is checked here first and each bad sequence
// becomes a located error with the bytes shown escaped. Diagnostics render
// source lines through displayLine(), so a bad byte or a control character
// can never garble or cut short the line under a caret.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace posc {

struct BadBytes {
  enum class Kind { InvalidUtf8, IncompleteAtEnd, Nul };
  Kind kind = Kind::InvalidUtf8;
  uint32_t offset = 0;  // first byte
  uint32_t length = 1;  // bytes in the ill-formed sequence (its maximal subpart)
};

// Every ill-formed UTF-8 sequence and every NUL byte, in order; at most
// `limit` of them.
std::vector<BadBytes> findBadBytes(std::string_view text, size_t limit);

// "\xE9" for each byte of s.
std::string escapeBytes(std::string_view s);

// A source line as it is shown under a diagnostic: bad bytes and control
// characters other than tab appear as \xNN, and the invisible characters
// that reorder text on a terminal (Unicode's bidirectional controls, the
// "Trojan Source" characters) as <U+202E>. `column_of[i]` is the display
// cell where the line's byte i starts (one cell per code point; tabs are
// kept and count as one), with column_of[line.size()] one past the end;
// `tabs` marks the cells that hold a tab, so a caret line can copy them.
struct DisplayLine {
  std::string text;
  std::vector<uint32_t> column_of;
  std::vector<bool> tabs;
};
DisplayLine displayLine(std::string_view line);

// The longest message text a diagnostic shows: a message that quotes a huge
// token (a 200 KB name) keeps its start and end around a count of the bytes
// left out.
inline constexpr size_t kMaxMessageBytes = 1000;

// A message, hint or path as it is shown: escaped as displayLine() escapes
// (newlines kept) and cut to kMaxMessageBytes at character boundaries.
std::string displayText(std::string_view text);

}  // namespace posc
