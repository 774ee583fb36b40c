// The REPL and `analysis` blocks run one declaration of each command
// (runtime/analysis/command.h): the same call gives the same table in both,
// row for row, and both front doors list the same commands with the same
// defaults.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/parse/parser.h"
#include "tools/posc/repl/analyze.h"
#include "tools/posc/repl/commands.h"
#include "tools/posc/repl/session.h"

namespace {

using posc::repl::AnalysisResult;
using posc::repl::Session;

// The Markdown table rows ("| ... |") of a text, in order.
std::vector<std::string> tableRows(const std::string& text) {
  std::vector<std::string> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("| ", 0) == 0) rows.push_back(line);
  return rows;
}

// The rows of the tables an analysis block wrote into its summary for one call.
std::vector<std::string> blockRows(const std::string& definitions, const std::string& call) {
  posc::SourceManager sources;
  const int32_t id = sources.add("test.pos", "analysis a {\n" + definitions + "\n  " + call + "\n}\n");
  posc::DiagnosticEngine diags(sources);
  auto file = posc::parse::parseFile(id, sources, diags);
  EXPECT_TRUE(file) << diags.render();
  if (!file) return {};
  auto results = posc::repl::runAnalyses(*file, "", diags);
  EXPECT_TRUE(results) << diags.render();
  if (!results) return {};
  return tableRows((*results)[0].summary);
}

// The rows the REPL printed for the same command.
std::vector<std::string> replRows(const std::string& definitions, const std::string& command) {
  std::map<std::string, std::string> files;
  Session s([&](const std::string& path, const std::string& content) { files[path] = content; });
  if (!definitions.empty()) {
    EXPECT_FALSE(s.submit(definitions).failed());
  }
  posc::repl::Reply r = s.submit(command);
  EXPECT_FALSE(r.failed()) << r.errors;
  return tableRows(r.text);
}

TEST(OneCommandLayer, TheReplAndAnalysisBlocksGiveTheSameNumbers) {
  const std::string k = "k = 20*cos(2*pi*d/6) + 5*cos(2*pi*d/40 + 0.3)";
  const struct {
    std::string repl, block;
  } calls[] = {
      {":aliases k, -130..130, window = 3, fraction = 0.9", "aliases(k, over = -130..130, window = 3, fraction = 0.9)"},
      {":windows exp(-abs(d)/10), 0..29, width = 10", "windows(exp(-abs(d)/10), over = 0..29, width = 10)"},
      {":table k, -3..3", "table(k, over = -3..3)"},
      {":rotation omega = 1, scales = [1, 2], max_distance = 10", "rotation(omega = 1, scales = [1, 2], max_distance = 10)"},
      {":recent_mass h = 4, slopes = [0, 0.1], lengths = [16, 64]", "recent_mass(h = 4, slopes = [0, 0.1], lengths = [16, 64])"},
      {":checks", "checks()"},
      {":retrieval margin = 3, lengths = [64], depths = [0.5], distractors = [1, 4], problems = 4",
       "retrieval(margin = 3, lengths = [64], depths = [0.5], distractors = [1, 4], problems = 4)"},
  };
  for (const auto& c : calls) {
    const std::vector<std::string> repl = replRows("k(d) = 20*cos(2*pi*d/6) + 5*cos(2*pi*d/40 + 0.3)", c.repl);
    const std::vector<std::string> block = blockRows("  " + k, c.block);
    EXPECT_GT(repl.size(), 2u) << c.repl;
    EXPECT_EQ(repl, block) << c.repl << "  vs  " << c.block;
  }
}

TEST(OneCommandLayer, BothFrontDoorsListEveryCommandWithItsDefaults) {
  const std::string repl_help = Session::help();
  const std::string block_help = posc::repl::analysisCallsHelp();
  for (const posc::analysis::Command& c : posc::repl::analysisCommands()) {
    EXPECT_NE(repl_help.find(c.usage(true)), std::string::npos) << c.name << "\n" << repl_help;
    if (!c.repl_only) {
      EXPECT_NE(block_help.find(c.usage(false)), std::string::npos) << c.name << "\n" << block_help;
    }
  }
  // One default, written once: the usage lines show the same number.
  EXPECT_NE(repl_help.find(":aliases k, -2000..2000 [, window = 3, fraction = 0.5, target = 0, top = 10]"),
            std::string::npos)
      << repl_help;
  EXPECT_NE(block_help.find("aliases(k, over = -2000..2000, window = 3, fraction = 0.5, target = 0, top = 10)"),
            std::string::npos)
      << block_help;
}

}  // namespace
