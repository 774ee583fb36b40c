// The phenomenon posc exists to study, end to end on a CPU in about a minute:
// length generalisation far past the training length, and its absence.
//
// `posc study` trains the `--preset small` model (2 layers x 64, operands of
// 1-5 digits, seed 0, one thread) with 2D RoPE and decay
// (examples/addition/rope2d_decay_fast.pos), then continues it with the
// position-free sink and the column penalty
// (examples/addition/rope2d_decay_fast_sink_cutoff.pos, 500 steps), and `posc
// probe --probe 'reach(...)'` tests the second at 50 and 100 digits.
//
// Measured on seeds 0-3 (docs/reproduction.md, "The column penalty at the
// small preset"): the decay model alone gets 0.0-1.1% at 20 digits (4x); with
// the sink and the penalty 100% at 20 and 97.8-100% at 50 (10x) on every seed,
// 93.3-100% at 100 (20x), seed 0 lowest. The bounds leave room for another
// CPU's rounding, not for the contrast to vanish.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "tests/common/files.h"
#include "tests/common/run_posc.h"

namespace fs = std::filesystem;
using posc::testing::readFile;

namespace {

// digits -> exact match (%) from a run's accuracy.csv (seed, digits, correct, total, accuracy).
std::map<int, double> accuracyByLength(const fs::path& run) {
  std::map<int, double> out;
  std::istringstream in(readFile(run / "accuracy.csv"));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "seed,digits,correct,total,accuracy");
  while (std::getline(in, line)) {
    int seed = -1, digits = 0, correct = 0, total = 0;
    EXPECT_EQ(std::sscanf(line.c_str(), "%d,%d,%d,%d", &seed, &digits, &correct, &total), 4) << line;
    EXPECT_EQ(seed, 0);
    if (total > 0) out[digits] = 100.0 * correct / total;
  }
  return out;
}

// digits -> seed 0's exact match (%) from a reach probe's reach.csv (one row
// per seed and length, accuracy as a fraction).
std::map<int, double> reachByLength(const fs::path& csv) {
  std::map<int, double> out;
  const auto rows = posc::testing::readCsv(csv);
  if (rows.empty()) return out;
  EXPECT_EQ(rows[0], (std::vector<std::string>{"seed", "digits", "correct", "problems", "accuracy"}));
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].size() != 5 || rows[i][0] != "0") continue;
    const double accuracy = std::stod(rows[i][4]);
    EXPECT_DOUBLE_EQ(accuracy, std::stod(rows[i][2]) / std::stod(rows[i][3])) << i;
    out[std::stoi(rows[i][1])] = 100.0 * accuracy;
  }
  return out;
}

}  // namespace

TEST(LengthGeneralisation, SinkAndColumnPenaltyHoldTwentyTimesTheTrainingLengthWhereDecayAloneFails) {
  const fs::path dir = posc::testing::scratchDir("posc_length_generalisation");
  const fs::path study = dir / "study", log = dir / "study.log";
  ASSERT_EQ(posc::testing::runPoscLogged(
                "study examples/addition/rope2d_decay_fast.pos examples/addition/rope2d_decay_fast_sink_cutoff.pos "
                "--preset small --seeds 0 --jobs 1 --threads 1 --out '" + study.string() + "'", log),
            0)
      << readFile(log);

  // Trained on 1-5 digits; tested at 5, 8, 10, 15 and 20 digits by the run itself.
  const auto decay = accuracyByLength(study / "seed0" / "rope2d_decay_fast-small");
  const auto cutoff = accuracyByLength(study / "seed0" / "rope2d_decay_fast_sink_cutoff-small");
  ASSERT_TRUE(decay.count(5) && decay.count(20)) << readFile(log);
  ASSERT_TRUE(cutoff.count(5) && cutoff.count(20)) << readFile(log);
  EXPECT_GE(decay.at(5), 95.0) << "the decay model learns addition in distribution";
  EXPECT_LE(decay.at(20), 10.0) << "decay alone does not carry to 4x";
  EXPECT_GE(cutoff.at(5), 95.0);
  EXPECT_GE(cutoff.at(20), 95.0) << "sink + column penalty at 4x";

  // 10x and 20x, on the finished run's checkpoint.
  const fs::path reach = dir / "reach", probe_log = dir / "probe.log";
  ASSERT_EQ(posc::testing::runPoscLogged(
                "probe examples/addition/rope2d_decay_fast_sink_cutoff.pos --preset small --seed 0 --threads 1 "
                "--from '" + (study / "seed0" / "rope2d_decay_fast_sink_cutoff-small").string() +
                    "' --probe 'reach(lengths = [50, 100])' --out '" + reach.string() + "'",
                probe_log),
            0)
      << readFile(probe_log);
  const auto far = reachByLength(reach / "reach.csv");
  ASSERT_TRUE(far.count(50) && far.count(100)) << readFile(reach / "reach.csv");
  EXPECT_GE(far.at(50), 90.0) << "10x the training length";
  EXPECT_GE(far.at(100), 80.0) << "20x the training length";
}
