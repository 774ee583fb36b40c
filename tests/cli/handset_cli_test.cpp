// Hand-set models through the command line: `posc run` on the 10-digit adder
// prints 100% on the leaderboard's 10,010 cases and the parameter count
// under each rule; `posc params`; `posc export onnx`; weight-literal errors
// exit 2 and write nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/common/run_posc.h"

namespace fs = std::filesystem;

namespace {

using Result = posc::testing::PoscResult;
using posc::testing::runPosc;  // `posc ARGS` from the source folder, stdout and stderr captured

void expectContains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "missing: " << part << "\nin:\n" << text;
}

}  // namespace

TEST(HandsetCli, RunPrintsFullAccuracyAndEveryCount) {
  fs::path out = fs::path(testing::TempDir()) / "posc_handset_run";
  fs::remove_all(out);
  Result r = runPosc("run examples/adder/handset.pos --out '" + out.string() + "'");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  expectContains(r.out, "protocol adderboard: 10010 / 10010 correct (100.00%)");
  expectContains(r.out, "dense                     169");
  expectContains(r.out, "nonzero                    44");
  expectContains(r.out, "excluding identities       35");
  expectContains(r.out, "unique after tying         36");
  expectContains(r.out, "ALiBi slopes                1");
  EXPECT_EQ(posc::testing::readFile(out / "failures.csv"), "a,b,expected,got\n");
  expectContains(posc::testing::readFile(out / "summary.md"), "10010 / 10010 correct (100.00%)");
  expectContains(posc::testing::readFile(out / "parameters.txt"), "excluding identities       35");
  expectContains(posc::testing::readFile(out / "plan.txt"), "model hand-set");
}

TEST(HandsetCli, ParamsCommand) {
  Result r = runPosc("params examples/adder/handset.pos");
  ASSERT_EQ(r.status, 0) << r.err;
  expectContains(r.out, "excluding identities       35");
  expectContains(r.out, "layer 1 query_bias");
}

// A trained model is counted from the model posc builds: the Qwen3-style
// adder's 244 (gpt_test.cpp's ParameterCountOfTodaysBlocks adds them up by
// hand), its tied embedding once; ALiBi's fixed slopes listed, not counted.
TEST(HandsetCli, ParamsCountsATrainedModelTensorByTensor) {
  Result r = runPosc("params examples/adder/trained_qwen3.pos");
  ASSERT_EQ(r.status, 0) << r.err;
  expectContains(r.out, "trained_qwen3: 244 unique trained parameters");
  expectContains(r.out, "transformer.h.0.attn.c_attn.weight");
  EXPECT_EQ(r.out.find("lm_head"), std::string::npos) << r.out;
  Result alibi = runPosc("params examples/addition/alibi_position.pos --preset small");
  ASSERT_EQ(alibi.status, 0) << alibi.err;
  expectContains(alibi.out, "fixed (not counted):");
  expectContains(alibi.out, "posc.score_params.alibi_slope");
}

TEST(HandsetCli, ExportOnnxWritesACheckedGraph) {
  fs::path model = fs::path(testing::TempDir()) / "posc_handset.onnx";
  fs::remove(model);
  Result r = runPosc("export onnx examples/adder/handset.pos -o '" + model.string() + "'");
  if (r.status == 2 && r.err.find("built without ONNX") != std::string::npos) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.status, 0) << r.err;
  expectContains(r.out, "checked by ONNX's checker");
  // A protobuf ModelProto starts with field 1 (ir_version, varint): byte 0x08.
  const std::string bytes = posc::testing::readFile(model);
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes[0], '\x08');
  // Operator types and tensor names are stored as plain strings.
  for (const char* part : {"tokens", "logits", "Gather", "MatMul", "ReduceSum", "Relu", "layer1.alibi_slopes"})
    expectContains(bytes, part);
}

TEST(HandsetCli, ExportNeedsAnOutput) {
  Result r = runPosc("export onnx examples/adder/handset.pos");
  EXPECT_EQ(r.status, 2);
  expectContains(r.err, "needs -o");
}

TEST(HandsetCli, WeightErrorsExitTwoAndWriteNothing) {
  for (const char* file : {"fail_weights_shape", "fail_weights_entry", "fail_weights_index"}) {
    SCOPED_TRACE(file);
    fs::path out = fs::path(testing::TempDir()) / "posc_handset_failed";
    fs::remove_all(out);
    Result r = runPosc(std::string("run tests/golden/diagnostics/") + file + ".pos --out '" + out.string() + "'");
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    expectContains(r.err, std::string(file) + ".pos:");
    expectContains(r.err, "^");
    EXPECT_FALSE(fs::exists(out));
    fs::path model = fs::path(testing::TempDir()) / "posc_handset_failed.onnx";
    Result e = runPosc(std::string("export onnx tests/golden/diagnostics/") + file + ".pos -o '" + model.string() + "'");
    EXPECT_EQ(e.status, 2);
    EXPECT_FALSE(fs::exists(model));
  }
}

TEST(HandsetCli, TrainedModelsAreScoredOnTheSameCases) {
  // eval.protocol = adderboard on a trained model: one row of 10,010 cases.
  fs::path out = fs::path(testing::TempDir()) / "posc_trained_tiny";
  fs::remove_all(out);
  Result r = runPosc("run examples/adder/trained_tiny.pos --steps 20 --no-progress --out '" + out.string() + "'");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  expectContains(r.err, "trained_tiny: 804 parameters");
  const std::string csv = posc::testing::readFile(out / "accuracy.csv");
  expectContains(csv, "seed,digits,correct,total,accuracy\n0,10,");
  expectContains(csv, ",10010,");
}
