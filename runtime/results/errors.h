// The two ways a run ends early that are not bugs, shared by every stage of
// the runtime (training, evaluation, the results folder, hand-set models) and
// told apart by the CLI: a UserError is printed as a message with exit 2; an
// Interrupted run says how to continue and exits 128 + the signal.
//
// They live at the bottom of the runtime (beside the results files, which
// every stage writes) so that no stage includes the run pipeline above it to
// throw one.
#pragma once

#include <stdexcept>
#include <string>

namespace posc::runtime {

// An error the user can fix (no CUDA device, missing warm-start checkpoint,
// unwritable folder). The CLI prints its message and exits with 2.
struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A run stopped by SIGINT or SIGTERM at a step boundary after writing its
// resume point; the CLI says how to continue and exits with 128 + signal.
struct Interrupted : std::runtime_error {
  Interrupted(const std::string& what, int signal, int step)
      : std::runtime_error(what), signal(signal), step(step) {}
  int signal;
  int step;  // the last step done (its resume point)
};

}  // namespace posc::runtime
