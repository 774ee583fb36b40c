// Model checkpoints: saving, strict loading and tolerant warm starts.
//
// The file format is LibTorch's module archive (the one torch::save(module)
// writes: one nested archive per submodule), with every tensor moved to the
// CPU first so that a checkpoint written on a GPU loads anywhere. Files are
// written atomically (see results/atomic_file.h).
//
// A warm start copies every parameter and buffer whose name and shape match
// the checkpoint; everything else keeps its fresh initialisation. This lets an
// experiment add a component (say a learned score parameter) on top of a
// trained model: the new parameter starts at its declared init, the rest of
// the network at the trained values.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "runtime/model/gpt.h"

namespace posc::train {

// Writes the model's parameters and buffers to `path` atomically.
void saveCheckpoint(const torch::nn::Module& model, const std::filesystem::path& path);

struct WarmStartReport {
  std::vector<std::string> copied;      // dotted names, e.g. "blocks.0.attn.qkv.weight"
  std::vector<std::string> kept_fresh;  // absent from the checkpoint: "name (absent)"
  std::vector<std::string> mismatched;  // "name (shape [..] in checkpoint, [..] here)"
  std::vector<std::string> unused;      // tensors in the checkpoint that no parameter took
};

// Copies the checkpoint's tensors at `path` into `model` (values converted
// to the parameter's dtype and device). A tensor the checkpoint lacks (a
// component the new experiment adds, such as a sink) keeps its fresh
// initialisation. Throws std::runtime_error, and copies nothing, if the file
// cannot be read or a tensor has another shape there (another width, head
// count or vocabulary: another model, whose partial copy would train on
// silently).
WarmStartReport warmStart(torch::nn::Module& model, const std::filesystem::path& path);

// Loads a checkpoint that must match exactly (every parameter and buffer
// present with the same shape); throws std::runtime_error otherwise.
void loadCheckpoint(torch::nn::Module& model, const std::filesystem::path& path);

// The module's tensors into an archive, and back with an exact match
// required (the formats saveCheckpoint and loadCheckpoint use; the resume
// state nests one such archive). `what` names the source in errors.
void writeModule(const torch::nn::Module& model, torch::serialize::OutputArchive& archive);
void readModuleStrict(torch::nn::Module& model, torch::serialize::InputArchive& archive, const std::string& what);

// The number of NaN or infinite values of a floating-point tensor, if any.
std::optional<int64_t> nonFiniteValues(const torch::Tensor& t);

// A few human-readable lines describing a warm start, for stderr.
std::string describe(const WarmStartReport& report, const std::filesystem::path& path);

}  // namespace posc::train
