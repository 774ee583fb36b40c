// Data-parallel training across processes: the process group one `posc run`
// joins when a launcher started it as one rank of several.
//
// A launcher (torchrun --no_python, Slurm's srun with a wrapper, or a shell
// loop) sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (and usually
// LOCAL_RANK). posc then joins a c10d process group: rank 0 hosts the
// rendezvous store (c10d::TCPStore) on MASTER_ADDR:MASTER_PORT, every rank
// connects to it, and the group's collectives carry the gradients. On the CPU
// the group runs over Gloo; on CUDA (each rank on cuda:LOCAL_RANK) over NCCL
// where the build has it (a CUDA LibTorch 2.x: c10d::ProcessGroupNCCL and
// nccl.h), the tensors staying on the GPU, else over Gloo through host memory.
// Without those variables (or with WORLD_SIZE=1) posc runs exactly as a
// single process.
//
// What the trainer does with a group (train/trainer.h): every rank draws the
// same global batch from the seed's data stream and trains on its own
// contiguous slice of rows; gradients are summed with bucketed all-reduces of
// losses already divided by the global batch's answer-token count, so after
// the step every rank holds the weights one process with the whole batch
// would hold (up to the order of floating-point additions). Rank 0 alone
// writes results, checkpoints and metrics, evaluates and runs the probes.
//
// Failure: every collective runs under the group's timeout (POSC_DIST_TIMEOUT,
// seconds, default 1800). A rank that dies closes its connections, and the
// other ranks' next collective fails at once or at the timeout; that failure
// is a CollectiveError naming the rank, the world size and what failed, and
// the trainer adds the step.
//
// This header does not include c10d, Gloo or NCCL (runtime/distributed/
// process_group.cpp does, and is built only where LibTorch ships the c10d
// headers and Debian's libgloo-dev is installed; elsewhere available() is
// false and joining says so).
#pragma once

#include <torch/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace posc::dist {

// How the launcher placed this process.
struct Launch {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;
  int master_port = 0;
  std::chrono::seconds timeout{1800};
  // "rank 1 of 2"
  std::string describe() const;
};

// A launch that is inconsistent (RANK without WORLD_SIZE, a rank out of
// range, a port that is not a number, ...): the user's to fix.
struct LaunchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A collective (or joining the group) that failed: a rank died, stopped
// answering within the timeout, or could not be reached.
struct CollectiveError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The launch the environment describes, or nullopt when posc runs alone
// (no WORLD_SIZE, or WORLD_SIZE=1). Throws LaunchError.
std::optional<Launch> launchFromEnvironment();

// Whether this build can join a process group (c10d and Gloo present).
bool available();

// The backend a group whose ranks train on `device` uses in this build:
// "NCCL" on CUDA where the build has it, else "Gloo".
const char* backendFor(const torch::Device& device);

class ProcessGroup {
 public:
  // Joins the group of ranks training on `device` (backendFor(device));
  // blocks until every rank has joined or the timeout passes. Throws
  // CollectiveError (or LaunchError where !available()).
  static std::unique_ptr<ProcessGroup> join(const Launch& launch, const torch::Device& device = torch::kCPU);
  ~ProcessGroup();

  int rank() const { return launch_.rank; }
  int size() const { return launch_.world_size; }
  const Launch& launch() const { return launch_; }
  const char* backend() const;

  // Sums each tensor over the ranks, in place. Tensors are packed into
  // buckets of one dtype (at most kBucketBytes each) and the buckets'
  // all-reduces run concurrently; with Gloo, tensors on a GPU travel through
  // host memory.
  static constexpr int64_t kBucketBytes = 25 << 20;
  void allReduceSum(const std::vector<torch::Tensor>& tensors);
  // Copies rank `root`'s values of each tensor into every rank's, in place.
  void broadcast(const std::vector<torch::Tensor>& tensors, int root = 0);
  void barrier();

 private:
  explicit ProcessGroup(Launch launch);
  struct Impl;
  Launch launch_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace posc::dist
