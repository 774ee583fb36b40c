// Bad input never crashes the front end: every example is truncated at many
// points and mutated at random (deterministically), and each result must
// either compile or fail with at least one rendered, located error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "compiler/driver/compile.h"

#include "tests/common/files.h"

namespace fs = std::filesystem;
using posc::testing::readFile;

namespace {

// Compiles `text` as a file in `folder` (a copy of the example's folder, so
// its imports resolve), never writing into the source tree.
void compileMustNotCrash(const fs::path& folder, const std::string& text, const std::string& label) {
  fs::path path = folder / "robustness_input.pos";
  std::ofstream(path) << text;
  posc::driver::Compilation c;
  posc::driver::CompileRequest r;
  r.path = path.string();
  bool ok = false;
  EXPECT_NO_THROW(ok = c.checkAll(r)) << label;
  fs::remove(path);
  if (!ok) {
    EXPECT_TRUE(c.diags.hasErrors()) << label << ": failed without an error";
    std::string rendered = c.diags.render(false);
    EXPECT_NE(rendered.find("error: "), std::string::npos) << label;
  }
}

}  // namespace

TEST(Robustness, TruncatedAndMutatedExamplesNeverCrash) {
  ASSERT_EQ(chdir(POSC_SOURCE_DIR), 0);
  std::mt19937_64 rng(20261130);
  const std::string alphabet = "{}()[]=,.:;+-*/^<>!?\"#$ \nabcxyz0123456789_";
  int cases = 0;
  fs::path copy = fs::path(testing::TempDir()) / "posc_robustness";
  fs::remove_all(copy);
  fs::copy("examples", copy, fs::copy_options::recursive);
  for (const auto& entry : fs::recursive_directory_iterator("examples")) {
    if (entry.path().extension() != ".pos") continue;
    const std::string text = readFile(entry.path());
    const fs::path folder = copy / fs::relative(entry.path().parent_path(), "examples");
    // Truncations.
    for (size_t cut = 0; cut < text.size(); cut += 1 + text.size() / 40, ++cases)
      compileMustNotCrash(folder, text.substr(0, cut), entry.path().string() + " cut at " + std::to_string(cut));
    // Random edits: delete, insert or replace a character, or swap two lines.
    for (int i = 0; i < 40; ++i, ++cases) {
      std::string t = text;
      size_t at = rng() % t.size();
      switch (rng() % 4) {
        case 0: t.erase(at, 1); break;
        case 1: t.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        case 2: t[at] = alphabet[rng() % alphabet.size()]; break;
        default: {
          size_t a = t.rfind('\n', at), b = t.find('\n', at);
          if (a != std::string::npos && b != std::string::npos) std::swap(t[a], t[b]);
          t.insert(at, "= = ");
        }
      }
      compileMustNotCrash(folder, t, entry.path().string() + " edit " + std::to_string(i));
    }
  }
  EXPECT_GT(cases, 500);
}
