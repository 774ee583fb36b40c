// ONNX export in a build without ONNX (POSC_WITH_ONNX off, or libonnx-dev
// absent): it says so.
#include <stdexcept>

#include "runtime/onnx/export_onnx.h"

namespace posc::onnx_export {

bool available() { return false; }

std::string exportModel(const plan::ExperimentPlan&, const std::string&) {
  throw std::runtime_error("ONNX export is unavailable: posc was built without ONNX (libonnx-dev)");
}

}  // namespace posc::onnx_export
