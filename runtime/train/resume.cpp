// Saving and restoring a seed's resume state; see resume.h.
#include "runtime/train/resume.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/results/atomic_file.h"
#include "runtime/train/checkpoint.h"

namespace posc::train {

void saveTrainingState(const std::filesystem::path& path, const torch::nn::Module& model,
                       const torch::optim::Optimizer& optimizer, const TrainingState& state) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive(archive.compilation_unit());
  writeModule(model, model_archive);
  archive.write("model", model_archive);
  torch::serialize::OutputArchive optimizer_archive(archive.compilation_unit());
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);

  std::ostringstream rng;
  rng << state.data_rng;
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  torch::Tensor torch_rng;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    torch_rng = generator.get_state();
  }
  archive.write("step", c10::IValue(static_cast<int64_t>(state.step)));
  archive.write("data_rng", c10::IValue(rng.str()));
  archive.write("torch_rng", torch_rng, /*is_buffer=*/true);
  archive.write("interval_loss", c10::IValue(state.interval_loss));
  archive.write("interval_steps", c10::IValue(static_cast<int64_t>(state.interval_steps)));
  archive.write("metrics_lines", c10::IValue(static_cast<int64_t>(state.metrics_lines)));
  archive.write("plan_hash", c10::IValue(state.plan_hash));

  std::ostringstream bytes;
  archive.save_to(bytes);
  results::writeFileAtomic(path, bytes.str());
}

TrainingState loadTrainingState(const std::filesystem::path& path, torch::nn::Module& model,
                                torch::optim::Optimizer& optimizer, const std::vector<std::string>& identities) {
  const std::string where = fmt::format("resume state '{}'", path.string());
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path.string());
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("cannot read {}: {}", where, e.what_without_backtrace()));
  }
  auto value = [&](const char* key) {
    c10::IValue v;
    if (!archive.try_read(key, v)) throw std::runtime_error(fmt::format("{} has no '{}'", where, key));
    return v;
  };
  TrainingState state;
  state.plan_hash = value("plan_hash").toStringRef();
  if (state.plan_hash.empty() ||
      std::find(identities.begin(), identities.end(), state.plan_hash) == identities.end())
    throw std::runtime_error(fmt::format("{} belongs to another plan (hash {}, this plan {})", where,
                                         state.plan_hash, identities.empty() ? "" : identities.front()));
  state.step = static_cast<int>(value("step").toInt());
  std::istringstream rng(value("data_rng").toStringRef());
  rng >> state.data_rng;
  if (!rng) throw std::runtime_error(fmt::format("{} has an unreadable data stream state", where));
  state.interval_loss = value("interval_loss").toDouble();
  state.interval_steps = static_cast<int>(value("interval_steps").toInt());
  state.metrics_lines = static_cast<size_t>(value("metrics_lines").toInt());

  torch::serialize::InputArchive model_archive, optimizer_archive;
  if (!archive.try_read("model", model_archive) || !archive.try_read("optimizer", optimizer_archive))
    throw std::runtime_error(fmt::format("{} lacks the model or the optimiser", where));
  readModuleStrict(model, model_archive, where);
  try {
    optimizer.load(optimizer_archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("{}: the optimiser state does not fit: {}", where, e.what_without_backtrace()));
  }
  torch::Tensor torch_rng = value("torch_rng").toTensor();
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(torch_rng);
  return state;
}

}  // namespace posc::train
