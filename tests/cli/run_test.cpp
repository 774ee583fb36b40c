// End to end through the command line: `posc run examples/quickstart.pos`
// trains, evaluates and writes a complete results folder, and reaches the
// accuracy the README promises on the lengths it trained on.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/common/files.h"

namespace fs = std::filesystem;
using posc::testing::readFile;

namespace {

int run(const std::string& args, const fs::path& log) {
  std::string cmd = "cd '" POSC_SOURCE_DIR "' && '" POSC_BINARY "' " + args + " >'" + log.string() + "' 2>&1";
  int raw = std::system(cmd.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

std::vector<std::vector<std::string>> csv(const fs::path& p) { return posc::testing::readCsv(p); }

}  // namespace

TEST(Run, QuickstartLearnsAdditionAndWritesItsResults) {
  fs::path out = fs::path(testing::TempDir()) / "posc_quickstart";
  fs::remove_all(out);
  fs::path log = fs::path(testing::TempDir()) / "posc_quickstart.log";
  ASSERT_EQ(run("run examples/quickstart.pos --no-progress --threads 1 --out '" + out.string() + "'", log), 0)
      << readFile(log);

  // The resolved plan with provenance, and the source it came from.
  std::string plan = readFile(out / "plan.txt");
  EXPECT_EQ(plan.rfind("# posc ", 0), 0u) << plan;
  EXPECT_NE(plan.find("# source hash "), std::string::npos);
  EXPECT_NE(plan.find("experiment quickstart"), std::string::npos);
  EXPECT_EQ(readFile(out / "source.pos"), readFile(POSC_SOURCE_DIR "/examples/quickstart.pos"));
  EXPECT_TRUE(fs::exists(out / "seed0" / "final.pt"));
  EXPECT_TRUE(fs::exists(out / "summary.md"));

  // metrics.jsonl: one JSON object per line, the last at the final step.
  std::istringstream metrics(readFile(out / "metrics.jsonl"));
  std::string line, last;
  int lines = 0;
  while (std::getline(metrics, line)) {
    ++lines;
    EXPECT_EQ(line.front(), '{');
    EXPECT_EQ(line.back(), '}');
    EXPECT_NE(line.find("\"tokens_per_s\""), std::string::npos);
    last = line;
  }
  EXPECT_GE(lines, 10);
  EXPECT_NE(last.find("\"step\":2500"), std::string::npos) << last;

  // accuracy.csv: one row per test length; >= 99% on the trained lengths.
  auto rows = csv(out / "accuracy.csv");
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"seed", "digits", "correct", "total", "accuracy"}));
  for (size_t i = 1; i < rows.size(); ++i) {
    int digits = std::stoi(rows[i][1]);
    int correct = std::stoi(rows[i][2]), total = std::stoi(rows[i][3]);
    EXPECT_EQ(total, 90);
    if (digits <= 5) {
      EXPECT_GE(correct, 89) << "digits " << digits << "\n" << readFile(log);
    }
  }
  // The per-length table is printed at the end, and where the results are.
  EXPECT_NE(readFile(log).find("| digits |"), std::string::npos);
  EXPECT_NE(readFile(log).find("results in " + out.string()), std::string::npos);
}

TEST(Run, WarmStartContinuesFromAnotherExperimentsCheckpoint) {
  fs::path root = fs::path(testing::TempDir()) / "posc_warm";
  fs::remove_all(root);
  fs::path log = fs::path(testing::TempDir()) / "posc_warm.log";
  // The decay model (tiny and short), then the sink variant warm-started from it.
  std::string common = " --preset small --no-progress --threads 1 --set train.steps=30 --set task.test_digits=[3]"
                       " --set task.problems_per_length=10";
  ASSERT_EQ(run("run examples/addition/rope2d_decay.pos" + common + " --out '" + (root / "rope2d_decay-small").string() + "'",
                log), 0) << readFile(log);
  ASSERT_EQ(run("run examples/addition/rope2d_decay_sink.pos" + common + " --out '" +
                    (root / "rope2d_decay_sink-small").string() + "'", log), 0) << readFile(log);
  EXPECT_TRUE(fs::exists(root / "rope2d_decay_sink-small" / "seed0" / "final.pt"));

  // Without the base run, the warm start is a clear user error.
  fs::path lonely = fs::path(testing::TempDir()) / "posc_warm_missing";
  fs::remove_all(lonely);
  int status = run("run examples/addition/rope2d_decay_sink.pos" + common + " --out '" +
                       (lonely / "rope2d_decay_sink-small").string() + "'", log);
  EXPECT_EQ(status, 2);
  EXPECT_NE(readFile(log).find("rope2d_decay"), std::string::npos) << readFile(log);
}

// A warm start from a safetensors file by path: the checkpoint a run wrote
// under GPT names loads into the same model with every tensor; a path that
// does not exist is a located error before anything runs.
TEST(Run, WarmStartFromASafetensorsFile) {
  fs::path root = fs::path(testing::TempDir()) / "posc_warm_safetensors";
  fs::remove_all(root);
  fs::path log = fs::path(testing::TempDir()) / "posc_warm_safetensors.log";
  std::string common = " --preset small --no-progress --threads 1 --set train.steps=20 --set task.test_digits=[3]"
                       " --set task.problems_per_length=10";
  ASSERT_EQ(run("run examples/addition/rope2d_decay.pos" + common + " --out '" + (root / "first").string() + "'", log), 0)
      << readFile(log);
  const fs::path weights = root / "first" / "seed0" / "final.safetensors";
  ASSERT_TRUE(fs::exists(weights));
  ASSERT_EQ(run("run examples/addition/rope2d_decay.pos" + common + " --set 'train.init_from=\"" + weights.string() +
                    "\"' --out '" + (root / "second").string() + "'",
                log),
            0)
      << readFile(log);
  EXPECT_NE(readFile(log).find("warm start from " + weights.string() + ": copied"), std::string::npos) << readFile(log);
  EXPECT_NE(readFile(log).find("every parameter was loaded"), std::string::npos) << readFile(log);
  EXPECT_NE(readFile(root / "second" / "plan.txt").find("warm start from " + weights.string() + " (every seed)"),
            std::string::npos);

  EXPECT_EQ(run("run examples/addition/rope2d_decay.pos" + common +
                    " --set 'train.init_from=\"no/such/model.safetensors\"' --out '" + (root / "third").string() + "'",
                log),
            2);
  EXPECT_NE(readFile(log).find("cannot read the warm-start file"), std::string::npos) << readFile(log);
  EXPECT_NE(readFile(log).find("--set train.init_from:1:1: error"), std::string::npos) << readFile(log);
  EXPECT_FALSE(fs::exists(root / "third"));
  EXPECT_EQ(run("run examples/addition/rope2d_decay.pos" + common + " --set 'train.init_from=\"weights.pt\"' --out '" +
                    (root / "third").string() + "'",
                log),
            2);
  EXPECT_NE(readFile(log).find("'weights.pt' is not a .safetensors file"), std::string::npos) << readFile(log);
}
