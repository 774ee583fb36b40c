// The run report: see report.h.
#include "runtime/report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <vector>

#include "runtime/formats/metrics_log.h"
#include "runtime/plot/table.h"
#include "runtime/results/atomic_file.h"
#include "runtime/results/run_folder.h"
#include "runtime/results/run_plan.h"

namespace posc::report {

namespace fs = std::filesystem;

namespace {

// Inline Markdown: `code`, ![alt](src), [text](href); everything else escaped.
std::string inlineHtml(const std::string& s,
                       const std::function<std::optional<std::string>(const std::string&)>& image) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '`') {
      size_t j = s.find('`', i + 1);
      if (j != std::string::npos) {
        out += "<code>" + plot::xmlEscape(s.substr(i + 1, j - i - 1)) + "</code>";
        i = j + 1;
        continue;
      }
    }
    const bool img = s.compare(i, 2, "![") == 0;
    if (img || s[i] == '[') {
      size_t close = s.find("](", i);
      size_t end = close == std::string::npos ? close : s.find(')', close);
      if (end != std::string::npos) {
        const std::string text = s.substr(i + (img ? 2 : 1), close - i - (img ? 2 : 1));
        const std::string href = s.substr(close + 2, end - close - 2);
        if (img) {
          auto svg = image ? image(href) : std::nullopt;
          out += svg ? "<figure>" + *svg + "</figure>"
                     : fmt::format(R"(<img src="{}" alt="{}">)", plot::xmlEscape(href), plot::xmlEscape(text));
        } else {
          out += fmt::format(R"(<a href="{}">{}</a>)", plot::xmlEscape(href), plot::xmlEscape(text));
        }
        i = end + 1;
        continue;
      }
    }
    out += plot::xmlEscape(std::string(1, s[i]));
    ++i;
  }
  return out;
}

std::vector<std::string> tableCells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (size_t i = 1; i < line.size(); ++i) {  // skip the leading '|'
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cur += '|';
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(cur);
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  for (auto& c : cells) {
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
  }
  return cells;
}

}  // namespace

std::string markdownToHtml(const std::string& markdown,
                           const std::function<std::optional<std::string>(const std::string& src)>& image) {
  std::vector<std::string> lines;
  {
    std::stringstream ss(markdown);
    std::string l;
    while (std::getline(ss, l)) lines.push_back(l);
  }
  std::string out;
  for (size_t i = 0; i < lines.size();) {
    const std::string& l = lines[i];
    if (l.rfind("```", 0) == 0) {
      out += "<pre><code>";
      for (++i; i < lines.size() && lines[i].rfind("```", 0) != 0; ++i) out += plot::xmlEscape(lines[i]) + "\n";
      out += "</code></pre>\n";
      ++i;
    } else if (l.rfind("#", 0) == 0) {
      size_t level = l.find_first_not_of('#');
      out += fmt::format("<h{0}>{1}</h{0}>\n", level, inlineHtml(l.substr(std::min(l.size(), level + 1)), image));
      ++i;
    } else if (l.rfind("- ", 0) == 0) {
      out += "<ul>\n";
      for (; i < lines.size() && lines[i].rfind("- ", 0) == 0; ++i) out += "<li>" + inlineHtml(lines[i].substr(2), image) + "</li>\n";
      out += "</ul>\n";
    } else if (l.rfind("|", 0) == 0) {
      out += "<table>\n";
      bool header = true;
      for (; i < lines.size() && lines[i].rfind("|", 0) == 0; ++i) {
        auto cells = tableCells(lines[i]);
        bool rule = !cells.empty() && std::all_of(cells.begin(), cells.end(), [](const std::string& c) {
          return !c.empty() && c.find_first_not_of("-:") == std::string::npos;
        });
        if (rule) continue;
        out += "<tr>";
        for (const auto& c : cells) out += fmt::format("<{0}>{1}</{0}>", header ? "th" : "td", inlineHtml(c, image));
        out += "</tr>\n";
        header = false;
      }
      out += "</table>\n";
    } else if (l.find_first_not_of(' ') == std::string::npos) {
      ++i;
    } else {
      std::string para;
      for (; i < lines.size() && !lines[i].empty() && lines[i].find_first_not_of(' ') != std::string::npos &&
             lines[i].rfind("#", 0) != 0 && lines[i].rfind("- ", 0) != 0 && lines[i].rfind("|", 0) != 0 &&
             lines[i].rfind("```", 0) != 0;
           ++i)
        para += (para.empty() ? "" : " ") + inlineHtml(lines[i], image);
      out += "<p>" + para + "</p>\n";
    }
  }
  return out;
}

std::string htmlPage(const std::string& title, const std::string& body_html) {
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{}</title>
<style>
body {{ font-family: sans-serif; max-width: 980px; margin: 2em auto; padding: 0 1em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }}
td:first-child {{ text-align: left; }}
th {{ background: #eee; }}
pre {{ background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }}
figure {{ margin: 1em 0; }}
</style>
</head>
<body>
{}</body>
</html>
)",
                     plot::xmlEscape(title), body_html);
}

namespace {

// "20" -> "20 digits"; another key ("retrieval 128") as it is.
std::string evalSeriesName(const std::string& key) {
  const bool digits = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
  return digits ? key + " digits" : key;
}

// Keys that are lengths in digits ascending, the others after them by name.
bool evalKeyBefore(const std::string& a, const std::string& b) {
  const bool da = a.find_first_not_of("0123456789") == std::string::npos && !a.empty();
  const bool db = b.find_first_not_of("0123456789") == std::string::npos && !b.empty();
  if (da != db) return da;
  if (da) return a.size() != b.size() ? a.size() < b.size() : a < b;
  return a < b;
}

}  // namespace

TrainingCharts trainingCharts(const std::string& metrics_jsonl, const std::string& name) {
  const formats::MetricsLog log = formats::readMetricsLog(metrics_jsonl);
  std::map<uint64_t, plot::Series> loss, lr, speed;
  for (const formats::TrainPoint& p : log.train) {
    for (auto* by_seed : {&loss, &lr, &speed}) {
      plot::Series& s = (*by_seed)[p.seed];
      s.name = fmt::format("seed {}", p.seed);
      s.style = plot::Style::Line;
    }
    // A non-finite loss is a gap in the line.
    loss[p.seed].x.push_back(p.step), loss[p.seed].y.push_back(p.loss);
    if (std::isfinite(p.lr)) lr[p.seed].x.push_back(p.step), lr[p.seed].y.push_back(p.lr);
    if (std::isfinite(p.tokens_per_s)) speed[p.seed].x.push_back(p.step), speed[p.seed].y.push_back(p.tokens_per_s);
  }
  TrainingCharts t;
  auto chart = [&](plot::Chart& c, std::map<uint64_t, plot::Series>& series, const std::string& title,
                   const std::string& y_label, int height) {
    c.title = name + ": " + title;
    c.x_label = "step";
    c.y_label = y_label;
    c.height = height;
    for (auto& [_, s] : series)
      if (!s.x.empty()) c.series.push_back(s);
    plot::showSinglePoints(c);
  };
  chart(t.loss, loss, "training loss", "training loss (cross-entropy on answer tokens)", 420);
  plot::logYIfDecades(t.loss);
  chart(t.lr, lr, "learning rate", "learning rate", 300);
  t.lr.y_min = 0;
  chart(t.throughput, speed, "throughput", "training tokens per second", 300);
  t.throughput.y_min = 0;

  if (!log.evals.empty()) {
    // key -> step -> (sum over seeds, seeds)
    std::map<std::string, std::map<double, std::pair<double, int>>> acc;
    for (const formats::EvalPoint& e : log.evals) {
      auto& cell = acc[e.name][e.step];
      cell.first += e.accuracy;
      cell.second += 1;
    }
    std::vector<std::string> keys;
    for (const auto& [key, _] : acc) keys.push_back(key);
    std::sort(keys.begin(), keys.end(), evalKeyBefore);
    plot::Chart& c = t.accuracy.emplace();
    c.title = name + ": accuracy during training";
    c.x_label = "step";
    c.y_label = "accuracy (%), the mean over seeds";
    c.y_min = 0;
    c.y_max = 100;
    for (const std::string& key : keys) {
      plot::Series s;
      s.name = evalSeriesName(key);
      for (const auto& [step, sum] : acc[key]) {
        s.x.push_back(step);
        s.y.push_back(100.0 * sum.first / sum.second);
      }
      c.series.push_back(std::move(s));
    }
    plot::showSinglePoints(c);
  }
  return t;
}

Report buildReport(const fs::path& run) {
  const std::string name = results::readRunPlan(run).name;
  const std::string plan_text = results::readFileText(run / "plan.txt").value_or("(no plan.txt)\n");  // for people
  Report r;
  const std::string metrics = results::readFileText(run / "metrics.jsonl").value_or("");
  try {
    TrainingCharts charts = trainingCharts(metrics, name);
    r.figures.push_back({"training.svg", plot::renderSvg(charts.loss)});
    r.figures.push_back({"training-lr.svg", plot::renderSvg(charts.lr)});
    r.figures.push_back({"training-throughput.svg", plot::renderSvg(charts.throughput)});
    if (charts.accuracy) r.figures.push_back({"training-accuracy.svg", plot::renderSvg(*charts.accuracy)});
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("'{}': {}", run.string(), e.what()));
  }

  std::string md = fmt::format("# {}\n\nResults folder `{}`.\n\n", name, run.string());
  // A run that has not finished says so first: its tables cover only what it committed.
  if (auto status = results::readStatus(run); status && !status->finished())
    md += fmt::format("**This run has not finished** ({}). The tables below hold the seeds it finished; `posc run` "
                      "with the same command continues it.\n\n",
                      results::describeStatus(*status));
  md += fmt::format("## Plan\n\n```\n{}```\n\n", plan_text);
  md += "## Training curve\n\n![training loss](training.svg)\n\n![learning rate](training-lr.svg)\n\n"
        "![throughput](training-throughput.svg)\n\n";
  if (r.figures.size() > 3)
    md += "## Accuracy during training\n\nEvery `eval.every` steps, as `metrics.jsonl` records it.\n\n"
          "![accuracy during training](training-accuracy.svg)\n\n";
  if (auto summary = results::readFileText(run / "summary.md")) {
    std::string body = *summary;
    // Demote the summary's own headings under "Accuracy".
    std::string demoted;
    std::stringstream ss(body);
    std::string l;
    while (std::getline(ss, l)) demoted += (l.rfind("#", 0) == 0 ? "##" + l : l) + "\n";
    md += "## Accuracy\n\n" + demoted + "\n";
  } else {
    md += "## Accuracy\n\nNo summary.md in the folder (the run did not finish a seed).\n\n";
  }
  // Probes in a fixed order, then any others by name.
  std::vector<std::string> order = {"reach", "sink_share", "kernel", "bands", "teacher_forced", "stop", "evidence_mass"};
  std::vector<std::string> found;
  if (fs::is_directory(run / "probes"))
    for (const auto& e : fs::directory_iterator(run / "probes"))
      if (e.path().extension() == ".md") found.push_back(e.path().stem().string());
  std::sort(found.begin(), found.end(), [&](const std::string& a, const std::string& b) {
    auto ia = std::find(order.begin(), order.end(), a) - order.begin();
    auto ib = std::find(order.begin(), order.end(), b) - order.begin();
    return ia != ib ? ia < ib : a < b;
  });
  if (found.empty()) md += "## Probes\n\nNo probes were run (declare a `probes { }` section, or run `posc probe`).\n";
  else md += "# Probes\n\n";
  for (const std::string& p : found) {
    std::string text = results::readFileText(run / "probes" / (p + ".md")).value_or("");
    // Links and images inside a probe page are relative to probes/.
    text = std::regex_replace(text, std::regex(R"(\]\(([^/)][^)]*)\))"), "](probes/$1)");
    md += text + "\n";
  }
  r.markdown = md;

  auto image = [&](const std::string& src) -> std::optional<std::string> {
    if (src.size() < 4 || src.substr(src.size() - 4) != ".svg" || src.find("..") != std::string::npos) return std::nullopt;
    for (const Figure& f : r.figures)
      if (src == f.file) return f.svg.substr(f.svg.find("<svg"));
    auto svg = results::readFileText(run / src);
    if (!svg) return std::nullopt;
    size_t start = svg->find("<svg");
    return start == std::string::npos ? std::nullopt : std::optional<std::string>(svg->substr(start));
  };
  r.html = htmlPage(name, markdownToHtml(md, image));
  return r;
}

void writeReport(const fs::path& run_dir, const Report& r) {
  for (const Figure& f : r.figures) results::writeFileAtomic(run_dir / f.file, f.svg);
  results::writeFileAtomic(run_dir / "report.md", r.markdown);
  results::writeFileAtomic(run_dir / "report.html", r.html);
}

}  // namespace posc::report
