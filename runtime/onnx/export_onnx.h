// ONNX export of a hand-set model: the same forward as runtime/handset, as
// an ONNX graph (opset 13) a reader would recognise as a transformer.
//
//   input  tokens int64 [batch, sequence]
//   output logits double [batch, sequence, vocab]
//
// Gather (embedding), Pad (the residual widening between layers), MatMul/Add
// (projections), Reshape/Transpose (heads), an ALiBi term built from Range
// over the sequence, Where (causal mask), softmax1 written out as
// ReduceMax/Exp/ReduceSum/Div, Relu * up (ReGLU), MatMul (output head).
// Absent weight tensors are written as dense zeros, so every layer has the
// same operators. The model is checked with ONNX's checker before writing.
#pragma once

#include <string>

#include "compiler/plan/plan.h"

namespace posc::onnx_export {

// False in a build without ONNX (POSC_WITH_ONNX off or libonnx-dev absent),
// where exportModel throws.
bool available();

// The serialised ModelProto. Throws std::runtime_error if ONNX's checker
// rejects the graph (an internal error).
std::string exportModel(const plan::ExperimentPlan& plan, const std::string& producer_version);

}  // namespace posc::onnx_export
