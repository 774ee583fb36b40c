// safetensors reading and writing, and the GPT names (see safetensors.h).
#include "runtime/train/safetensors.h"

#include <torch/torch.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/formats/safetensors_layout.h"
#include "runtime/results/atomic_file.h"

namespace posc::train {

namespace {

using json = nlohmann::json;

struct DType {
  const char* name;
  torch::ScalarType type;
  size_t bytes;
};

const std::vector<DType>& dtypes() {
  static const std::vector<DType> table = {
      {"F64", torch::kDouble, 8}, {"F32", torch::kFloat, 4},  {"F16", torch::kHalf, 2},  {"BF16", torch::kBFloat16, 2},
      {"I64", torch::kLong, 8},   {"I32", torch::kInt, 4},    {"I16", torch::kShort, 2}, {"I8", torch::kChar, 1},
      {"U8", torch::kByte, 1},    {"BOOL", torch::kBool, 1},
  };
  return table;
}

// Every name of formats::safetensorsDTypes() is in the table above.
const DType& dtypeNamed(const std::string& name) {
  for (const DType& d : dtypes())
    if (name == d.name) return d;
  throw std::logic_error("safetensors: no tensor type for dtype " + name);
}

const DType& dtypeOf(torch::ScalarType t) {
  for (const DType& d : dtypes())
    if (d.type == t) return d;
  throw std::runtime_error(fmt::format("safetensors: no dtype for {}", c10::toString(t)));
}

// The GPT layout's names: a module of posc and of the GPT layout, each as a
// pattern (a layer number captured where there is one) and as a format.
struct Rename {
  std::regex posc, gpt;
  const char* posc_format;
  const char* gpt_format;
};

const std::vector<Rename>& renames() {
  static const std::vector<Rename> table = [] {
    struct Row {
      const char *posc, *gpt, *posc_format, *gpt_format;
    };
    const Row rows[] = {
        {"tok_emb", "transformer\\.wte", "tok_emb", "transformer.wte"},
        {"abs_emb0", "transformer\\.wpe", "abs_emb0", "transformer.wpe"},
        {"block(\\d+)\\.norm1", "transformer\\.h\\.(\\d+)\\.ln_1", "block{}.norm1", "transformer.h.{}.ln_1"},
        {"block(\\d+)\\.attn\\.qkv", "transformer\\.h\\.(\\d+)\\.attn\\.c_attn", "block{}.attn.qkv", "transformer.h.{}.attn.c_attn"},
        {"block(\\d+)\\.attn\\.q_norm", "transformer\\.h\\.(\\d+)\\.attn\\.q_norm", "block{}.attn.q_norm", "transformer.h.{}.attn.q_norm"},
        {"block(\\d+)\\.attn\\.k_norm", "transformer\\.h\\.(\\d+)\\.attn\\.k_norm", "block{}.attn.k_norm", "transformer.h.{}.attn.k_norm"},
        {"block(\\d+)\\.attn\\.out", "transformer\\.h\\.(\\d+)\\.attn\\.c_proj", "block{}.attn.out", "transformer.h.{}.attn.c_proj"},
        {"block(\\d+)\\.norm2", "transformer\\.h\\.(\\d+)\\.ln_2", "block{}.norm2", "transformer.h.{}.ln_2"},
        {"block(\\d+)\\.mlp\\.fc1", "transformer\\.h\\.(\\d+)\\.mlp\\.c_fc", "block{}.mlp.fc1", "transformer.h.{}.mlp.c_fc"},
        {"block(\\d+)\\.mlp\\.fc2", "transformer\\.h\\.(\\d+)\\.mlp\\.c_proj", "block{}.mlp.fc2", "transformer.h.{}.mlp.c_proj"},
        {"norm_f", "transformer\\.ln_f", "norm_f", "transformer.ln_f"},
        {"lm_head", "lm_head", "lm_head", "lm_head"},
    };
    std::vector<Rename> out;
    for (const Row& r : rows)
      out.push_back({std::regex(std::string("^") + r.posc + "\\.(weight|bias)$"),
                     std::regex(std::string("^") + r.gpt + "\\.(weight|bias)$"), r.posc_format, r.gpt_format});
    return out;
  }();
  return table;
}

// `format` with the layer of match `m` (its first group when it has two).
std::string renamed(const char* format, const std::smatch& m) {
  const std::string module = m.size() == 3 ? fmt::format(fmt::runtime(format), m[1].str()) : std::string(format);
  return module + "." + m[m.size() - 1].str();
}

std::string shapeText(at::IntArrayRef sizes) { return formats::shapeText(sizes.vec()); }

std::string readAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read '{}'", path.string()));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::string gptName(const std::string& posc_name) {
  for (const Rename& r : renames()) {
    std::smatch m;
    if (std::regex_match(posc_name, m, r.posc)) return renamed(r.gpt_format, m);
  }
  return "posc." + posc_name;
}

std::optional<std::string> poscName(const std::string& gpt_name) {
  if (gpt_name.rfind("posc.", 0) == 0) return gpt_name.substr(5);
  for (const Rename& r : renames()) {
    std::smatch m;
    if (std::regex_match(gpt_name, m, r.gpt)) return renamed(r.posc_format, m);
  }
  return std::nullopt;
}

NamedTensors gptTensors(const torch::nn::Module& model) {
  NamedTensors out;
  for (const auto& p : model.named_parameters(/*recurse=*/true)) out.emplace_back(gptName(p.key()), p.value());
  for (const auto& b : model.named_buffers(/*recurse=*/true)) out.emplace_back(gptName(b.key()), b.value());
  return out;
}

void writeSafetensors(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata,
                      const std::filesystem::path& path) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> data;
  size_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    const DType& d = dtypeOf(t.scalar_type());
    const size_t bytes = static_cast<size_t>(t.numel()) * d.bytes;
    header[name] = {{"dtype", d.name}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(t);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string file(8, '\0');
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) file[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  file += text;
  file.reserve(file.size() + offset);
  for (const torch::Tensor& t : data)
    file.append(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.numel()) * t.element_size());
  results::writeFileAtomic(path, file);
}

SafetensorsFile readSafetensors(const std::filesystem::path& path) {
  const std::string bytes = readAll(path);
  formats::SafetensorsLayout layout;
  try {
    layout = formats::parseSafetensorsLayout(bytes);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("'{}' is not a valid safetensors file: {}", path.string(), e.what()));
  }
  SafetensorsFile out;
  out.metadata = std::move(layout.metadata);
  for (const formats::TensorLayout& t : layout.tensors) {
    const DType& d = dtypeNamed(t.dtype->name);
    torch::Tensor tensor = torch::empty(t.shape, torch::TensorOptions().dtype(d.type));
    if (t.end > t.begin) std::memcpy(tensor.data_ptr(), bytes.data() + layout.data_begin + t.begin, t.end - t.begin);
    out.tensors.emplace_back(t.name, tensor);
  }
  return out;
}

void saveSafetensorsCheckpoint(const torch::nn::Module& model, const plan::ExperimentPlan& plan,
                               const std::filesystem::path& path) {
  const NamedTensors tensors = gptTensors(model);
  int64_t vocab = 0;
  for (const auto& [name, t] : tensors)
    if (name == "transformer.wte.weight") vocab = t.size(0);
  const plan::ModelPlan& m = plan.model;
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"},  // what Hugging Face's loaders require
      {"posc_format", "posc-gpt"},
      {"n_layer", std::to_string(m.layers)},
      {"n_embd", std::to_string(m.width)},
      {"n_head", std::to_string(m.heads)},
      {"n_kv_head", std::to_string(m.kvHeads())},
      {"head_dim", std::to_string(m.head_dim)},
      {"mlp", plan::mlpName(m.mlp)},
      {"norm", plan::normName(m.norm)},
      {"bias", m.bias ? "true" : "false"},
      {"qk_norm", m.qk_norm ? "true" : "false"},
      {"vocab_size", std::to_string(vocab)},
      {"tied_embeddings", m.tied_embeddings ? "true" : "false"},
      {"plan", plan::dumpPlan(plan)},
  };
  writeSafetensors(tensors, metadata, path);
}

WarmStartReport warmStartSafetensors(torch::nn::Module& model, const std::filesystem::path& path) {
  const SafetensorsFile file = readSafetensors(path);
  std::map<std::string, torch::Tensor> by_name(file.tensors.begin(), file.tensors.end());
  WarmStartReport report;
  std::set<std::string> taken;
  auto take = [&](const std::string& name, torch::Tensor& target, bool parameter) {
    const std::string gpt = gptName(name);
    auto it = by_name.find(gpt);
    if (it == by_name.end()) {
      if (gpt.rfind("posc.", 0) != 0)
        throw std::runtime_error(fmt::format("'{}' has no tensor '{}' (posc's {}, shape {})", path.string(), gpt, name,
                                             shapeText(target.sizes())));
      report.kept_fresh.push_back(fmt::format("{} (absent)", name));
      return;
    }
    if (it->second.sizes() != target.sizes())
      throw std::runtime_error(fmt::format("'{}': tensor '{}' has shape {}; the model's {} has {}", path.string(), gpt,
                                           shapeText(it->second.sizes()), name, shapeText(target.sizes())));
    // Trained values must be finite; a buffer (a fixed score parameter) may hold inf on purpose.
    if (auto bad = parameter ? nonFiniteValues(it->second) : std::nullopt)
      throw std::runtime_error(fmt::format("'{}': tensor '{}' holds {} non-finite value(s) (NaN or infinite); it comes "
                                           "from a run that diverged or a damaged file",
                                           path.string(), gpt, *bad));
    torch::NoGradGuard no_grad;
    target.copy_(it->second);
    taken.insert(gpt);
    report.copied.push_back(name);
  };
  for (auto& p : model.named_parameters(/*recurse=*/true)) take(p.key(), p.value(), true);
  for (auto& b : model.named_buffers(/*recurse=*/true)) take(b.key(), b.value(), false);
  for (const auto& [name, t] : file.tensors)
    if (!taken.count(name)) report.unused.push_back(name);
  return report;
}

}  // namespace posc::train
