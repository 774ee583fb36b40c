// CSV and Markdown rendering of result tables; see tables.h.
#include "runtime/results/tables.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace posc::results {
namespace {

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string percent(double fraction) { return fmt::format("{:.1f}", 100.0 * fraction); }

}  // namespace

std::string renderCsv(const Table& table) {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += csvField(cells[i]);
    }
    out += '\n';
  };
  line(table.header);
  for (const auto& row : table.rows) line(row);
  return out;
}

std::string renderMarkdown(const Table& table) {
  const size_t cols = table.header.size();
  std::vector<size_t> width(cols, 3);
  auto measure = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cols && i < cells.size(); ++i) width[i] = std::max(width[i], cells[i].size());
  };
  measure(table.header);
  for (const auto& row : table.rows) measure(row);
  auto right = [&](size_t i) { return i < table.right_align.size() && table.right_align[i]; };

  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    out += '|';
    for (size_t i = 0; i < cols; ++i) {
      const std::string cell = i < cells.size() ? cells[i] : std::string();
      std::string pad(width[i] - cell.size(), ' ');
      out += ' ';
      out += right(i) ? pad + cell : cell + pad;
      out += " |";
    }
    out += '\n';
  };
  line(table.header);
  out += '|';
  for (size_t i = 0; i < cols; ++i) {
    out += ' ';
    out += right(i) ? std::string(width[i] - 1, '-') + ":" : std::string(width[i], '-');
    out += " |";
  }
  out += '\n';
  for (const auto& row : table.rows) line(row);
  return out;
}

std::string accuracyCsv(const std::vector<LengthAccuracy>& records) {
  Table t;
  t.header = {"seed", "digits", "correct", "total", "accuracy"};
  for (const auto& r : records)
    t.rows.push_back({std::to_string(r.seed), std::to_string(r.digits), std::to_string(r.correct),
                      std::to_string(r.total), fmt::format("{:.6f}", r.accuracy())});
  return renderCsv(t);
}

std::vector<LengthAccuracy> parseAccuracyCsv(const std::string& csv) {
  std::vector<LengthAccuracy> out;
  std::istringstream in(csv);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1 || line.empty()) continue;  // the header
    LengthAccuracy r;
    unsigned long long seed = 0;
    char tail = 0;
    if (std::sscanf(line.c_str(), "%llu,%d,%d,%d,%*f%c", &seed, &r.digits, &r.correct, &r.total, &tail) != 4 ||
        r.total < 0 || r.correct < 0 || r.correct > r.total)
      throw std::runtime_error(fmt::format("accuracy.csv line {}: expected seed,digits,correct,total,accuracy, got '{}'",
                                           number, line));
    r.seed = seed;
    out.push_back(r);
  }
  return out;
}

Table accuracySummaryTable(const std::vector<LengthAccuracy>& records,
                           const std::vector<plan::PublishedAccuracy>& published) {
  std::vector<uint64_t> seeds;
  std::set<int> lengths;
  std::map<std::pair<int, uint64_t>, double> acc;
  for (const auto& r : records) {
    if (std::find(seeds.begin(), seeds.end(), r.seed) == seeds.end()) seeds.push_back(r.seed);
    lengths.insert(r.digits);
    acc[{r.digits, r.seed}] = r.accuracy();
  }
  Table t;
  t.header.push_back("digits");
  for (uint64_t s : seeds) t.header.push_back(fmt::format("seed {}", s));
  t.header.push_back("mean");
  t.header.push_back("range");
  if (!published.empty()) t.header.push_back("published");
  t.right_align.assign(t.header.size(), true);
  for (int d : lengths) {
    std::vector<std::string> row{std::to_string(d)};
    double sum = 0, lo = 1e9, hi = -1e9;
    int n = 0;
    for (uint64_t s : seeds) {
      auto it = acc.find({d, s});
      if (it == acc.end()) {
        row.push_back("-");
        continue;
      }
      row.push_back(percent(it->second));
      sum += it->second;
      lo = std::min(lo, it->second);
      hi = std::max(hi, it->second);
      ++n;
    }
    row.push_back(n ? percent(sum / n) : "-");
    row.push_back(n ? percent(lo) + "-" + percent(hi) : "-");
    if (!published.empty()) {
      std::string figures = "-";
      for (const plan::PublishedAccuracy& a : published) {
        if (a.digits != d) continue;
        figures.clear();
        for (double v : a.percent) figures += (figures.empty() ? "" : " / ") + fmt::format("{:g}", v);
      }
      row.push_back(figures);
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string summaryMarkdown(const std::string& experiment, const std::vector<LengthAccuracy>& records,
                            const plan::EvalPlan& eval) {
  std::string source = eval.published.empty() || eval.published_source.empty()
                           ? ""
                           : fmt::format("\nPublished figures: {}.\n", eval.published_source);
  return fmt::format("# {}\n\nExact-match accuracy (%) per test length (digits per operand).\n\n{}{}",
                     experiment, renderMarkdown(accuracySummaryTable(records, eval.published)), source);
}

}  // namespace posc::results
