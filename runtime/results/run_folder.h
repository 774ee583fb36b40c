// A results folder's single owner and its state across interruptions.
//
//   <out>/.lock         flock()ed by the posc process that runs into the
//                       folder; it holds that process's pid, so a second run
//                       into the folder fails at once naming it
//   <out>/status.json   the run's state, rewritten atomically as it goes
//                       (its format: runtime/formats/run_status.h)
//
// posc run continues an unfinished run of the same plan and refuses one of a
// different plan unless asked to start over; posc report shows the state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/formats/run_status.h"

namespace posc::results {

// Holds <dir>/.lock for its lifetime: a run while it writes the folder, a
// probe while it reads the checkpoints and writes probes/ (a run started
// meanwhile would replace the model under it). The file names the holder
// ("<pid> <command>"). Throws runtime::UserError when another process holds
// it (naming its pid and command) or the lock file cannot be created.
class FolderLock {
 public:
  explicit FolderLock(const std::filesystem::path& dir, const std::string& command = "run");
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

// The status's text is runtime/formats/run_status.h.
using formats::RunStatus;
using formats::parseStatus;
using formats::statusJson;

std::optional<RunStatus> readStatus(const std::filesystem::path& dir);
void writeStatus(const std::filesystem::path& dir, const RunStatus& s);  // atomic

// One line for people: "finished", "interrupted at seed 1, step 1500 (SIGINT)",
// "running (pid 123)" or "unfinished: the process (pid 123) is gone".
std::string describeStatus(const RunStatus& s);

// Whose a folder is, before a run writes into it. posc deletes files only in
// a folder it can prove is its own: one that holds its marker file
// (kFolderMarker, written when a run first takes a folder) or, from versions
// before the marker, a status.json in posc's format.
enum class FolderOwner {
  None,     // absent, or empty but for what a study writes before the run (run.log, job.json, .lock)
  Posc,     // a posc results folder
  Foreign,  // anything else: refused unless --fresh, and then nothing in it is deleted
};
inline constexpr const char* kFolderMarker = ".posc-results";
FolderOwner folderOwner(const std::filesystem::path& dir);
// Up to `limit` names in `dir` that make it foreign, for the refusal.
std::vector<std::string> foreignEntries(const std::filesystem::path& dir, size_t limit);
// Writes the marker (atomically); call while holding the folder's lock.
void markFolder(const std::filesystem::path& dir);

// Removes what an earlier run wrote into a folder of posc's own (metrics,
// status, its report, the evaluation's files below,
// seed<N>/{final,resume,checkpoint_*}.{pt,safetensors}), so a fresh run never
// leaves another run's files beside its own. Only names posc writes are
// removed (in probes/, the .csv, .svg and .md files a probe writes); call it
// only on a folder whose folderOwner() was Posc.
void removeRunOutputs(const std::filesystem::path& dir);
// Removes only what the evaluation after training wrote (accuracy.csv,
// summary.md, protocol.csv, requirements.csv, heatmaps/, probes/ and the
// report, which shows them), keeping the weights, the training log and the
// status: for a run evaluated again with another plan.
void removeEvaluationOutputs(const std::filesystem::path& dir);

// The trained weights in a results folder's seed folders (final.pt, resume.pt,
// checkpoint_<k>.pt, and their .safetensors copies), relative to `dir` and
// sorted: what starting its run over would throw away.
std::vector<std::filesystem::path> trainedWeights(const std::filesystem::path& dir);

// The plan a results folder's run recorded (its plan.json, read back);
// nullopt when there is none or it cannot be read as a plan (damaged, or of
// another format).
std::optional<plan::ExperimentPlan> readRecordedPlan(const std::filesystem::path& dir);

// Removes temporary files (".<name>.<pid>-<n>.tmp") that a killed process
// left in the folder and its seed folders; call while holding the lock.
void removeTemporaryFiles(const std::filesystem::path& dir);

}  // namespace posc::results
