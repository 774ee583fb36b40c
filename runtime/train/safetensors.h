// safetensors files: posc's checkpoints in the format the PyTorch world reads.
//
// The format (https://huggingface.co/docs/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON - for every tensor its dtype
// ("F32", "F64", ...), shape and [begin, end) byte offsets into the data that
// follows, plus an optional "__metadata__" object of strings - then the raw
// little-endian tensor bytes, row-major. The header is padded with spaces to a
// multiple of 8 bytes so that every tensor is aligned.
//
// Names follow the common GPT layout (nanoGPT's, whose Linear weights have
// torch's (out, in) orientation), so that a Python GPT loads a posc model by
// name; the table is gptName() below and docs/results.md. posc's own extras
// (score-term parameters, the null slot, absolute tables beyond the first)
// keep posc names under "posc.".
#pragma once

#include <torch/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/train/checkpoint.h"

namespace posc::train {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Writes `tensors` (moved to the CPU, contiguous) and `metadata` atomically.
void writeSafetensors(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata,
                      const std::filesystem::path& path);

struct SafetensorsFile {
  NamedTensors tensors;  // in file order
  std::map<std::string, std::string> metadata;
};

// Reads and validates a safetensors file: a header that is JSON of the
// documented shape, known dtypes, offsets inside the data and matching the
// shape. Throws std::runtime_error naming the file (and the tensor) otherwise.
SafetensorsFile readSafetensors(const std::filesystem::path& path);

// posc's parameter name -> the GPT layout's:
//   tok_emb.weight               transformer.wte.weight
//   abs_emb0.weight              transformer.wpe.weight
//   block<l>.norm1.{weight,bias} transformer.h.<l>.ln_1.{weight,bias}
//   block<l>.attn.qkv.*          transformer.h.<l>.attn.c_attn.*   (rows: q, k, v; heads contiguous)
//   block<l>.attn.out.*          transformer.h.<l>.attn.c_proj.*
//   block<l>.norm2.*             transformer.h.<l>.ln_2.*
//   block<l>.mlp.fc1.*           transformer.h.<l>.mlp.c_fc.*
//   block<l>.mlp.fc2.*           transformer.h.<l>.mlp.c_proj.*
//   norm_f.*                     transformer.ln_f.*
//   lm_head.weight               lm_head.weight                    (absent when tied to wte)
//   anything else X              posc.X
std::string gptName(const std::string& posc_name);
// The inverse of gptName, for every name it can produce.
std::optional<std::string> poscName(const std::string& gpt_name);

// The model's parameters and buffers under their GPT names.
NamedTensors gptTensors(const torch::nn::Module& model);

// A model's checkpoint as safetensors: its tensors under GPT names and, in the
// metadata, "format" = "pt" (the only value Hugging Face's loaders accept for
// PyTorch tensors), posc's own tag "posc_format" = "posc-gpt", the model's
// shape (n_layer, n_embd, n_head, n_kv_head, head_dim, mlp, norm, bias,
// qk_norm, vocab_size, tied_embeddings) and the whole resolved
// plan ("plan", as `posc emit plan` prints it), so that a Python loader needs
// nothing else. Written atomically.
void saveSafetensorsCheckpoint(const torch::nn::Module& model, const plan::ExperimentPlan& plan,
                               const std::filesystem::path& path);

// Copies the tensors of a safetensors file into `model` by the GPT names.
// A tensor of the GPT layout that the model has but the file lacks, or one of
// another shape, is an error naming it; posc's own extras (posc.*) that the
// file lacks keep their fresh initialisation (reported), as in any warm start.
WarmStartReport warmStartSafetensors(torch::nn::Module& model, const std::filesystem::path& path);

}  // namespace posc::train
