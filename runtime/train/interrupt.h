// SIGINT and SIGTERM during a run. The first one asks training to stop at
// the next step boundary, where it writes a resume point and says how to
// continue; a second one ends the process at once (the last resume point
// still holds). Nothing else happens inside the handler.
#pragma once

namespace posc::train {

// Installs the handlers for its lifetime and restores the previous ones.
class StopOnSignals {
 public:
  StopOnSignals();
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;
};

// The signal that asked the run to stop (SIGINT or SIGTERM), or 0.
int stopRequested();

// "SIGINT", "SIGTERM" or "signal N".
const char* signalName(int signal);

}  // namespace posc::train
