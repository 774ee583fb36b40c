// Golden tests of the front end: diagnostics, plans and ASTs compared byte
// for byte with the expected files next to the sources.
//
//   tests/golden/diagnostics/fail_*.pos  ->  fail_*.err   (posc check output)
//   tests/golden/plan/*.pos              ->  *.plan       (posc emit plan)
//   examples/**/*.pos                    ->  tests/golden/plan/examples/**/<name>[.small].plan
//   tests/golden/ast/*.pos               ->  *.ast        (posc emit ast)
//
// Run with POSC_UPDATE_GOLDEN=1 to rewrite the expected files after an
// intended change (and review the diff).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/driver/compile.h"
#include "compiler/parse/parser.h"

#include "tests/common/files.h"

namespace fs = std::filesystem;
using posc::testing::readFile;

namespace {

bool updating() { return std::getenv("POSC_UPDATE_GOLDEN") != nullptr; }

void compareGolden(const fs::path& expected_path, const std::string& actual) {
  if (updating()) {
    fs::create_directories(expected_path.parent_path());
    std::ofstream(expected_path) << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(expected_path)) << "missing golden file " << expected_path
                                         << " (run with POSC_UPDATE_GOLDEN=1)\nactual:\n" << actual;
  EXPECT_EQ(readFile(expected_path), actual) << "golden mismatch: " << expected_path;
}

std::vector<fs::path> posFiles(const fs::path& dir, bool recursive) {
  std::vector<fs::path> out;
  if (recursive) {
    for (auto& e : fs::recursive_directory_iterator(dir))
      if (e.path().extension() == ".pos") out.push_back(fs::relative(e.path()));
  } else {
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".pos") out.push_back(fs::relative(e.path()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

class Golden : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(chdir(POSC_SOURCE_DIR), 0); }
};

}  // namespace

TEST_F(Golden, EveryFailingSourceHasItsDiagnostics) {
  auto files = posFiles("tests/golden/diagnostics", false);
  ASSERT_GE(files.size(), 15u);
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    posc::driver::Compilation c;
    posc::driver::CompileRequest r;
    r.path = f.string();
    EXPECT_FALSE(c.checkAll(r)) << f << " was expected to fail";
    EXPECT_TRUE(c.diags.hasErrors());
    fs::path expected = f;
    expected.replace_extension(".err");
    compareGolden(expected, c.diags.render(false));
  }
}

// Whether the file holds analysis blocks and no experiment.
bool onlyAnalyses(const fs::path& f) {
  posc::SourceManager sources;
  std::optional<int32_t> id = sources.load(f.string());
  if (!id) return false;
  posc::DiagnosticEngine diags(sources);
  std::optional<posc::ast::File> file = posc::parse::parseFile(*id, sources, diags);
  return file && file->experiments.empty() && !file->analyses.empty();
}

TEST_F(Golden, ExamplePlans) {
  auto files = posFiles("examples", true);
  ASSERT_GE(files.size(), 8u);
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    if (onlyAnalyses(f)) continue;  // run by `posc analyze`, no plan (tests/repl)
    posc::driver::Compilation c;
    posc::driver::CompileRequest r;
    r.path = f.string();
    ASSERT_TRUE(c.compile(r)) << c.diags.render(false);
    fs::path stem = fs::path("tests/golden/plan") / f.parent_path() / f.stem();
    compareGolden(stem.string() + ".plan", posc::plan::dumpPlan(*c.plan));
    // The small preset, where the experiment (or its base) declares one.
    posc::driver::Compilation small;
    r.experiment.preset = "small";
    if (small.compile(r)) compareGolden(stem.string() + ".small.plan", posc::plan::dumpPlan(*small.plan));
  }
}

TEST_F(Golden, Plans) {
  auto files = posFiles("tests/golden/plan", false);
  ASSERT_GE(files.size(), 1u);
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    posc::driver::Compilation c;
    posc::driver::CompileRequest r;
    r.path = f.string();
    ASSERT_TRUE(c.compile(r)) << c.diags.render(false);
    fs::path expected = f;
    expected.replace_extension(".plan");
    compareGolden(expected, posc::plan::dumpPlan(*c.plan));
  }
}

TEST_F(Golden, EveryExampleAndStdlibModuleChecks) {
  for (const char* dir : {"examples", "stdlib"}) {
    for (const fs::path& f : posFiles(dir, true)) {
      posc::driver::Compilation c;
      posc::driver::CompileRequest r;
      r.path = f.string();
      EXPECT_TRUE(c.checkAll(r)) << f << "\n" << c.diags.render(false);
    }
  }
}

TEST_F(Golden, Asts) {
  auto files = posFiles("tests/golden/ast", false);
  ASSERT_GE(files.size(), 1u);
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    posc::driver::Compilation c;
    posc::driver::CompileRequest r;
    r.path = f.string();
    ASSERT_TRUE(c.load(r)) << c.diags.render(false);
    fs::path expected = f;
    expected.replace_extension(".ast");
    compareGolden(expected, posc::ast::dump(c.program->main().file, c.sources));
  }
}
