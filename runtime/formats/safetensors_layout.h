// The byte layout of a safetensors file, read without LibTorch.
//
// The format (https://huggingface.co/docs/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON - for every tensor its dtype
// ("F32", "F64", ...), shape and [begin, end) byte offsets into the data that
// follows, plus an optional "__metadata__" object of strings - then the raw
// tensor bytes. This file validates the header against the bytes it
// describes; runtime/train/safetensors.h turns the layout into tensors. Kept
// apart so that the reader of untrusted files is fuzzed under the sanitizers
// (tests/fuzz/run_folder_fuzzer.cpp), which build without LibTorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace posc::formats {

// The element types posc reads and writes, by safetensors' name.
struct SafetensorsDType {
  const char* name;  // "F32"
  size_t bytes;      // 4
};
const std::vector<SafetensorsDType>& safetensorsDTypes();

struct TensorLayout {
  std::string name;
  const SafetensorsDType* dtype = nullptr;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // offsets into the data, which starts at SafetensorsLayout::data_begin
};

struct SafetensorsLayout {
  std::vector<TensorLayout> tensors;  // in header order
  std::map<std::string, std::string> metadata;
  size_t data_begin = 0;  // 8 + the header's length
};

// Validates `bytes` as a safetensors file: a header of the documented shape,
// known dtypes, shapes of at most 2^40 elements, offsets inside the data that
// span exactly the shape's bytes. Throws std::runtime_error saying what is
// wrong (and with which tensor); the caller names the file.
SafetensorsLayout parseSafetensorsLayout(std::string_view bytes);

// "[2, 3]"
std::string shapeText(const std::vector<int64_t>& shape);

}  // namespace posc::formats
