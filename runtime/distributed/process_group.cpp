// The c10d process group over Gloo, or NCCL for ranks on CUDA where the
// build has it (POSC_WITH_NCCL: a CUDA LibTorch 2.x); see process_group.h.
#include "runtime/distributed/process_group.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>
#ifdef POSC_WITH_NCCL
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cstdlib>
#include <map>

#include <fmt/format.h>

namespace posc::dist {

bool available() { return true; }

const char* backendFor(const torch::Device& device) {
#ifdef POSC_WITH_NCCL
  if (device.is_cuda()) return "NCCL";
#endif
  (void)device;
  return "Gloo";
}

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;  // the CPU's, and CUDA's without NCCL
#ifdef POSC_WITH_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // CUDA's: tensors stay on the rank's GPU
#endif
  torch::Device device = torch::kCPU;

  bool onDevice() const {
#ifdef POSC_WITH_NCCL
    return static_cast<bool>(nccl);
#else
    return false;
#endif
  }
  // Calls f with the group's backend (both have c10d's collective API).
  template <typename F>
  void with(F&& f) {
#ifdef POSC_WITH_NCCL
    if (nccl) {
      const c10::cuda::CUDAGuard guard(device);
      f(*nccl);
      return;
    }
#endif
    f(*gloo);
  }
  // Where a collective's buffer lives: the GPU with NCCL, else the host.
  torch::Tensor staged(const torch::Tensor& t) const { return onDevice() ? t : t.to(torch::kCPU); }
};

namespace {

bool isLoopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

// The network device Gloo binds: GLOO_SOCKET_IFNAME as PyTorch reads it, the
// loopback address when the rendezvous is on this machine, else the address
// this host's name resolves to.
std::shared_ptr<::gloo::transport::Device> glooDevice(const Launch& l) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (isLoopback(l.master_addr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// Runs a collective, turning any failure into a CollectiveError that says
// which rank saw it and what it was doing.
template <typename F>
void guarded(const Launch& l, const char* what, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    std::string detail = e.what();
    if (const size_t nl = detail.find('\n'); nl != std::string::npos) detail.resize(nl);  // drop c10's backtrace
    throw CollectiveError(fmt::format("{}: {} failed (a rank died, or did not answer within {} s, POSC_DIST_TIMEOUT): {}",
                                      l.describe(), what, l.timeout.count(), detail));
  }
}

}  // namespace

ProcessGroup::ProcessGroup(Launch launch) : launch_(std::move(launch)), impl_(std::make_unique<Impl>()) {}
ProcessGroup::~ProcessGroup() = default;

const char* ProcessGroup::backend() const { return backendFor(impl_->device); }

std::unique_ptr<ProcessGroup> ProcessGroup::join(const Launch& launch, const torch::Device& device) {
  std::unique_ptr<ProcessGroup> pg(new ProcessGroup(launch));
  pg->impl_->device = device;
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(launch.timeout);
  guarded(launch,
          fmt::format("joining the process group at {}:{}", launch.master_addr, launch.master_port).c_str(), [&] {
            c10d::TCPStoreOptions so;
            so.port = static_cast<std::uint16_t>(launch.master_port);
            so.isServer = launch.rank == 0;
            so.numWorkers = static_cast<size_t>(launch.world_size);
            so.waitWorkers = true;
            so.timeout = timeout;
            pg->impl_->store = c10::make_intrusive<c10d::TCPStore>(launch.master_addr, so);
#ifdef POSC_WITH_NCCL
            if (device.is_cuda()) {
              auto options = c10d::ProcessGroupNCCL::Options::create();
              options->timeout = timeout;
              pg->impl_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(pg->impl_->store, launch.rank,
                                                                            launch.world_size, options);
              return;
            }
#endif
            auto options = c10d::ProcessGroupGloo::Options::create(timeout);
            options->devices.push_back(glooDevice(launch));
            pg->impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(pg->impl_->store, launch.rank,
                                                                          launch.world_size, options);
          });
  return pg;
}

void ProcessGroup::allReduceSum(const std::vector<torch::Tensor>& tensors) {
  // Buckets: consecutive tensors of one dtype, up to kBucketBytes.
  struct Bucket {
    std::vector<size_t> members;
    torch::Tensor flat;
  };
  std::vector<Bucket> buckets;
  std::map<torch::ScalarType, size_t> open;  // dtype -> its bucket being filled
  std::map<torch::ScalarType, int64_t> open_bytes;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto dtype = tensors[i].scalar_type();
    const int64_t bytes = tensors[i].numel() * tensors[i].element_size();
    auto it = open.find(dtype);
    if (it == open.end() || open_bytes[dtype] + bytes > kBucketBytes) {
      buckets.push_back({});
      it = open.insert_or_assign(dtype, buckets.size() - 1).first;
      open_bytes[dtype] = 0;
    }
    buckets[it->second].members.push_back(i);
    open_bytes[dtype] += bytes;
  }
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  guarded(launch_, "an all-reduce of the gradients", [&] {
    for (Bucket& b : buckets) {
      std::vector<torch::Tensor> parts;
      for (size_t i : b.members) parts.push_back(impl_->staged(tensors[i].detach().reshape({-1})));
      b.flat = torch::cat(parts);
      std::vector<torch::Tensor> io{b.flat};
      impl_->with([&](auto& group) { works.push_back(group.allreduce(io)); });
    }
    for (auto& w : works) w->wait();
  });
  torch::NoGradGuard no_grad;
  for (Bucket& b : buckets) {
    int64_t offset = 0;
    for (size_t i : b.members) {
      const torch::Tensor& t = tensors[i];
      t.copy_(b.flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

void ProcessGroup::broadcast(const std::vector<torch::Tensor>& tensors, int root) {
  guarded(launch_, "a broadcast of the weights", [&] {
    torch::NoGradGuard no_grad;
    for (const torch::Tensor& t : tensors) {
      std::vector<torch::Tensor> io{impl_->staged(t.detach()).contiguous()};
      c10d::BroadcastOptions o;
      o.rootRank = root;
      impl_->with([&](auto& group) { group.broadcast(io, o)->wait(); });
      t.copy_(io[0]);
    }
  });
}

void ProcessGroup::barrier() {
  guarded(launch_, "a barrier", [&] {
    c10d::BarrierOptions o;
    if (impl_->onDevice()) o.device_ids = {impl_->device.index()};  // NCCL's barrier runs on this rank's GPU
    impl_->with([&](auto& group) { group.barrier(o)->wait(); });
  });
}

}  // namespace posc::dist
