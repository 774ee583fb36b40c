// libFuzzer harness of the REPL's line evaluator: the input is a session,
// one submitted input per line (definitions carry over to later lines), as
// `posc repl` would receive them. Files that :svg, :csv and :ridge would
// write are discarded, sweeps are capped at 1e4 points (the session's 1e8
// takes tens of seconds under the sanitizers: the fuzzer would spend its time
// evaluating cosines; the cap's check is the same code) and :fit at 256 terms
// (2,000 take seconds there and made up half the time of the corpus; 256 is
// the study's harmonic ladder, so the fit's code runs at that size). Inputs
// that use :ridge are skipped: its four fixed fits (up to 2,000 terms) take
// seconds under the sanitizers and cut the rate fourfold, and its arguments
// are checked by the same argument binder as :fit's, which is fuzzed.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "tools/posc/repl/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (std::string_view(reinterpret_cast<const char*>(data), size).find(":ridge") != std::string_view::npos) return -1;
  posc::repl::Session session([](const std::string&, const std::string&) {});
  session.setMaxSweepPoints(1e4);
  session.setMaxFitTerms(256);
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::string line, pending;
  int first_line = 1, line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    pending += pending.empty() ? line : "\n" + line;
    if (posc::repl::Session::needsMoreInput(pending)) continue;
    const posc::repl::Reply reply = session.submit(pending, "<fuzz>", first_line);
    pending.clear();
    first_line = line_number + 1;
    if (reply.quit) return 0;
  }
  if (!pending.empty()) (void)session.submit(pending, "<fuzz>", first_line);
  return 0;
}
