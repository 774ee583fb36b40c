// UTF-8 validation against Unicode's table of well-formed byte sequences, and
// the escaped display of source lines under diagnostics.
#include <gtest/gtest.h>

#include "compiler/source/encoding.h"

using posc::BadBytes;

namespace {

std::vector<std::pair<uint32_t, uint32_t>> bad(const std::string& s) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const BadBytes& b : posc::findBadBytes(s, 100)) out.emplace_back(b.offset, b.length);
  return out;
}

}  // namespace

TEST(Encoding, WellFormedSequencesPass) {
  // ASCII, 2-, 3- and 4-byte characters at the edges of their ranges.
  for (const char* s : {"plain", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
                        "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "d \xE2\x89\xA4 10, \xCE\xB8"})
    EXPECT_TRUE(bad(s).empty()) << s;
}

TEST(Encoding, IllFormedSequencesAreFoundWithTheirMaximalSubparts) {
  using V = std::vector<std::pair<uint32_t, uint32_t>>;
  EXPECT_EQ(bad("caf\xE9!"), (V{{3, 1}}));                // Latin-1
  EXPECT_EQ(bad("\xC0\xAF"), (V{{0, 1}, {1, 1}}));        // overlong lead, then a lone continuation
  EXPECT_EQ(bad("\xE0\x80\xAF"), (V{{0, 1}, {1, 1}, {2, 1}}));  // overlong 3-byte form
  EXPECT_EQ(bad("\xED\xA0\x80"), (V{{0, 1}, {1, 1}, {2, 1}}));  // a surrogate
  EXPECT_EQ(bad("\xF4\x90\x80\x80"), (V{{0, 1}, {1, 1}, {2, 1}, {3, 1}}));  // beyond U+10FFFF
  EXPECT_EQ(bad("\xE2\x82x"), (V{{0, 2}}));               // a valid start, cut short
  EXPECT_EQ(bad("\xFF"), (V{{0, 1}}));
  std::vector<BadBytes> nul = posc::findBadBytes(std::string("a\0b", 3), 10);
  ASSERT_EQ(nul.size(), 1u);
  EXPECT_EQ(nul[0].kind, BadBytes::Kind::Nul);
  std::vector<BadBytes> cut = posc::findBadBytes("ok \xF0\x9F\x98", 10);
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].kind, BadBytes::Kind::IncompleteAtEnd);
  EXPECT_EQ(cut[0].length, 3u);
  EXPECT_EQ(posc::findBadBytes(std::string(1000, '\xFF'), 7).size(), 7u);  // the limit
}

TEST(Encoding, DisplayEscapesBadBytesAndKeepsColumns) {
  posc::DisplayLine d = posc::displayLine(std::string("\ta\xE9\x01\xCE\xB8z", 7));
  EXPECT_EQ(d.text, "\ta\\xE9\\x01\xCE\xB8z");
  // Cells: tab, a, \xE9 (4 cells), \x01 (4 cells), theta (1 cell), z.
  std::vector<uint32_t> want = {0, 1, 2, 6, 10, 10, 11, 12};
  EXPECT_EQ(d.column_of, want);
  ASSERT_FALSE(d.tabs.empty());
  EXPECT_TRUE(d.tabs[0]);
  EXPECT_FALSE(d.tabs[1]);
}
