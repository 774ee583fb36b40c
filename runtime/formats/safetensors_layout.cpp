// Validation of a safetensors header against its bytes; see safetensors_layout.h.
#include "runtime/formats/safetensors_layout.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace posc::formats {

using json = nlohmann::json;

const std::vector<SafetensorsDType>& safetensorsDTypes() {
  static const std::vector<SafetensorsDType> table = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1},
  };
  return table;
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsLayout parseSafetensorsLayout(std::string_view bytes) {
  auto fail = [](const std::string& why) { return std::runtime_error(why); };
  if (bytes.size() < 8) throw fail("shorter than its 8-byte header length");
  uint64_t n = 0;
  for (size_t i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (n > bytes.size() - 8) throw fail(fmt::format("its header claims {} bytes, the file has {}", n, bytes.size() - 8));
  const std::string_view text = bytes.substr(8, n);
  const json header = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) throw fail("its header is not JSON");
  if (!header.is_object()) throw fail("its header is not a JSON object");
  SafetensorsLayout out;
  out.data_begin = 8 + n;
  const size_t data_size = bytes.size() - out.data_begin;
  for (const auto& item : header.items()) {
    const std::string& name = item.key();  // a plain reference: lambdas below capture it
    const json& entry = item.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) throw fail("__metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) throw fail(fmt::format("metadata '{}' is not a string", k));
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& why) { return fail(fmt::format("tensor '{}': {}", name, why)); };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
      throw bad("needs dtype, shape and data_offsets");
    TensorLayout t;
    t.name = name;
    const json& dt = entry["dtype"];
    if (dt.is_string())
      for (const SafetensorsDType& x : safetensorsDTypes())
        if (dt.get<std::string>() == x.name) t.dtype = &x;
    if (!t.dtype) throw bad(fmt::format("unknown dtype {}", dt.dump()));
    uint64_t count = 1;
    if (!entry["shape"].is_array()) throw bad("shape is not a list");
    for (const json& s : entry["shape"]) {
      if (!s.is_number_unsigned()) throw bad("shape holds something other than sizes");
      const uint64_t v = s.get<uint64_t>();
      if (v > (uint64_t{1} << 40) || (v > 0 && count > (uint64_t{1} << 40) / v)) throw bad("shape is too large");
      count *= v;
      t.shape.push_back(static_cast<int64_t>(v));
    }
    const json& off = entry["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw bad("data_offsets is not two offsets");
    t.begin = off[0].get<uint64_t>();
    t.end = off[1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_size)
      throw bad(fmt::format("bytes {}..{} lie outside the {} bytes of data", t.begin, t.end, data_size));
    if (t.end - t.begin != count * t.dtype->bytes)
      throw bad(fmt::format("shape {} of {} needs {} bytes, its offsets span {}", shapeText(t.shape), t.dtype->name,
                            count * t.dtype->bytes, t.end - t.begin));
    out.tensors.push_back(std::move(t));
  }
  return out;
}

}  // namespace posc::formats
