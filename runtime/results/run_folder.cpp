// Folder lock, status file and clean-up of earlier outputs; see run_folder.h.
#include "runtime/results/run_folder.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <regex>

#include <fmt/format.h>

#include "compiler/plan/plan_json.h"
#include "runtime/results/atomic_file.h"
#include "runtime/results/errors.h"

namespace posc::results {

namespace fs = std::filesystem;

FolderLock::FolderLock(const fs::path& dir, const std::string& command) {
  const fs::path path = dir / ".lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw runtime::UserError(fmt::format("cannot create the lock file '{}': {}", path.string(), std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buffer[64] = {};
    ssize_t n = ::pread(fd_, buffer, sizeof buffer - 1, 0);
    std::string holder = n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd_);
    fd_ = -1;
    // "<pid> <command>" (a lock of an older posc holds the pid alone).
    const size_t space = holder.find(' ');
    const std::string pid = holder.substr(0, space);
    const std::string what = space == std::string::npos ? "run" : holder.substr(space + 1);
    const bool shown = !pid.empty() && pid.find_first_not_of("0123456789") == std::string::npos &&
                       !what.empty() && what.find_first_not_of("abcdefghijklmnopqrstuvwxyz") == std::string::npos;
    if (err == EWOULDBLOCK)
      throw runtime::UserError(fmt::format(
          "results folder '{}' is in use by another posc {}{}; wait for it to finish or choose another --out",
          dir.string(), shown ? what : "process", shown ? " (pid " + pid + ")" : ""));
    throw runtime::UserError(fmt::format("cannot lock '{}': {}", path.string(), std::strerror(err)));
  }
  const std::string holder = std::to_string(::getpid()) + " " + command + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
    // The lock is held; only the holder's name in messages is lost.
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

std::optional<RunStatus> readStatus(const fs::path& dir) {
  std::optional<std::string> text = results::readFileText(dir / "status.json");
  if (!text) return std::nullopt;
  return parseStatus(*text);
}

void writeStatus(const fs::path& dir, const RunStatus& s) {
  try {
    results::writeFileAtomic(dir / "status.json", statusJson(s));
  } catch (const std::runtime_error& e) {
    throw runtime::UserError(e.what());
  }
}

std::string describeStatus(const RunStatus& s) {
  std::string where = s.seed ? fmt::format(" at seed {}, step {}", *s.seed, s.step) : "";
  if (s.state == "finished") return "finished";
  if (s.state == "interrupted") return "interrupted" + where + (s.message.empty() ? "" : " (" + s.message + ")");
  if (s.state == "failed") return "failed" + where + (s.message.empty() ? "" : ": " + s.message);
  const bool alive = s.pid > 0 && (::kill(static_cast<pid_t>(s.pid), 0) == 0 || errno == EPERM);
  if (alive) return fmt::format("running (pid {}){}", s.pid, where);
  return fmt::format("stopped before finishing: its process (pid {}) is gone (killed, or the machine stopped){}",
                     s.pid, where);
}

namespace {

// Removes the files of `folder` whose names match `pattern`.
void removeMatching(const fs::path& folder, const std::regex& pattern) {
  std::error_code ec;
  for (const auto& file : fs::directory_iterator(folder, ec))
    if (file.is_regular_file() && std::regex_match(file.path().filename().string(), pattern))
      fs::remove(file.path(), ec);
}

// The seed<N> folders of a results folder.
std::vector<fs::path> seedFolders(const fs::path& dir) {
  static const std::regex seed_folder("seed[0-9]+");
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory() && std::regex_match(entry.path().filename().string(), seed_folder))
      out.push_back(entry.path());
  return out;
}

// The weights a run writes into a seed folder, in both formats.
const std::regex& weightFileName() {
  static const std::regex weights(R"((checkpoint_[0-9]+|final|resume)\.(pt|safetensors))");
  return weights;
}

}  // namespace

std::vector<fs::path> trainedWeights(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const fs::path& seed : seedFolders(dir))
    for (const auto& file : fs::directory_iterator(seed, ec))
      if (file.is_regular_file() && std::regex_match(file.path().filename().string(), weightFileName()))
        out.push_back(file.path().lexically_relative(dir));
  std::sort(out.begin(), out.end());
  return out;
}

void removeTemporaryFiles(const fs::path& dir) {
  static const std::regex temporary(R"(\..+\.[0-9]+-[0-9]+\.tmp)");
  removeMatching(dir, temporary);
  for (const fs::path& seed : seedFolders(dir)) removeMatching(seed, temporary);
}

namespace {

// What a study writes into a run's folder before the run starts: the run's
// log and job record; and posc's own lock.
bool writtenBeforeTheRun(const std::string& name) {
  return name == "run.log" || name == "job.json" || name == ".lock";
}

}  // namespace

std::vector<std::string> foreignEntries(const fs::path& dir, size_t limit) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!writtenBeforeTheRun(name)) out.push_back(name);
    if (out.size() >= limit) break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

FolderOwner folderOwner(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return FolderOwner::None;
  if (!fs::is_directory(dir, ec)) return FolderOwner::Foreign;
  if (fs::is_regular_file(dir / kFolderMarker, ec)) return FolderOwner::Posc;
  if (fs::is_regular_file(dir / "status.json", ec) && readStatus(dir)) return FolderOwner::Posc;
  return foreignEntries(dir, 1).empty() ? FolderOwner::None : FolderOwner::Foreign;
}

void markFolder(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_regular_file(dir / kFolderMarker, ec)) return;
  try {
    results::writeFileAtomic(dir / kFolderMarker,
                             "a posc results folder: posc run may replace the files it wrote here\n");
  } catch (const std::runtime_error& e) {
    throw runtime::UserError(e.what());
  }
}

std::optional<plan::ExperimentPlan> readRecordedPlan(const fs::path& dir) {
  const std::optional<std::string> text = readFileText(dir / "plan.json");
  if (!text) return std::nullopt;
  try {
    return plan::planFromJson(*text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void removeEvaluationOutputs(const fs::path& dir) {
  std::error_code ec;
  for (const char* name : {"accuracy.csv", "summary.md", "protocol.csv", "requirements.csv", "report.md", "report.html"})
    fs::remove(dir / name, ec);
  static const std::regex probe_output(R"([^.].*\.(csv|svg|md))");
  removeMatching(dir / "probes", probe_output);
  fs::remove(dir / "probes", ec);  // only when it is now empty
  static const std::regex heatmap(R"([^.].*\.svg)");
  removeMatching(dir / "heatmaps", heatmap);
  fs::remove(dir / "heatmaps", ec);  // only when it is now empty
}

void removeRunOutputs(const fs::path& dir) {
  std::error_code ec;
  removeEvaluationOutputs(dir);
  for (const char* name : {"metrics.jsonl", "status.json", "training.svg", "training-lr.svg",
                           "training-throughput.svg", "training-accuracy.svg"})
    fs::remove(dir / name, ec);
  static const std::regex events(R"(events\.out\.tfevents\..*\.posc)");
  removeMatching(dir / "tensorboard", events);
  fs::remove(dir / "tensorboard", ec);  // only when it is now empty
  for (const fs::path& seed : seedFolders(dir)) removeMatching(seed, weightFileName());
}

}  // namespace posc::results
