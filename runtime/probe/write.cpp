// Running the declared probes and writing their artefacts: see probe.h.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "runtime/probe/probe.h"
#include "runtime/results/atomic_file.h"

namespace posc::probe {

namespace fs = std::filesystem;

ProbeResult runProbe(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models) {
  switch (probe.kind) {
    case plan::ProbeKind::Reach: return runReach(probe, plan, models);
    case plan::ProbeKind::SinkShare: return runSinkShare(probe, plan, models);
    case plan::ProbeKind::Kernel: return runKernel(probe, plan, models);
    case plan::ProbeKind::Bands: return runBands(probe, plan, models);
    case plan::ProbeKind::TeacherForced: return runTeacherForced(probe, plan, models);
    case plan::ProbeKind::Stop: return runStop(probe, plan, models);
    case plan::ProbeKind::EvidenceMass: return runEvidenceMass(probe, plan, models);
  }
  throw std::logic_error("unknown probe kind");
}

namespace {
std::string csvName(const ProbeResult& r, const NamedTable& t) {
  return t.suffix.empty() ? r.name + ".csv" : r.name + "-" + t.suffix + ".csv";
}
}  // namespace

std::string probeMarkdown(const ProbeResult& r) {
  std::string md = fmt::format("## {}\n\n`{}`\n\n", r.title, r.description);
  for (const std::string& f : r.findings) md += "- " + f + "\n";
  if (!r.findings.empty()) md += "\n";
  md += fmt::format("![{}]({}.svg)\n\n", r.title, r.name);
  for (const NamedTable& t : r.tables) {
    if (t.markdown)
      md += fmt::format("### {}\n\n{}\n", t.title, plot::toMarkdown(t.table));
    else
      md += fmt::format("### {}\n\n{} rows in [{}]({}).\n\n", t.title, t.table.rows.size(), csvName(r, t), csvName(r, t));
  }
  return md;
}

void writeProbeResult(const fs::path& dir, const ProbeResult& r) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create '{}': {}", dir.string(), ec.message()));
  for (const NamedTable& t : r.tables) results::writeFileAtomic(dir / csvName(r, t), plot::toCsv(t.csv ? *t.csv : t.table));
  results::writeFileAtomic(dir / (r.name + ".svg"), plot::renderSvg(r.chart));
  results::writeFileAtomic(dir / (r.name + ".md"), probeMarkdown(r));
}

std::vector<ProbeResult> runAndWriteProbes(const plan::ExperimentPlan& plan, std::vector<SeedModel>& models,
                                           const fs::path& dir, const std::string& only) {
  std::vector<ProbeResult> out;
  for (const plan::ProbePlan& p : plan.probes) {
    if (!only.empty() && p.name != only) continue;
    const auto t0 = std::chrono::steady_clock::now();
    ProbeResult r = runProbe(p, plan, models);
    writeProbeResult(dir, r);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "probe %s (%.1fs): %s\n", p.name.c_str(), s,
                 r.findings.empty() ? "" : r.findings.front().c_str());
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace posc::probe
