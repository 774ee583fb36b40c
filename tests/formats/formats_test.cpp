// The readers of results-folder files (runtime/formats), on hand-written
// files: what they accept, what they refuse, and the status round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "runtime/formats/metrics_log.h"
#include "runtime/formats/run_status.h"
#include "runtime/formats/safetensors_layout.h"

namespace {

using namespace posc::formats;

TEST(RunStatusText, ReadsWhatEarlierVersionsWroteAndRoundTrips) {
  // Written by posc before the JSON library wrote it: the same format.
  const std::string old =
      R"({"state":"interrupted","pid":1234,"plan_hash":"9f2c","seeds_done":[0,1],"metrics_lines":41,"seed":2,)"
      R"("step":1500,"message":"stopped by SIGINT\nat a step boundary"})"
      "\n";
  std::optional<RunStatus> s = parseStatus(old);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, "interrupted");
  EXPECT_EQ(s->pid, 1234);
  EXPECT_EQ(s->plan_hash, "9f2c");
  EXPECT_EQ(s->seeds_done, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(s->metrics_lines, 41u);
  EXPECT_EQ(s->seed, 2u);
  EXPECT_EQ(s->step, 1500);
  EXPECT_EQ(s->message, "stopped by SIGINT\nat a step boundary");
  EXPECT_TRUE(s->seedDone(1));
  EXPECT_FALSE(s->seedDone(2));
  EXPECT_EQ(statusJson(*s), old);  // written the same way
  RunStatus done;
  done.state = "finished";
  EXPECT_EQ(statusJson(done),
            R"({"state":"finished","pid":0,"plan_hash":"","seeds_done":[],"metrics_lines":0,"seed":null,"step":0,"message":""})"
            "\n");
  EXPECT_EQ(parseStatus(statusJson(done)), done);
  // What the run trains, after the plan's hash when known.
  done.training_hash = "00ff";
  EXPECT_EQ(statusJson(done).substr(0, 72), R"({"state":"finished","pid":0,"plan_hash":"","training_hash":"00ff","seeds)");
  EXPECT_EQ(parseStatus(statusJson(done)), done);
}

TEST(RunStatusText, RefusesWhatItDidNotWrite) {
  const std::string good =
      R"({"state":"running","pid":1,"plan_hash":"h","seeds_done":[],"metrics_lines":0,"seed":null,"step":0,"message":""})";
  ASSERT_TRUE(parseStatus(good));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_FALSE(parseStatus(""));
  EXPECT_FALSE(parseStatus("{\"state\":\"fini"));
  EXPECT_FALSE(parseStatus("[1, 2]"));
  EXPECT_FALSE(parseStatus(with("\"running\"", "\"resting\"")));  // not a state
  EXPECT_FALSE(parseStatus(with("\"pid\":1", "\"pid\":-1")));
  EXPECT_FALSE(parseStatus(with("\"step\":0", "\"step\":99999999999")));
  EXPECT_FALSE(parseStatus(with("\"seeds_done\":[]", "\"seeds_done\":[-1]")));
  EXPECT_FALSE(parseStatus(with("\"seed\":null", "\"seed\":\"0\"")));
  EXPECT_FALSE(parseStatus(with("\"metrics_lines\":0,", "")));  // a field missing
  EXPECT_FALSE(parseStatus(with("\"plan_hash\":\"h\",", "\"plan_hash\":\"h\",\"training_hash\":7,")));
  EXPECT_EQ(parseStatus(with("\"plan_hash\":\"h\",", "\"plan_hash\":\"h\",\"training_hash\":\"t\",")).value().training_hash, "t");
}

TEST(MetricsLog, LossPointsSkipEvaluationsAndNullLossesAndNameADamagedLine) {
  const std::string log =
      "{\"seed\":0,\"step\":50,\"loss\":2.5,\"lr\":5e-05,\"tokens_per_s\":5200.0}\n"
      "{\"seed\":0,\"step\":100,\"eval\":{\"retrieval 64\":0.5}}\n"
      "{\"seed\":1,\"step\":50,\"loss\":null,\"lr\":5e-05,\"tokens_per_s\":5200.0}\n"
      "\n"
      "{\"seed\":1,\"step\":100,\"loss\":0.125}\n";
  const std::vector<LossPoint> points = lossCurve(log);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].seed, 0u);
  EXPECT_EQ(points[0].step, 50);
  EXPECT_EQ(points[0].loss, 2.5);
  EXPECT_EQ(points[1].seed, 1u);
  EXPECT_EQ(points[1].loss, 0.125);
  try {
    lossCurve(log + "{\"seed\":1,\"st\n");
    ADD_FAILURE() << "a damaged line was read";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "metrics.jsonl line 6 is not a JSON record");
  }
  EXPECT_THROW(lossCurve("{\"seed\":0,\"step\":1,\"loss\":\"low\"}\n"), std::runtime_error);
  EXPECT_EQ(firstDamagedLine({"{}", "{\"a\":1}"}), std::nullopt);
  EXPECT_EQ(firstDamagedLine({"{}", "[1]", "x"}), 2u);
}

TEST(MetricsLog, EveryRecordWithItsLearningRateThroughputAndEvaluations) {
  const std::string log =
      "{\"seed\":0,\"step\":50,\"loss\":2.5,\"lr\":5e-05,\"tokens_per_s\":5200.0}\n"
      "{\"seed\":0,\"step\":100,\"eval\":{\"20\":0.25,\"10\":1}}\n"
      "{\"seed\":1,\"step\":50,\"loss\":null}\n"
      "{\"note\":\"no seed: not a record of the run\"}\n";
  const MetricsLog m = readMetricsLog(log);
  ASSERT_EQ(m.train.size(), 2u);
  EXPECT_EQ(m.train[0].lr, 5e-05);
  EXPECT_EQ(m.train[0].tokens_per_s, 5200.0);
  EXPECT_TRUE(std::isnan(m.train[1].loss));
  EXPECT_TRUE(std::isnan(m.train[1].lr));
  ASSERT_EQ(m.evals.size(), 2u);
  std::map<std::string, double> at100;
  for (const EvalPoint& e : m.evals) {
    EXPECT_EQ(e.seed, 0u);
    EXPECT_EQ(e.step, 100);
    at100[e.name] = e.accuracy;
  }
  EXPECT_EQ(at100, (std::map<std::string, double>{{"10", 1.0}, {"20", 0.25}}));
  EXPECT_THROW(readMetricsLog("{\"seed\":0,\"step\":1,\"loss\":1,\"lr\":\"high\"}\n"), std::runtime_error);
  EXPECT_THROW(readMetricsLog("{\"seed\":0,\"step\":1,\"eval\":{\"10\":\"all\"}}\n"), std::runtime_error);
  EXPECT_THROW(readMetricsLog("{\"seed\":0,\"step\":1,\"eval\":[1]}\n"), std::runtime_error);
}

std::string safetensors(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header + std::string(data_bytes, '\x01');
}

TEST(SafetensorsLayout, ReadsTheDocumentedHeaderAndRefusesAnyOther) {
  const std::string file = safetensors(
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("s":{"dtype":"I64","shape":[],"data_offsets":[24,32]}})",
      32);
  const SafetensorsLayout layout = parseSafetensorsLayout(file);
  EXPECT_EQ(layout.metadata.at("format"), "pt");
  ASSERT_EQ(layout.tensors.size(), 2u);
  EXPECT_EQ(layout.tensors[0].name, "s");  // the header's keys, sorted by the JSON library
  EXPECT_EQ(layout.tensors[1].name, "w");
  EXPECT_EQ(layout.tensors[1].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_STREQ(layout.tensors[1].dtype->name, "F32");
  EXPECT_EQ(layout.data_begin, file.size() - 32);

  auto why = [](const std::string& bytes) {
    try {
      parseSafetensorsLayout(bytes);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(why("1234"), "shorter than its 8-byte header length");
  EXPECT_EQ(why(std::string("\xff\0\0\0\0\0\0\0{}", 10)), "its header claims 255 bytes, the file has 2");
  EXPECT_EQ(why(safetensors("{\"w\":", 0)), "its header is not JSON");
  EXPECT_EQ(why(safetensors(R"({"w":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", 4)),
            "tensor 'w': unknown dtype \"F33\"");
  EXPECT_EQ(why(safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)),
            "tensor 'w': bytes 0..8 lie outside the 4 bytes of data");
  EXPECT_EQ(why(safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4)),
            "tensor 'w': shape [2] of F32 needs 8 bytes, its offsets span 4");
  EXPECT_EQ(why(safetensors(R"({"w":{"dtype":"F32","shape":[1099511627777],"data_offsets":[0,4]}})", 4)),
            "tensor 'w': shape is too large");
}

}  // namespace
