// status.json, a results folder's state across interruptions, as text.
//
//   {"state":"running","pid":123,"plan_hash":"...","training_hash":"...",
//    "seeds_done":[0],"metrics_lines":41,"seed":1,"step":1500,"message":""}
//
// state: running (a SIGKILL, or a second stop signal, leaves this with a dead
// pid and the step of the last resume point written), interrupted
// (SIGINT/SIGTERM: stopped at a step boundary with a resume point), failed
// (an error ended it) or finished. seeds_done and metrics_lines are the last
// committed point: seeds fully trained and evaluated, and the lines of
// metrics.jsonl they wrote. training_hash identifies what the run trains
// (the plan without its evaluation and probes, plan::dumpTrainingIdentity);
// it is written only when known, and absent from the files of versions
// before 2026-12-07. The folder's lock and the file's reading and writing are
// runtime/results/run_folder.h; the text is here, without LibTorch, so that
// its reader is fuzzed under the sanitizers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace posc::formats {

struct RunStatus {
  std::string state = "running";  // running | interrupted | failed | finished
  long pid = 0;
  std::string plan_hash;
  std::string training_hash;  // "": not recorded (an older version)
  std::vector<uint64_t> seeds_done;
  size_t metrics_lines = 0;
  std::optional<uint64_t> seed;  // the seed in progress (interrupted/failed)
  int step = 0;                  // its last resume point
  std::string message;           // why it failed or stopped

  bool finished() const { return state == "finished"; }
  bool seedDone(uint64_t s) const;
  bool operator==(const RunStatus&) const = default;
};

// One JSON object on one line, ending in a newline.
std::string statusJson(const RunStatus& s);
// nullopt unless the text is one JSON object with every field of the
// format, each of its type and in its range (a state of the four above);
// training_hash and message may be absent.
std::optional<RunStatus> parseStatus(const std::string& text);

}  // namespace posc::formats
