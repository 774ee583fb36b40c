// A build without c10d's headers or Debian's libgloo-dev: posc runs as a
// single process, and a launch of several ranks is refused with the reason.
#include "runtime/distributed/process_group.h"

namespace posc::dist {

bool available() { return false; }
const char* backendFor(const torch::Device&) { return "none"; }

struct ProcessGroup::Impl {};

ProcessGroup::ProcessGroup(Launch launch) : launch_(std::move(launch)) {}
ProcessGroup::~ProcessGroup() = default;

const char* ProcessGroup::backend() const { return "none"; }

std::unique_ptr<ProcessGroup> ProcessGroup::join(const Launch& launch, const torch::Device&) {
  throw LaunchError(launch.describe() +
                    ": this posc was built without data-parallel training (LibTorch's c10d headers or Debian's "
                    "libgloo-dev were missing at build time); install libgloo-dev and rebuild, or run one process");
}

void ProcessGroup::allReduceSum(const std::vector<torch::Tensor>&) {}
void ProcessGroup::broadcast(const std::vector<torch::Tensor>&, int) {}
void ProcessGroup::barrier() {}

}  // namespace posc::dist
