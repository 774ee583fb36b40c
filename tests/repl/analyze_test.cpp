// `posc analyze` and the analysis blocks: values of the artefacts, located
// errors, and that a failed analysis writes nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/parse/parser.h"
#include "tools/posc/repl/analyze.h"

namespace fs = std::filesystem;

namespace {

using posc::repl::AnalysisResult;

struct Analysed {
  std::optional<std::vector<AnalysisResult>> results;
  std::string errors;
};

Analysed analyse(const std::string& text, const std::string& only = "") {
  posc::SourceManager sources;
  int32_t id = sources.add("test.pos", text);
  posc::DiagnosticEngine diags(sources);
  Analysed a;
  auto file = posc::parse::parseFile(id, sources, diags);
  if (file) a.results = posc::repl::runAnalyses(*file, only, diags);
  a.errors = diags.render();
  return a;
}

const std::string& artefact(const AnalysisResult& r, const std::string& name) {
  for (const auto& a : r.artefacts)
    if (a.file == name) return a.content;
  static const std::string none = "(missing)";
  return none;
}

TEST(Analyze, RotationAndRecentMassTablesHoldTheClosedForms) {
  Analysed a = analyse(
      "analysis c {\n"
      "  rotation(omega = 1, scales = [1, 2], max_distance = 10)\n"
      "  recent_mass(h = 16, slopes = [0, 0.1], lengths = [16, 64])\n"
      "}\n");
  ASSERT_TRUE(a.results) << a.errors;
  const AnalysisResult& r = (*a.results)[0];
  // Separation 2 sin(1/2) = 0.958851, 2 sin(1/4) = 0.494808; similarity cos(10) = -0.839072, cos(5) = 0.283662.
  const std::string& rot = artefact(r, "rotation.csv");
  EXPECT_NE(rot.find("1,0.958851,0.958851,-0.839072,6.28319"), std::string::npos) << rot;
  EXPECT_NE(rot.find("2,0.494808,0.494808,0.283662,12.5664"), std::string::npos) << rot;
  // Slope 0: 16/16 = 1 and 16/64 = 0.25; slope 0.1, L = 64: (1 - e^-1.6) / (1 - e^-6.4) = 0.79943178.
  const std::string& mass = artefact(r, "recent_mass.csv");
  EXPECT_NE(mass.find("0,16,1,1,0\n"), std::string::npos) << mass;
  EXPECT_NE(mass.find("0,64,0.25,0.25,0\n"), std::string::npos) << mass;
  EXPECT_NEAR((1 - std::exp(-1.6)) / (1 - std::exp(-6.4)), 0.79943178, 1e-8);
  EXPECT_NE(mass.find("0.1,64,0.79943178,0.79943178,0.79810348\n"), std::string::npos) << mass;
  EXPECT_NE(artefact(r, "rotation.svg").find("data-name=\"s = 2"), std::string::npos);
  EXPECT_NE(artefact(r, "recent_mass.svg").find("<svg"), std::string::npos);
}

TEST(Analyze, KernelsAliasesAndWindows) {
  Analysed a = analyse(
      "analysis toy {\n"
      "  w = 2*pi/6\n"
      "  k = 20*cos(w*d) + 5*cos(2*pi*d/40 + 0.3)\n"
      "  aliases(k, over = -130..130, window = 3, fraction = 0.999)\n"
      "  windows(exp(-abs(d)/10), over = 0..29, width = 10)\n"
      "}\n");
  ASSERT_TRUE(a.results) << a.errors;
  const AnalysisResult& r = (*a.results)[0];
  // The kernel repeats every 120 (lcm of 6 and 40): the target comes back at
  // +-120, and the teeth at 78 and -42 (= 78 - 120) beat it.
  const std::string& aliases = artefact(r, "k_aliases.csv");
  EXPECT_EQ(aliases.substr(0, aliases.find('\n')), "d,score,fraction of target,gap to target");
  const size_t n78 = aliases.find("\n78,24.9995,1.009,"), n42 = aliases.find("\n-42,24.9995,1.009,");
  const size_t p120 = aliases.find("\n120,24.7767,1.000,"), m120 = aliases.find("\n-120,24.7767,1.000,");
  EXPECT_NE(n78, std::string::npos) << aliases;
  EXPECT_NE(n42, std::string::npos) << aliases;
  EXPECT_NE(p120, std::string::npos) << aliases;
  EXPECT_NE(m120, std::string::npos) << aliases;
  EXPECT_LT(std::max(n78, n42), std::min(p120, m120)) << "highest first:\n" << aliases;
  EXPECT_EQ(std::count(aliases.begin(), aliases.end(), '\n'), 5) << aliases;
  EXPECT_EQ(artefact(r, "kernel_windows.csv"),
            "window start,window end,highest at,score,fraction of target\n"
            "0,9,0,1,1.000\n10,19,10,0.367879,0.368\n20,29,20,0.135335,0.135\n");
}

TEST(Analyze, ErrorsAreLocated) {
  Analysed a = analyse(
      "analysis toy {\n"
      "  k = 20*cos(2*pi*d/6)\n"
      "  alises(k, over = -10..10)\n"
      "  windows(k, over = -10..10, widht = 3)\n"
      "}\n");
  EXPECT_FALSE(a.results);
  EXPECT_EQ(a.errors,
            "test.pos:3:3: error: unknown analysis 'alises'\n"
            "      alises(k, over = -10..10)\n"
            "      ^~~~~~\n"
            "note: did you mean 'aliases'?\n"
            "help: an analysis block holds definitions (k = ...) and the calls listed by `posc analyze --help`\n"
            "test.pos:4:30: error: windows has no argument 'widht'\n"
            "      windows(k, over = -10..10, widht = 3)\n"
            "                                 ^~~~~\n"
            "note: did you mean 'width'?\n"
            "help: usage: windows(k, over = -2000..2000, width = 10, target = 0)\n"
            "2 errors generated.\n");
}

TEST(Analyze, RetrievalControlOnLongContextDocuments) {
  Analysed a = analyse(
      "analysis r {\n"
      "  retrieval(margin = 2, lengths = [64, 256], depths = [0, 1], distractors = [0, 4], problems = 3)\n"
      "  alibi = -0.1*d\n"
      "  retrieval(bias = alibi, margin = 2, lengths = [256], depths = [0, 1], distractors = [4], problems = 3)\n"
      "}\n");
  ASSERT_TRUE(a.results) << a.errors;
  const AnalysisResult& r = (*a.results)[0];
  const std::string& cells = artefact(r, "retrieval_cells.csv");
  // Without a bias every cell holds the law: N = 0 gives 1, N = 4 gives
  // 1 / (1 + 4 e^-2) = 0.648786.
  EXPECT_NE(cells.find("64,0,0,3,1,1\n"), std::string::npos) << cells;
  EXPECT_NE(cells.find("256,1,4,3,0.648786,0.648786\n"), std::string::npos) << cells;
  EXPECT_NE(artefact(r, "retrieval_evidence_mass_length_x_depth.svg").find("data-row=\"256\""), std::string::npos);
  // The effective margin is the margin itself (residual at rounding level).
  const std::string& margins = artefact(r, "retrieval_margins.csv");
  EXPECT_NE(margins.find("\n64,0,2,"), std::string::npos) << margins;
  EXPECT_NE(margins.find("\n256,1,2,"), std::string::npos) << margins;
  // The named bias gets its own files.
  const std::string& biased = artefact(r, "retrieval_alibi_cells.csv");
  EXPECT_NE(biased.find("256,0,4,3,"), std::string::npos) << biased;
  EXPECT_NE(artefact(r, "retrieval_alibi_evidence_mass_length_x_distractors.svg").find("<svg"), std::string::npos);
  EXPECT_NE(r.summary.find("Retrieval control: margin 2, bias alibi"), std::string::npos) << r.summary;
}

TEST(Analyze, RetrievalControlErrorsAreLocated) {
  Analysed a = analyse(
      "analysis r {\n"
      "  retrieval(lengths = [64.5])\n"
      "  retrieval(depths = [0, 2])\n"
      "  retrieval(lengths = [16], distractors = [40])\n"
      "}\n");
  EXPECT_FALSE(a.results);
  EXPECT_NE(a.errors.find("test.pos:2:24: error: lengths must be whole numbers up to 1e6, not 64.5"), std::string::npos)
      << a.errors;
  EXPECT_NE(a.errors.find("test.pos:3:26: error: depths are fractions in [0, 1], not 2"), std::string::npos) << a.errors;
  EXPECT_NE(a.errors.find("test.pos:4:3: error: no cell can be laid out: every length is too short for its "
                          "distractors"),
            std::string::npos)
      << a.errors;
}

int run(const std::string& args) {
  const std::string cmd = "cd '" POSC_SOURCE_DIR "' && '" POSC_BINARY "' " + args + " >/dev/null 2>&1";
  int raw = std::system(cmd.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Analyze, ExampleRegeneratesTheRidgeTable) {
  const fs::path out = fs::path(testing::TempDir()) / "posc_analyze_example";
  fs::remove_all(out);
  ASSERT_EQ(run("analyze examples/controls/controls.pos --analysis ridge --out '" + out.string() + "'"), 0);
  const std::string csv = slurp(out / "ridge" / "ridge_table.csv");
  // The complete harmonic basis: peak 1.00, side bump 0.00, beyond 0.00.
  EXPECT_NE(csv.find("\"harmonic, period 4000\",2000,1.00,0.00,0.00,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"RoPE geometric, base 10000\",16,"), std::string::npos) << csv;
  EXPECT_NE(slurp(out / "ridge" / "summary.md").find("ridge penalty 1e-05"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "ridge" / "ridge_geometric_16.svg"));
  EXPECT_FALSE(fs::exists(out / "controls"));  // only the analysis asked for
}

TEST(Analyze, AFailedAnalysisWritesNothing) {
  const fs::path dir = fs::path(testing::TempDir()) / "posc_analyze_fail";
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "bad.pos");
    f << "analysis a {\n  rotation(scales = [1, 2])\n}\nanalysis b {\n  rotation(omega = -1)\n}\n";
  }
  EXPECT_EQ(run("analyze '" + (dir / "bad.pos").string() + "' --out '" + (dir / "out").string() + "'"), 2);
  EXPECT_FALSE(fs::exists(dir / "out"));  // not even analysis a, which was fine
}

}  // namespace
