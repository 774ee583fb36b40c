// posc analyze FILE: run the file's `analysis NAME { ... }` blocks (kernels
// over distance, ridge fits, the analytic controls) and write each one's
// CSV, Markdown and SVG files into a folder. Everything is computed before
// the first file is written, and each file is written atomically.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "compiler/parse/parser.h"
#include "runtime/results/atomic_file.h"
#include "tools/posc/cli.h"
#include "tools/posc/repl/analyze.h"

namespace posc::cli {
namespace {

std::string help() {
  return "usage: posc analyze FILE [--analysis NAME] [--out DIR]\n\n"
         "Runs the analysis blocks of FILE and writes each into DIR/NAME/ (default\n"
         "runs/NAME/): summary.md, source.pos, and a .csv, .md or .svg per result.\n\n"
         "An analysis block holds definitions of kernels over the distance d\n"
         "(k = 20*cos(2*pi*d/6)) or constants (w = 2*pi/6), and calls:\n" +
         repl::analysisCallsHelp();
}

int runAnalyze(const std::vector<std::string>& args) {
  std::string file, only, out = "runs";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 == args.size()) throw UsageError{fmt::format("{} needs a value", a)};
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(help().c_str(), stdout);
      return 0;
    }
    if (a == "--analysis") only = value();
    else if (a == "--out") out = value();
    else if (!a.empty() && a[0] == '-') throw UsageError{fmt::format("posc analyze does not take '{}'", a)};
    else if (file.empty()) file = a;
    else throw UsageError{"posc analyze takes one FILE"};
  }
  if (file.empty()) throw UsageError{"posc analyze needs a FILE"};

  SourceManager sources;
  std::optional<int32_t> id = sources.load(file);
  if (!id) {
    std::fprintf(stderr, "error: cannot read '%s'\n", file.c_str());
    return 2;
  }
  DiagnosticEngine diags(sources);
  std::optional<ast::File> ast = parse::parseFile(*id, sources, diags);
  std::optional<std::vector<repl::AnalysisResult>> results;
  if (ast) results = repl::runAnalyses(*ast, only, diags);
  std::fputs(diags.render(colorOutput()).c_str(), stderr);
  if (!results) return 2;

  for (const repl::AnalysisResult& r : *results) {
    const std::filesystem::path dir = std::filesystem::path(out) / r.name;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      std::fprintf(stderr, "error: cannot create '%s': %s\n", dir.c_str(), ec.message().c_str());
      return 1;
    }
    for (const repl::Artefact& a : r.artefacts) {
      std::string content = a.content;
      if (a.file == "summary.md")
        content = fmt::format("<!-- posc {} analyze {} (analysis {}) -->\n", kVersion, file, r.name) + content;
      results::writeFileAtomic(dir / a.file, content);
    }
    results::writeFileAtomic(dir / "source.pos", sources.file(*id).text());
    std::printf("%s: %zu files in %s\n", r.name.c_str(), r.artefacts.size() + 1, dir.c_str());
  }
  return 0;
}

const CommandRegistration reg{{"analyze", "posc analyze FILE [--analysis NAME] [--out DIR]",
                               "run analysis blocks: kernel aliases, ridge fits, the analytic controls (CSV, Markdown, SVG)",
                               50, false, runAnalyze}};

}  // namespace
}  // namespace posc::cli
