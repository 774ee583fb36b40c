// Checkpoint save / load / warm start; see checkpoint.h.
#include "runtime/train/checkpoint.h"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/results/atomic_file.h"

namespace posc::train {

std::optional<int64_t> nonFiniteValues(const torch::Tensor& t) {
  if (!t.is_floating_point()) return std::nullopt;
  const int64_t bad = t.numel() - torch::isfinite(t).sum().item<int64_t>();
  return bad > 0 ? std::optional<int64_t>(bad) : std::nullopt;
}

namespace {

void saveModule(const torch::nn::Module& module, torch::serialize::OutputArchive& archive) {
  for (const auto& p : module.named_parameters(/*recurse=*/false))
    archive.write(p.key(), p.value().detach().to(torch::kCPU), /*is_buffer=*/false);
  for (const auto& b : module.named_buffers(/*recurse=*/false))
    archive.write(b.key(), b.value().detach().to(torch::kCPU), /*is_buffer=*/true);
  for (const auto& child : module.named_children()) {
    torch::serialize::OutputArchive child_archive(archive.compilation_unit());
    saveModule(*child.value(), child_archive);
    archive.write(child.key(), child_archive);
  }
}

std::string shapeText(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? "," : "") + std::to_string(t.size(i));
  return s + "]";
}

void markFresh(torch::nn::Module& module, const std::string& prefix, const char* why,
               WarmStartReport& report) {
  for (const auto& p : module.named_parameters(/*recurse=*/true))
    report.kept_fresh.push_back(fmt::format("{}{} ({})", prefix, p.key(), why));
  for (const auto& b : module.named_buffers(/*recurse=*/true))
    report.kept_fresh.push_back(fmt::format("{}{} ({})", prefix, b.key(), why));
}

// What a checkpoint gives a module: the report, and the copies to make once
// every tensor has been matched (none when one does not match).
struct Loading {
  struct Copy {
    torch::Tensor target, source;
    bool parameter = false;  // trained; a buffer (a fixed score parameter) may hold inf on purpose
  };
  WarmStartReport report;
  std::vector<Copy> copies;  // in report.copied's order

  // Copies, after checking that every trained value is finite: a model with
  // NaN weights would fail later with scores blamed on the score formula.
  void apply(const std::string& what) {
    for (size_t i = 0; i < copies.size(); ++i)
      if (auto bad = copies[i].parameter ? nonFiniteValues(copies[i].source) : std::nullopt)
        throw std::runtime_error(fmt::format("{}: tensor '{}' holds {} non-finite value(s) (NaN or infinite); it "
                                             "comes from a run that diverged or a damaged file",
                                             what, report.copied[i], *bad));
    torch::NoGradGuard no_grad;
    for (Copy& c : copies) c.target.copy_(c.source);
  }
};

void takeTensor(const std::string& key, torch::Tensor& target, bool parameter, torch::serialize::InputArchive& archive,
                const std::string& prefix, Loading& loading) {
  WarmStartReport& report = loading.report;
  c10::IValue value;
  if (!archive.try_read(key, value) || !value.isTensor()) {
    report.kept_fresh.push_back(fmt::format("{}{} (absent)", prefix, key));
    return;
  }
  torch::Tensor source = value.toTensor();
  if (source.sizes() != target.sizes()) {
    report.mismatched.push_back(
        fmt::format("{}{} (shape {} in checkpoint, {} here)", prefix, key, shapeText(source), shapeText(target)));
    return;
  }
  loading.copies.push_back({target, source, parameter});
  report.copied.push_back(prefix + key);
}

void loadModule(torch::nn::Module& module, torch::serialize::InputArchive& archive, const std::string& prefix,
                Loading& loading) {
  WarmStartReport& report = loading.report;
  std::set<std::string> known;
  for (auto& p : module.named_parameters(/*recurse=*/false)) {
    known.insert(p.key());
    takeTensor(p.key(), p.value(), /*parameter=*/true, archive, prefix, loading);
  }
  for (auto& b : module.named_buffers(/*recurse=*/false)) {
    known.insert(b.key());
    takeTensor(b.key(), b.value(), /*parameter=*/false, archive, prefix, loading);
  }
  for (const auto& child : module.named_children()) {
    known.insert(child.key());
    torch::serialize::InputArchive child_archive;
    if (archive.try_read(child.key(), child_archive)) {
      loadModule(*child.value(), child_archive, prefix + child.key() + ".", loading);
    } else {
      markFresh(*child.value(), prefix + child.key() + ".", "absent", report);
    }
  }
  for (const auto& key : archive.keys()) {
    if (known.count(key) || key == "training") continue;
    report.unused.push_back(prefix + key);
  }
}

std::string joinLimited(const std::vector<std::string>& items, size_t limit) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < limit; ++i) out += fmt::format("\n    {}", items[i]);
  if (items.size() > limit) out += fmt::format("\n    ... and {} more", items.size() - limit);
  return out;
}

}  // namespace

void writeModule(const torch::nn::Module& model, torch::serialize::OutputArchive& archive) {
  saveModule(model, archive);
}

// Every tensor that did not come from the checkpoint, with its reason.
std::vector<std::string> notLoaded(const WarmStartReport& report) {
  std::vector<std::string> all = report.mismatched;
  all.insert(all.end(), report.kept_fresh.begin(), report.kept_fresh.end());
  return all;
}

void readModuleStrict(torch::nn::Module& model, torch::serialize::InputArchive& archive, const std::string& what) {
  Loading loading;
  loadModule(model, archive, "", loading);
  const std::vector<std::string> missing = notLoaded(loading.report);
  if (!missing.empty())
    throw std::runtime_error(fmt::format("{} does not match the model:{}", what, joinLimited(missing, 10)));
  loading.apply(what);
}

void saveCheckpoint(const torch::nn::Module& model, const std::filesystem::path& path) {
  torch::serialize::OutputArchive archive;
  saveModule(model, archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  results::writeFileAtomic(path, bytes.str());
}

WarmStartReport warmStart(torch::nn::Module& model, const std::filesystem::path& path) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path.string());
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("cannot read checkpoint '{}': {}", path.string(), e.what_without_backtrace()));
  }
  Loading loading;
  loadModule(model, archive, "", loading);
  const WarmStartReport& report = loading.report;
  if (!report.mismatched.empty())
    throw std::runtime_error(fmt::format(
        "checkpoint '{}' is of another model: {} of its tensors have other shapes than this plan's{}\n"
        "a warm start continues a model of the same sizes (width, layers, heads, vocabulary); tensors the "
        "checkpoint lacks, such as a new component's, start fresh",
        path.string(), report.mismatched.size(), joinLimited(report.mismatched, 10)));
  loading.apply(fmt::format("checkpoint '{}'", path.string()));
  return report;
}

void loadCheckpoint(torch::nn::Module& model, const std::filesystem::path& path) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path.string());
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("cannot read checkpoint '{}': {}", path.string(), e.what_without_backtrace()));
  }
  readModuleStrict(model, archive, fmt::format("checkpoint '{}'", path.string()));
}

std::string describe(const WarmStartReport& report, const std::filesystem::path& path) {
  std::string out = fmt::format("warm start from {}: copied {} tensor(s)", path.string(), report.copied.size());
  if (report.kept_fresh.empty()) {
    out += "; every parameter was loaded\n";
  } else {
    out += fmt::format("; {} kept their fresh initialisation:{}\n", report.kept_fresh.size(),
                       joinLimited(report.kept_fresh, 20));
  }
  if (!report.unused.empty())
    out += fmt::format("  {} checkpoint tensor(s) unused:{}\n", report.unused.size(), joinLimited(report.unused, 20));
  return out;
}

}  // namespace posc::train
