// Stop requests and run ends as bytes on a pipe; see stop_signals.h.
#include "runtime/study/stop_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace posc::study {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
constexpr int kCount = sizeof kSignals / sizeof kSignals[0];

std::atomic<int> request_count{0};
std::atomic<int> last_request{0};
int wake[2] = {-1, -1};  // read end, write end
struct sigaction previous[kCount];
bool installed = false;

void onSignal(int signal) {
  const int saved_errno = errno;
  if (signal != SIGCHLD) {
    last_request.store(signal);
    request_count.fetch_add(1);
  }
  const char byte = 1;
  ssize_t ignored = ::write(wake[1], &byte, 1);  // a full pipe already says "look"
  (void)ignored;
  errno = saved_errno;
}

}  // namespace

StopSignals::StopSignals() {
  if (installed) throw std::logic_error("posc: internal error: two StopSignals at once");
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0)
    throw std::runtime_error(std::string("cannot make the study's signal pipe: ") + std::strerror(errno));
  request_count = 0;
  last_request = 0;
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  for (int i = 0; i < kCount; ++i) ::sigaction(kSignals[i], &action, &previous[i]);
  installed = true;
}

StopSignals::~StopSignals() {
  for (int i = 0; i < kCount; ++i) ::sigaction(kSignals[i], &previous[i], nullptr);
  ::close(wake[0]);
  ::close(wake[1]);
  wake[0] = wake[1] = -1;
  installed = false;
}

void StopSignals::waitForSignal(int timeout_ms) const {
  pollfd p{wake[0], POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return;  // timeout, or EINTR: the caller looks again either way
  char drain[64];
  while (::read(wake[0], drain, sizeof drain) > 0) {
  }
}

int StopSignals::requests() const { return request_count.load(); }

int StopSignals::lastRequest() const { return last_request.load(); }

const char* stopSignalName(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
  }
  return "a signal";
}

}  // namespace posc::study
