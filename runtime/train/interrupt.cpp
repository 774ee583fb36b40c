// Signal handlers for graceful stops; see interrupt.h.
#include "runtime/train/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace posc::train {
namespace {

std::atomic<int> requested{0};
struct sigaction previous_int, previous_term;

void onSignal(int signal) {
  if (requested.exchange(signal) != 0) {
    // A second signal: stop now, by the default action.
    ::signal(signal, SIG_DFL);
    ::raise(signal);
    return;
  }
  static const char message[] =
      "\nposc: stopping at the next step boundary to write a resume point (send the signal again to stop now)\n";
  ssize_t ignored = ::write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
}

}  // namespace

StopOnSignals::StopOnSignals() {
  requested = 0;
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, &previous_int);
  ::sigaction(SIGTERM, &action, &previous_term);
}

StopOnSignals::~StopOnSignals() {
  ::sigaction(SIGINT, &previous_int, nullptr);
  ::sigaction(SIGTERM, &previous_term, nullptr);
}

int stopRequested() { return requested.load(); }

const char* signalName(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "a signal";
}

}  // namespace posc::train
