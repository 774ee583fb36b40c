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
#include "compiler/parse/parser.h"

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

namespace {

// Parses the expression `text` through each of the three entry points (as a
// setting in a file, as a `--set` value, as a REPL line) and returns the
// rendered diagnostics of the file; every entry point must fail with a
// located error and nothing may crash.
std::string mustFailEverywhere(const std::string& text, const std::string& label) {
  posc::SourceManager sources;
  posc::DiagnosticEngine diags(sources);
  const int32_t file = sources.add("input.pos", "experiment e {\n  train {\n    lr = " + text + "\n  }\n}\n");
  const int32_t id = sources.add("input", text);
  EXPECT_FALSE(posc::parse::parseFile(file, sources, diags).has_value()) << label;
  std::string rendered = diags.render(false);
  posc::DiagnosticEngine expr_diags(sources), repl_diags(sources);
  EXPECT_EQ(posc::parse::parseExpression(id, sources, expr_diags), nullptr) << label;
  EXPECT_FALSE(posc::parse::parseReplLine(id, sources, repl_diags).has_value()) << label;
  for (const posc::DiagnosticEngine* d : {&diags, &expr_diags, &repl_diags}) {
    EXPECT_TRUE(d->hasErrors()) << label;
    if (d->hasErrors()) {
      EXPECT_TRUE(d->all().front().range.valid()) << label << ": error without a location";
    }
  }
  return rendered;
}

}  // namespace

// The inputs that used to overflow the stack (SIGSEGV): each is now a located
// error, at sizes far beyond the limits.
TEST(Robustness, DeepAndLongExpressionsAreLocatedErrors) {
  const size_t n = 100000;
  auto repeat = [](const std::string& s, size_t k) {
    std::string out;
    for (size_t i = 0; i < k; ++i) out += s;
    return out;
  };
  struct Case {
    std::string label, text, message;
  } cases[] = {
      {"nested parentheses", repeat("(", n) + "1" + repeat(")", n), "brackets nested more than 64 deep"},
      {"nested lists", repeat("[", n) + repeat("]", n), "brackets nested more than 64 deep"},
      {"a chain of +1", "1" + repeat("+1", n), "expression more than 512 operations deep"},
      {"a chain of *2", "1" + repeat("*2", n), "expression more than 512 operations deep"},
      {"a chain of &&", "1" + repeat("&&1", n), "expression more than 512 operations deep"},
      {"prefix minus signs", repeat("-", n) + "1", "expression nested more than 256 deep"},
      {"prefix nots", repeat("!", n) + "1", "expression nested more than 256 deep"},
      {"powers", "2" + repeat("^2", n), "expression nested more than 256 deep"},
      {"conditionals", repeat("1?", n) + "1" + repeat(":1", n), "expression nested more than 256 deep"},
      {"conditionals with sums", repeat("1+1?", n) + "1" + repeat(":1", n), "expression nested more than 256 deep"},
      {"indexing", "a" + repeat("[0]", n), "expression more than 512 operations deep"},
      {"members", "a" + repeat(".b", n), "expression more than 512 operations deep"},
      {"sums in parentheses", repeat("(", 60) + "1" + repeat(repeat("+1", 400) + ")", 60),
       "expression more than 512 operations deep"},
  };
  for (const Case& c : cases) {
    std::string rendered = mustFailEverywhere(c.text, c.label);
    EXPECT_NE(rendered.find(c.message), std::string::npos) << c.label << ":\n" << rendered.substr(0, 2000);
    // The source line is shown as a window, not 100,000 characters.
    EXPECT_LT(rendered.size(), 2000u) << c.label;
  }
}

// Just under the limits, the same shapes parse.
TEST(Robustness, ExpressionsWithinTheLimitsParse) {
  auto repeat = [](const std::string& s, size_t k) {
    std::string out;
    for (size_t i = 0; i < k; ++i) out += s;
    return out;
  };
  for (const std::string& text : {repeat("(", 60) + "1" + repeat(")", 60), "1" + repeat("+1", 500),
                                  repeat("-", 250) + "1", "2" + repeat("^2", 250)}) {
    posc::SourceManager sources;
    posc::DiagnosticEngine diags(sources);
    const int32_t id = sources.add("input", text);
    EXPECT_NE(posc::parse::parseExpression(id, sources, diags), nullptr) << diags.render(false).substr(0, 500);
  }
}

// Bytes that are not UTF-8 text are located errors with the bytes escaped,
// in every entry point, and the rendered line never holds a raw bad byte.
TEST(Robustness, BadBytesAreLocatedErrors) {
  for (const std::string& text : {std::string("1 + caf\xE9"), std::string("1 +\0 2", 6), std::string("1 + 2 \xE2\x82"),
                                  std::string("\xFF\xFE"), std::string("x\xED\xA0\x80")}) {
    std::string rendered = mustFailEverywhere(text, "bytes");
    EXPECT_EQ(rendered.find('\0'), std::string::npos);
    EXPECT_NE(rendered.find("\\x"), std::string::npos) << rendered;
    for (char c : rendered) EXPECT_FALSE(static_cast<unsigned char>(c) >= 0x80) << rendered;
  }
}

// A file far larger than any experiment is refused before parsing.
TEST(Robustness, OversizedSourceIsRefused) {
  std::string text = "experiment e {\n";
  while (text.size() < (size_t{3} << 20)) text += "  train { steps = 1 }\n";
  text += "}\n";
  posc::SourceManager sources;
  posc::DiagnosticEngine diags(sources);
  EXPECT_FALSE(posc::parse::parseFile(sources.add("big.pos", text), sources, diags).has_value());
  EXPECT_NE(diags.render(false).find("posc reads sources of up to 1 MB"), std::string::npos) << diags.render(false);
}
