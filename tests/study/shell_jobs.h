// Stand-in jobs for the study tests: a job whose "run" is an sh script, and
// the reading of a run.log that the executor appends each attempt to.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/study/executor.h"

namespace posc::study::test_jobs {

inline Job shellJob(const std::filesystem::path& root, const std::string& name, const std::string& script) {
  Job j;
  j.experiment = name;
  j.out_dir = root / name;
  j.plan_hash = "00000000000000" + (name.size() > 1 ? name.substr(0, 2) : name + "0");
  j.command = {"/bin/sh", "-c", script};
  return j;
}

// The attempts in a run.log, in order: each its header line (without the
// marks) and the output after it.
struct Attempt {
  std::string header;
  std::string output;
};
inline std::vector<Attempt> attempts(const std::string& log) {
  std::vector<Attempt> out;
  const std::string mark = kAttemptMark;
  size_t at = 0;
  while (at < log.size()) {
    size_t end = log.find('\n', at);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(at, end - at);
    const bool header = line.size() > 2 * mark.size() && line.rfind(mark + " ", 0) == 0 &&
                        line.compare(line.size() - mark.size() - 1, mark.size() + 1, " " + mark) == 0;
    if (header)
      out.push_back({line.substr(mark.size() + 1, line.size() - 2 * mark.size() - 2), ""});
    else if (!out.empty())
      out.back().output += log.substr(at, end + 1 - at);
    at = end + 1;
  }
  return out;
}

}  // namespace posc::study::test_jobs
