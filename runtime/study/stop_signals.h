// Signals while a study's runs are going. SIGINT, SIGTERM and SIGHUP are
// requests to stop the study: instead of ending the process (which would
// leave its runs going as orphans and record nothing), the handler notes the
// request and the study passes it on to its runs, waits for them and records
// each one (executor.cpp). SIGCHLD says a run has ended.
//
// Each handler only notes the signal and writes a byte to a pipe, so the
// study waits for "a run ended or a stop was asked" in one poll() with no
// window in which a signal is missed. One StopSignals at a time.
#pragma once

namespace posc::study {

class StopSignals {
 public:
  // Installs the handlers; the previous ones come back when it is destroyed.
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Returns once one of the signals has arrived since the last call, or
  // after `timeout_ms`.
  void waitForSignal(int timeout_ms) const;

  // Stop requests received so far.
  int requests() const;
  // The signal of the last request (SIGINT, SIGTERM or SIGHUP); 0 if none.
  int lastRequest() const;
};

// "SIGINT", "SIGTERM", "SIGHUP" or "a signal".
const char* stopSignalName(int signal);

}  // namespace posc::study
