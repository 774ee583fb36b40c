// UTF-8 validation (Unicode's well-formed byte sequences, table 3-7) and the
// escaped display of source lines.
#include "compiler/source/encoding.h"

#include <fmt/format.h>

namespace posc {

namespace {

// The length of the well-formed sequence starting at s[i], or 0 with
// `bad` set to the length of its maximal ill-formed subpart (at least 1).
size_t sequenceLength(std::string_view s, size_t i, size_t& bad) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) need = 1;
  else if (b0 == 0xE0) need = 2, lo = 0xA0;
  else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) need = 2;
  else if (b0 == 0xED) need = 2, hi = 0x9F;  // no surrogates
  else if (b0 == 0xF0) need = 3, lo = 0x90;
  else if (b0 >= 0xF1 && b0 <= 0xF3) need = 3;
  else if (b0 == 0xF4) need = 3, hi = 0x8F;
  else {
    bad = 1;
    return 0;
  }
  size_t k = 1;
  for (; k <= need; ++k) {
    if (i + k >= s.size()) break;
    unsigned char b = byte(i + k);
    unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) break;
  }
  if (k == need + 1) return need + 1;
  bad = k;
  return 0;
}

// Unicode's bidirectional formatting characters (UAX #9: LRE..RLO, LRI..PDI,
// LRM, RLM, ALM), which reorder what a terminal shows without being seen.
bool isBidiControl(std::string_view s, size_t i, size_t n) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  if (n == 2) return byte(0) == 0xD8 && byte(1) == 0x9C;  // U+061C
  if (n != 3 || byte(0) != 0xE2) return false;
  if (byte(1) == 0x80) return (byte(2) >= 0xAA && byte(2) <= 0xAE) || byte(2) == 0x8E || byte(2) == 0x8F;
  return byte(1) == 0x81 && byte(2) >= 0xA6 && byte(2) <= 0xA9;
}

uint32_t codePoint(std::string_view s, size_t i, size_t n) {
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[i + k])); };
  if (n == 2) return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
  return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
}

}  // namespace

std::vector<BadBytes> findBadBytes(std::string_view text, size_t limit) {
  std::vector<BadBytes> out;
  for (size_t i = 0; i < text.size() && out.size() < limit;) {
    if (text[i] == '\0') {
      out.push_back({BadBytes::Kind::Nul, static_cast<uint32_t>(i), 1});
      ++i;
      continue;
    }
    size_t bad = 0;
    size_t n = sequenceLength(text, i, bad);
    if (n > 0) {
      i += n;
      continue;
    }
    // A valid lead byte whose sequence runs into the end of the text: a file cut short.
    unsigned char lead = static_cast<unsigned char>(text[i]);
    BadBytes::Kind kind = i + bad == text.size() && lead >= 0xC2 && lead <= 0xF4
                              ? BadBytes::Kind::IncompleteAtEnd
                              : BadBytes::Kind::InvalidUtf8;
    out.push_back({kind, static_cast<uint32_t>(i), static_cast<uint32_t>(bad)});
    i += bad;
  }
  return out;
}

std::string escapeBytes(std::string_view s) {
  std::string out;
  for (char c : s) out += fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
  return out;
}

DisplayLine displayLine(std::string_view line) {
  DisplayLine d;
  d.column_of.assign(line.size() + 1, 0);
  uint32_t column = 0;
  auto emit = [&](std::string_view shown, uint32_t cells, bool tab) {
    d.text += shown;
    for (uint32_t c = 0; c < cells; ++c) d.tabs.push_back(tab);
    column += cells;
  };
  for (size_t i = 0; i < line.size();) {
    d.column_of[i] = column;
    unsigned char b = static_cast<unsigned char>(line[i]);
    if (b == '\t') {
      emit("\t", 1, true);
      ++i;
      continue;
    }
    if (b < 0x20 || b == 0x7F) {
      std::string e = escapeBytes(line.substr(i, 1));
      emit(e, static_cast<uint32_t>(e.size()), false);
      ++i;
      continue;
    }
    size_t bad = 0;
    size_t n = sequenceLength(line, i, bad);
    if (n == 0) {
      std::string e = escapeBytes(line.substr(i, bad));
      for (size_t k = 1; k < bad; ++k) d.column_of[i + k] = column + static_cast<uint32_t>(4 * k);
      emit(e, static_cast<uint32_t>(e.size()), false);
      i += bad;
      continue;
    }
    for (size_t k = 1; k < n; ++k) d.column_of[i + k] = column;
    if (isBidiControl(line, i, n)) {
      std::string e = fmt::format("<U+{:04X}>", codePoint(line, i, n));
      emit(e, static_cast<uint32_t>(e.size()), false);
    } else {
      emit(line.substr(i, n), 1, false);
    }
    i += n;
  }
  d.column_of[line.size()] = column;
  return d;
}

std::string displayText(std::string_view text) {
  auto show = [](std::string_view part) {
    std::string out;
    size_t from = 0;
    for (size_t at = 0;; ++at) {
      if (at == part.size() || part[at] == '\n') {
        out += displayLine(part.substr(from, at - from)).text;
        if (at == part.size()) break;
        out += '\n';
        from = at + 1;
      }
    }
    return out;
  };
  if (text.size() <= kMaxMessageBytes) return show(text);
  // Cut at character boundaries: never inside a UTF-8 sequence.
  auto boundary = [&](size_t i) {
    while (i > 0 && i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
    return i;
  };
  const size_t head = boundary(kMaxMessageBytes * 3 / 4), tail = boundary(text.size() - kMaxMessageBytes / 5);
  return fmt::format("{}...({} bytes not shown)...{}", show(text.substr(0, head)), tail - head,
                     show(text.substr(tail)));
}

}  // namespace posc
