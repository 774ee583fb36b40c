// `posc report RUN_DIR`: one page for a finished run, as Markdown and as a
// self-contained HTML file (every SVG inlined, no scripts, no external files),
// with the plan, the training curves, the accuracy table and every probe.
//
// The page is assembled from the files of the results folder (plan.txt,
// metrics.jsonl, summary.md, probes/*.md and *.svg), so it can be rebuilt at
// any time without the model. No LibTorch here.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/plot/chart.h"

namespace posc::report {

// The Markdown posc writes, as HTML: #/##/### headings, paragraphs, "- "
// lists, pipe tables, ``` code blocks, `inline code`, [links](x) and
// ![images](x). `image(src)` returns the SVG text to inline for an image,
// or nullopt to keep an <img> reference.
std::string markdownToHtml(const std::string& markdown,
                           const std::function<std::optional<std::string>(const std::string& src)>& image);

// A self-contained HTML page (inline style, no scripts) around `body_html`:
// the shell of report.html and of the comparison page.
std::string htmlPage(const std::string& title, const std::string& body_html);

// The charts of a run's training, from its metrics.jsonl, one series per
// seed (a seed logged once is drawn as a point): the training loss (on a log
// axis when it spans two decades or more), the learning rate, the
// throughput, and, where the run evaluated during training (`eval.every`),
// accuracy against step, one series per test length (the mean over seeds).
// Throws std::runtime_error naming the line when a line is not a record.
struct TrainingCharts {
  plot::Chart loss, lr, throughput;
  std::optional<plot::Chart> accuracy;
};
TrainingCharts trainingCharts(const std::string& metrics_jsonl, const std::string& name);

// A figure of the page: its file name in the run folder and its SVG.
struct Figure {
  std::string file, svg;
};

struct Report {
  std::string markdown;         // report.md, images relative to the run folder
  std::string html;             // report.html, self-contained
  std::vector<Figure> figures;  // training.svg, training-lr.svg, ...
};

// Throws std::runtime_error when `run_dir` is not a results folder.
Report buildReport(const std::filesystem::path& run_dir);

// Writes report.md, report.html and the figures into the run folder atomically.
void writeReport(const std::filesystem::path& run_dir, const Report& report);

}  // namespace posc::report
