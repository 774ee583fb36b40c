// Task batches as tensors: see runtime/model/batch.h.
#include "runtime/model/batch.h"

#include <cstring>

#include "compiler/plan/plan.h"

namespace posc::model {

BatchTensors toTensors(const task::Batch& batch, torch::Device device) {
  const int64_t B = batch.batch, L = batch.length;
  auto longs = torch::TensorOptions().dtype(torch::kInt64);
  BatchTensors t;
  t.tokens = torch::from_blob(const_cast<int64_t*>(batch.tokens.data()), {B, L}, longs).clone();
  t.targets = torch::from_blob(const_cast<int64_t*>(batch.targets.data()), {B, L}, longs).clone();
  t.loss_mask = torch::from_blob(const_cast<uint8_t*>(batch.loss_mask.data()), {B, L},
                                 torch::TensorOptions().dtype(torch::kUInt8))
                    .to(torch::kBool);
  t.channels = torch::empty({plan::kChannelCount, B, L}, longs);
  for (int c = 0; c < plan::kChannelCount; ++c)
    std::memcpy(t.channels[c].data_ptr<int64_t>(), batch.channels[static_cast<size_t>(c)].data(),
                sizeof(int64_t) * static_cast<size_t>(B * L));
  if (device != torch::Device(torch::kCPU)) {
    t.tokens = t.tokens.to(device);
    t.targets = t.targets.to(device);
    t.loss_mask = t.loss_mask.to(device);
    t.channels = t.channels.to(device);
  }
  return t;
}

BatchTensors sliceRows(const BatchTensors& batch, int64_t begin, int64_t count) {
  BatchTensors t;
  t.tokens = batch.tokens.narrow(0, begin, count).contiguous();
  t.targets = batch.targets.narrow(0, begin, count).contiguous();
  t.loss_mask = batch.loss_mask.narrow(0, begin, count).contiguous();
  t.channels = batch.channels.narrow(1, begin, count).contiguous();
  return t;
}

}  // namespace posc::model
