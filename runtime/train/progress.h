// What a training run shows while it runs: the step, the loss, the learning
// rate, tokens/s and the time left, on stderr. On a terminal one line is
// redrawn in place (a bar); elsewhere (a log file, a study's run.log) a plain
// line is printed at every log point, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace posc::train {

enum class ProgressMode { None, Lines, Bar };

// "1h05m", "3m20s", "42s"; "?" for a negative or unknown time.
std::string formatDuration(double seconds);
// "1.23M", "4.8k", "950" tokens per second.
std::string formatRate(double tokens_per_s);

class ProgressReporter {
 public:
  ProgressReporter(ProgressMode mode, uint64_t seed, int steps) : mode_(mode), seed_(seed), steps_(steps) {}

  // After every step; redraws the bar at most a few times per second.
  void tick(int done, double lr, double eta_s, bool force = false);
  // At every log point.
  void log(int done, double loss, double lr, double tokens_per_s, double eta_s);
  // Before anything else is printed (evaluation, checkpoint messages, the end).
  void breakLine();

 private:
  ProgressMode mode_;
  uint64_t seed_;
  int steps_;
  std::chrono::steady_clock::time_point last_draw_{};
  double loss_ = 0, rate_ = 0;
  bool has_loss_ = false;
  bool drawn_ = false;
};

}  // namespace posc::train
