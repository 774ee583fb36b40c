// Numeric precision of a model, shared by training, evaluation and the probes.
//
// Bf16Mixed keeps parameters and optimiser state in float32 and runs the
// forward pass under autocast (matrix products in bfloat16). AutocastGuard
// switches autocast on for one device type for its lifetime and restores the
// previous state afterwards, so nested or repeated use is safe. The autocast
// API was reorganised in LibTorch 2.4 (per-device-type functions); both forms
// are handled here so the rest of the runtime does not care.
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <torch/version.h>

#include "compiler/plan/plan.h"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define POSC_AUTOCAST_PER_DEVICE_API 1
#else
#define POSC_AUTOCAST_PER_DEVICE_API 0
#endif

namespace posc::model {

// The dtype of model parameters for a precision.
inline c10::ScalarType parameterDtype(plan::Precision p) {
  return p == plan::Precision::F64 ? c10::ScalarType::Double : c10::ScalarType::Float;
}

// Whether autocast is on for a device type (CPU or CUDA).
inline bool autocastEnabled(c10::DeviceType device) {
#if POSC_AUTOCAST_PER_DEVICE_API
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

class AutocastGuard {
 public:
  // Does nothing unless `enable`; only CPU and CUDA are supported device types.
  AutocastGuard(bool enable, c10::DeviceType device) : active_(enable), device_(device) {
    if (!active_) return;
    if (device_ != c10::DeviceType::CPU && device_ != c10::DeviceType::CUDA) {
      active_ = false;
      return;
    }
    prev_enabled_ = autocastEnabled(device_);
    prev_dtype_ = dtype();
    setEnabled(true);
    setDtype(c10::ScalarType::BFloat16);
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (!active_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    setEnabled(prev_enabled_);
    setDtype(prev_dtype_);
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
#if POSC_AUTOCAST_PER_DEVICE_API
  void setEnabled(bool on) const { at::autocast::set_autocast_enabled(device_, on); }
  c10::ScalarType dtype() const { return at::autocast::get_autocast_dtype(device_); }
  void setDtype(c10::ScalarType t) const { at::autocast::set_autocast_dtype(device_, t); }
#else
  bool isCpu() const { return device_ == c10::DeviceType::CPU; }
  void setEnabled(bool on) const {
    if (isCpu()) at::autocast::set_cpu_enabled(on);
    else at::autocast::set_enabled(on);
  }
  c10::ScalarType dtype() const {
    return isCpu() ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
  }
  void setDtype(c10::ScalarType t) const {
    if (isCpu()) at::autocast::set_autocast_cpu_dtype(t);
    else at::autocast::set_autocast_gpu_dtype(t);
  }
#endif

  bool active_ = false;
  c10::DeviceType device_;
  bool prev_enabled_ = false;
  c10::ScalarType prev_dtype_ = c10::ScalarType::BFloat16;
};

}  // namespace posc::model
