// metrics.jsonl, a run's log: one JSON record per line, written by the
// trainer ({"seed":0,"step":50,"loss":2.4,"lr":5e-05,"tokens_per_s":5200.0},
// a non-finite loss as null) and by evaluations during training. Read here,
// without LibTorch, for reports and for a run that continues, so that the
// reader of a file a user may have damaged is fuzzed under the sanitizers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace posc::formats {

// The 1-based number of the first line that is not a JSON object, if any
// (an empty last line is no line).
std::optional<size_t> firstDamagedLine(const std::vector<std::string>& lines);

struct LossPoint {
  uint64_t seed = 0;
  double step = 0;
  double loss = 0;
};


// A training record: the step's loss (NaN where the log has null), learning
// rate and throughput (NaN where the record has none).
struct TrainPoint {
  uint64_t seed = 0;
  double step = 0;
  double loss = 0, lr = 0, tokens_per_s = 0;
};

// One accuracy of an evaluation during training (`eval.every`): `name` is the
// key the log gives it ("20" digits; "retrieval 128" for a document task).
struct EvalPoint {
  uint64_t seed = 0;
  double step = 0;
  std::string name;
  double accuracy = 0;  // a fraction
};

struct MetricsLog {
  std::vector<TrainPoint> train;  // in the log's order
  std::vector<EvalPoint> evals;   // in the log's order, each record's keys in its order
};

// Every record of a log. Throws std::runtime_error naming the line when a
// line is not a JSON record, or a field it has is of the wrong kind.
MetricsLog readMetricsLog(std::string_view log);

// The training-loss records of a log, in order: records without a loss
// (evaluations) and with a null loss are not points. Throws as
// readMetricsLog.
std::vector<LossPoint> lossCurve(std::string_view log);

}  // namespace posc::formats
