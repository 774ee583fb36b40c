// The REPL session without a terminal: definitions, commands, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>

#include "runtime/analysis/kernel.h"
#include "tools/posc/repl/session.h"

namespace {

using posc::repl::Reply;
using posc::repl::Session;

struct Files {
  std::map<std::string, std::string> written;
  posc::repl::FileWriter writer() {
    return [this](const std::string& path, const std::string& content) { written[path] = content; };
  }
};

TEST(ReplSession, DefinitionsPersistAndEvaluate) {
  Files files;
  Session s(files.writer());
  EXPECT_EQ(s.submit("w = 2*pi/6").text, "w = 1.0472\n");
  EXPECT_EQ(s.submit("k(d) = 20*cos(w*d) + 5*cos(2*pi*d/40 + 0.3)").text, "k(d) defined\n");
  const double at35 = 20 * std::cos(2 * M_PI * -35 / 6) + 5 * std::cos(2 * M_PI * -35 / 40 + 0.3);
  Reply r = s.submit("k(-35)");
  EXPECT_FALSE(r.failed()) << r.errors;
  EXPECT_NEAR(std::stod(r.text), at35, 1e-4);
  // A kernel calling a kernel: inlined.
  EXPECT_EQ(s.submit("g(x) = k(2*x) * exp(-abs(x)/100)").text, "g(x) defined\n");
  EXPECT_NEAR(std::stod(s.submit("g(3)").text), (20 * std::cos(2 * M_PI) + 5 * std::cos(2 * M_PI * 6 / 40 + 0.3)) * std::exp(-0.03), 1e-4);
  EXPECT_EQ(s.submit(":list").text, "g(x) = k(2*x) * exp(-abs(x)/100)\nk(d) = 20*cos(w*d) + 5*cos(2*pi*d/40 + 0.3)\nw = 2*pi/6\n");
}

TEST(ReplSession, ErrorsAreLocatedWithACaretAndLeaveTheSessionIntact) {
  Files files;
  Session s(files.writer());
  s.submit("k(d) = 2*d");
  Reply r = s.submit("k(d) = 3*dd + 1");
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(r.errors,
            "<input>:1:10: error: unknown name 'dd'\n"
            "    k(d) = 3*dd + 1\n"
            "             ^~\n"
            "note: did you mean 'd'?\n"
            "help: define it first: a constant with `name = value`, a kernel with `name(d) = ...`\n"
            "1 error generated.\n");
  EXPECT_EQ(s.submit("k(4)").text, "8\n");  // the old definition survives
  // A syntax error, in a script at line 7.
  Reply syntax = s.submit("k(d) = 3 * * d", "script.repl", 7);
  EXPECT_TRUE(syntax.failed());
  EXPECT_NE(syntax.errors.find("script.repl:7:12: error:"), std::string::npos) << syntax.errors;
  EXPECT_NE(syntax.errors.find("    k(d) = 3 * * d\n               ^"), std::string::npos) << syntax.errors;
  // Unknown commands and arguments get suggestions.
  Reply cmd = s.submit(":sweeep k, 0..10");
  EXPECT_NE(cmd.errors.find("unknown command ':sweeep'"), std::string::npos) << cmd.errors;
  EXPECT_NE(cmd.errors.find("did you mean 'sweep'?"), std::string::npos) << cmd.errors;
  Reply arg = s.submit(":aliases k, 0..10, fracton = 0.5");
  EXPECT_NE(arg.errors.find("did you mean 'fraction'?"), std::string::npos) << arg.errors;
  // Commands match their arguments as every call of the language does
  // (compiler/sema/arguments.h): each problem of the line is reported.
  Reply twice = s.submit(":aliases k, 0..10, top = 2, top = 3, fracton = 0.5");
  EXPECT_NE(twice.errors.find("<input>:1:29: error: argument 'top' is given twice"), std::string::npos) << twice.errors;
  EXPECT_NE(twice.errors.find("<input>:1:38: error: :aliases has no argument 'fracton'"), std::string::npos)
      << twice.errors;
  EXPECT_NE(twice.errors.find("2 errors generated."), std::string::npos) << twice.errors;
  Reply range = s.submit(":table k, 10..0");
  EXPECT_NE(range.errors.find("the range 10..0 is empty"), std::string::npos) << range.errors;
  // A NaN or infinite end (found by the REPL fuzzer: 2 % 0 is NaN, and
  // converting the point count was undefined behaviour).
  Reply nan_end = s.submit(":sweep k, -20..2 % 0");
  EXPECT_NE(nan_end.errors.find("<input>:1:16: error: a range of distances needs finite ends, not NaN"),
            std::string::npos)
      << nan_end.errors;
  Reply inf_end = s.submit(":table k, -1e308 * 10..0");
  EXPECT_NE(inf_end.errors.find("needs finite ends, not -inf"), std::string::npos) << inf_end.errors;
  // A sweep too large to hold (found by the REPL fuzzer: 0..200000000 took 3.2 GB).
  Reply huge = s.submit(":aliases k, 0..200000000");
  EXPECT_NE(huge.errors.find("<input>:1:13: error: 2e+08 points is more than this session sweeps at once (1e+08)"),
            std::string::npos)
      << huge.errors;
  // Counts beyond any size_t (found by the REPL fuzzer: a float-to-integer overflow).
  Reply wide = s.submit(":windows k, 0..29, width = 1e88");
  EXPECT_NE(wide.errors.find("'width' must be a whole number in 1..1e+09, not 1e+88"), std::string::npos) << wide.errors;
  Reply top = s.submit(":aliases k, 0..29, top = 1e30");
  EXPECT_NE(top.errors.find("'top' must be a whole number in 1..1e+06, not 1e+30"), std::string::npos) << top.errors;
  EXPECT_EQ(s.submit("k(5)").text, "10\n");
}

TEST(ReplSession, ContinuationLines) {
  EXPECT_TRUE(Session::needsMoreInput("k(d) = 20*cos(2*pi*d/6"));
  EXPECT_TRUE(Session::needsMoreInput("k(d) = 20*cos(2*pi*d/6) +"));
  EXPECT_TRUE(Session::needsMoreInput("k(d) = 20 \\"));
  EXPECT_TRUE(Session::needsMoreInput(":aliases k,"));
  EXPECT_FALSE(Session::needsMoreInput("k(d) = 20*cos(2*pi*d/6)"));
  EXPECT_FALSE(Session::needsMoreInput(":help"));
  EXPECT_FALSE(Session::needsMoreInput("x = \"(\""));
  Files files;
  Session s(files.writer());
  EXPECT_EQ(s.submit("k(d) = 1 +\n  2*d \\\n  + 3").text, "k(d) defined\n");
  EXPECT_EQ(s.submit("k(1)").text, "6\n");
}

TEST(ReplSession, TableAliasesWindowsAndFiles) {
  Files files;
  Session s(files.writer());
  s.submit("k(d) = 20*cos(2*pi*d/6) + 5*cos(2*pi*d/40 + 0.3)");
  EXPECT_EQ(s.submit(":table 2*d, 0..2").text, "| d | 2 * d |\n| --- | --- |\n| 0 | 0 |\n| 1 | 2 |\n| 2 | 4 |\n");
  // The 6-periodic teeth: the first aliases at >= 90% of the target.
  Reply a = s.submit(":aliases k, -200..200, window = 3, fraction = 0.9, top = 3");
  EXPECT_FALSE(a.failed()) << a.errors;
  EXPECT_NE(a.text.find("target: k at d = 0 is 24.7767"), std::string::npos) << a.text;
  Reply w = s.submit(":windows exp(-abs(d)/10), 0..29, width = 10");
  EXPECT_EQ(w.text,
            "target: exp(-abs(d) / 10) at d = 0 is 1\n"
            "| window start | window end | highest at | score | fraction of target |\n| --- | --- | --- | --- | --- |\n"
            "| 0 | 9 | 0 | 1 | 1.000 |\n| 10 | 19 | 10 | 0.367879 | 0.368 |\n| 20 | 29 | 20 | 0.135335 | 0.135 |\n");
  Reply svg = s.submit(":svg k, -50..50, \"k.svg\"");
  EXPECT_EQ(svg.text, "wrote k.svg and k.csv\n");
  ASSERT_TRUE(files.written.count("k.svg"));
  EXPECT_NE(files.written["k.svg"].find("<svg"), std::string::npos);
  EXPECT_EQ(files.written["k.csv"].substr(0, 9), "d,score\n-");
  EXPECT_EQ(std::count(files.written["k.csv"].begin(), files.written["k.csv"].end(), '\n'), 102);
  Reply plot = s.submit(":plot k, -50..50, width = 40, height = 8");
  EXPECT_EQ(std::count(plot.text.begin(), plot.text.end(), '\n'), 10) << plot.text;
}

TEST(ReplSession, FitDefinesTheFittedKernel) {
  Files files;
  Session s(files.writer());
  Reply r = s.submit(":fit harmonic, terms = 2000, as = spike");
  ASSERT_FALSE(r.failed()) << r.errors;
  EXPECT_NE(r.text.find("peak 1.00  worst side bump in range 0.00"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("highest beyond training 0.00"), std::string::npos) << r.text;
  EXPECT_NEAR(std::stod(s.submit("spike(0)").text), 1.0, 0.005);
  EXPECT_NEAR(std::stod(s.submit("spike(7)").text), 0.0, 0.005);
  // The bound on terms is the session's (the fuzzing harness lowers it).
  s.setMaxFitTerms(256);
  Reply big = s.submit(":fit harmonic, terms = 257");
  EXPECT_NE(big.errors.find("<input>:1:24: error: 'terms' must be a whole number in 1..256, not 257"), std::string::npos)
      << big.errors;
  EXPECT_FALSE(s.submit(":fit harmonic, terms = 256").failed());
}

TEST(ReplSession, ControlsAsFunctions) {
  Files files;
  Session s(files.writer());
  EXPECT_EQ(s.submit("recent_mass(0, 16, 64)").text, "0.25\n");
  EXPECT_EQ(s.submit("recent_mass(0.1, 64, 64)").text, "1\n");
  EXPECT_EQ(s.submit("separation(pi/3, 1)").text, "1\n");
  EXPECT_EQ(s.submit("probability(margin(0.9, 1000), 1000)").text, "0.9\n");
  Reply r = s.submit("f(d) = recent_mass(d, 1, 2)");
  EXPECT_NE(r.errors.find("recent_mass(m, h, L) needs constant arguments"), std::string::npos) << r.errors;
}

}  // namespace

namespace {

// A defined kernel's value at d, at full precision (the REPL prints six digits).
double valueOf(const Session& s, const std::string& kernel, double d) {
  auto it = s.definitions().find(kernel);
  if (it == s.definitions().end()) return NAN;
  return posc::analysis::TreeInterpreter(it->second.program).at(d);
}

// Findings of the hostile-input probe (docs/reliability.md): a line of
// comments is no input; NaN points are no extremes, and are counted; an
// input late in a script is numbered from its line without a padded copy of
// the lines before it.
TEST(ReplSession, CommentLinesNaNPointsAndLateScriptLines) {
  Files files;
  Session s(files.writer());
  for (const char* comment : {"// the decay kernel", "  // indented", "// one\n// two"}) {
    Reply r = s.submit(comment);
    EXPECT_FALSE(r.failed()) << comment << "\n" << r.errors;
    EXPECT_EQ(r.text, "");
  }
  s.submit("n(d) = log(d)");  // NaN for d < 0, -inf at 0
  Reply sweep = s.submit(":sweep n, -3..3");
  EXPECT_NE(sweep.text.find("  max 1.09861 at d = 3\n  min -inf at d = 0\n  3 of 7 points are NaN, the first at d = -3\n"),
            std::string::npos)
      << sweep.text;
  Reply nan = s.submit(":sweep log(-1 - abs(d)), 0..2");
  EXPECT_NE(nan.text.find("  max: none, every point is NaN\n  min: none, every point is NaN\n"), std::string::npos)
      << nan.text;
  Reply windows = s.submit(":windows n, -4..5, width = 5, target = 1");
  EXPECT_NE(windows.text.find("| -4 | 0 | 0 | -inf | -inf |"), std::string::npos) << windows.text;  // not the NaN at -4
  EXPECT_NE(windows.text.find("| 1 | 5 | 5 | 1.60944 | inf |"), std::string::npos) << windows.text;
  Reply late = s.submit("k(d) = 3 * * d", "script.repl", 40000);
  EXPECT_NE(late.errors.find("script.repl:40000:12: error:"), std::string::npos) << late.errors;
  EXPECT_NE(late.errors.find("    k(d) = 3 * * d\n               ^"), std::string::npos) << late.errors;
}

}  // namespace

TEST(ReplSession, LoadTurnsScoreFormulasIntoKernels) {
  Files files;
  Session s(files.writer());
  // A stdlib component with chosen arguments: decay on head 2 of 3, s = 4,
  // gives 4 exp(-0.2 |d|) (kind exemptions are noted, not applied).
  Reply r = s.submit(":load decay, args = \"rates = [0.5, 0.3, 0.2]\", heads = 3, head = 2, s = 4, as = dk");
  ASSERT_FALSE(r.failed()) << r.errors;
  EXPECT_NE(r.text.find("dk(d) defined"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("decay.rate[2] = 0.2"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("kind exemptions left out"), std::string::npos) << r.text;
  for (double d : {-7.0, 0.0, 3.0, 25.0}) EXPECT_NEAR(valueOf(s, "dk", d), 4 * std::exp(-0.2 * std::fabs(d)), 1e-12) << d;
  // ALiBi with its default slopes for 8 heads: s - 2^(-8 (h+1) / 8) |d|, head 1.
  ASSERT_FALSE(s.submit(":load alibi, heads = 8, head = 1, s = 3").failed());
  EXPECT_NEAR(valueOf(s, "score", -10), 3 - std::pow(2.0, -2.0) * 10, 1e-12);
  // An experiment's whole chain, from a file: the quick start's decay, head 0.
  const std::string file = std::string(POSC_SOURCE_DIR) + "/examples/quickstart.pos";
  ASSERT_FALSE(s.submit(":load \"" + file + "\", s = 10, as = q").failed());
  EXPECT_NEAR(valueOf(s, "q", 4), 10 * std::exp(-0.5 * 4), 1e-12);
  EXPECT_EQ(s.submit("q(4)").text, "1.35335\n");
  // The loaded kernel is an ordinary one: sweeps and tables work on it.
  Reply t = s.submit(":table q, 0..1");
  EXPECT_NE(t.text.find("| 1 | 6.06531 |"), std::string::npos) << t.text;

  // Errors: a misspelt component, a bad argument (the front end's own
  // diagnostic, located in the generated `use` line), a head out of range.
  Reply typo = s.submit(":load decy");
  EXPECT_NE(typo.errors.find("no stdlib component 'decy'; did you mean 'decay'?"), std::string::npos) << typo.errors;
  Reply bad = s.submit(":load alibi, args = \"slopes = -1\"");
  EXPECT_NE(bad.errors.find("ALiBi slopes must be non-negative"), std::string::npos) << bad.errors;
  EXPECT_NE(bad.errors.find("use alibi(slopes = -1)"), std::string::npos) << bad.errors;
  Reply head = s.submit(":load decay, heads = 2, head = 5");
  EXPECT_NE(head.errors.find("the model has 2 heads (0..1)"), std::string::npos) << head.errors;
  Reply none = s.submit(":load \"" + std::string(POSC_SOURCE_DIR) + "/examples/addition/rope_plain.pos\"");
  EXPECT_NE(none.errors.find("has no score terms"), std::string::npos) << none.errors;
  // The failed loads left the earlier definitions alone.
  EXPECT_NEAR(valueOf(s, "q", 4), 10 * std::exp(-0.5 * 4), 1e-12);
  EXPECT_EQ(s.submit("q(4)").text, "1.35335\n");
}

TEST(ReplSession, LoadReadsATableAtTheDistance) {
  // A per-head table read at |d|: head 1's row, rounded down and clamped.
  const std::string file = ::testing::TempDir() + "/repl_table.pos";
  {
    std::ofstream out(file);
    out << "experiment e {\n  model { layers = 1  width = 32  heads = 2 }\n  attention {\n"
           "    param t[h][4] = [[1, 2, 3, 4], [10, 20, 30, 40]]\n"
           "    score = s + t[h][abs(q.position - k.position) / 2]\n  }\n}\n";
  }
  Files files;
  Session s(files.writer());
  Reply r = s.submit(":load \"" + file + "\", head = 1, s = 0.5, as = tk");
  ASSERT_FALSE(r.failed()) << r.errors;
  EXPECT_NE(r.text.find("t[1] = [10, 20, 30, 40]"), std::string::npos) << r.text;
  const std::map<double, double> want = {{0, 10.5}, {1, 10.5}, {-2, 20.5}, {3, 20.5}, {5, 30.5}, {-6, 40.5}, {100, 40.5}};
  for (auto [d, v] : want) EXPECT_EQ(valueOf(s, "tk", d), v) << d;
}
