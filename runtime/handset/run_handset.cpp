// The run of a hand-set model (see run_handset.h).
#include "runtime/handset/run_handset.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "compiler/plan/params.h"
#include "runtime/handset/evaluate.h"
#include "runtime/handset/forward.h"
#include "runtime/results/atomic_file.h"

namespace posc::handset {

namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, std::string_view content) {
  try {
    results::writeFileAtomic(path, content);
  } catch (const std::runtime_error& e) {
    throw runtime::UserError(e.what());
  }
}

constexpr size_t kFailuresShown = 10;

}  // namespace

int runHandset(const plan::ExperimentPlan& plan, const runtime::RunOptions& options) {
  const fs::path out = options.out_dir.empty() ? fs::path(plan.name) : fs::path(options.out_dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out))
    throw runtime::UserError(fmt::format("cannot create results folder '{}': {}", out.string(),
                                         ec ? ec.message() : "a file of that name exists"));
  write(out / "plan.txt", options.plan_text);
  write(out / "source.pos", options.source_text);

  const plan::ParameterCounts counts = plan::countParameters(*plan.handset);
  const std::string count_text = plan::renderParameterCounts(counts);
  write(out / "parameters.txt", count_text);
  std::fputs(count_text.c_str(), stdout);

  const Forward forward(*plan.handset, plan.model.softmax);
  const LogitsFn fn = [&](const std::vector<int64_t>& tokens) { return forward.logits(tokens); };
  const auto start = std::chrono::steady_clock::now();
  const ProtocolResult r = plan.eval.protocol == plan::EvalProtocol::AdderBoard ? evaluateAdderBoard(fn, plan.task)
                                                                                 : evaluateLengths(fn, plan.task);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::string csv = "a,b,expected,got\n";
  for (const FailedCase& f : r.failures) csv += fmt::format("{},{},{},{}\n", f.a, f.b, f.expected, f.got);
  write(out / "failures.csv", csv);

  std::string summary = fmt::format("# {}\n\nhand-set model, version {}\n\n", plan.name, options.version);
  summary += fmt::format("protocol {}: {} / {} correct ({:.2f}%)\n\n", r.protocol, r.correct, r.total, r.percent());
  summary += "```\n" + count_text + "```\n";
  if (!r.failures.empty()) {
    summary += fmt::format("\nfirst failures (all {} in failures.csv):\n\n| a | b | expected | got |\n|---|---|---|---|\n",
                           r.failures.size());
    for (size_t i = 0; i < r.failures.size() && i < kFailuresShown; ++i)
      summary += fmt::format("| {} | {} | {} | {} |\n", r.failures[i].a, r.failures[i].b, r.failures[i].expected,
                             r.failures[i].got);
  }
  write(out / "summary.md", summary);

  std::printf("protocol %s: %lld / %lld correct (%.2f%%) in %.1f s\n", r.protocol.c_str(), r.correct, r.total,
              r.percent(), seconds);
  for (size_t i = 0; i < r.failures.size() && i < kFailuresShown; ++i)
    std::printf("  failed: %s + %s = %s, got %s\n", r.failures[i].a.c_str(), r.failures[i].b.c_str(),
                r.failures[i].expected.c_str(), r.failures[i].got.c_str());
  if (r.failures.size() > kFailuresShown)
    std::printf("  ... %zu more in failures.csv\n", r.failures.size() - kFailuresShown);
  std::printf("results in %s\n", out.string().c_str());
  return 0;
}

}  // namespace posc::handset
