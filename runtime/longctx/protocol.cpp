// The factorial long-context protocol (protocol.h).
#include "runtime/longctx/protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "runtime/task/python_random.h"

namespace posc::longctx {

uint64_t mixSeed(uint64_t seed, uint64_t word) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL + word * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

namespace {

uint64_t mix(uint64_t seed, uint64_t word) { return mixSeed(seed, word); }

// The tokens before <eos> (all of them when it never came).
std::vector<int32_t> untilEos(const std::vector<int32_t>& generated) {
  auto end = std::find(generated.begin(), generated.end(), token::kEos);
  return {generated.begin(), end};
}

// Whether the context mentions this value or key.
bool mentioned(const Document& doc, const std::vector<int32_t>& answer) {
  const auto& c = doc.context;
  if (answer.size() == 1) return std::find(c.begin(), c.end(), answer[0]) != c.end();
  for (size_t i = 0; i + 1 < c.size(); ++i)
    if (c[i] == answer[0] && c[i + 1] == answer[1]) return true;
  return false;
}

bool wellFormed(const std::vector<int32_t>& a) {
  if (a.size() == 1) return tokenClass(a[0]) == TokenClass::Value;
  return a.size() == 2 && a[0] >= token::kFirstKeyHalf && a[0] < token::kSecondKeyHalf &&
         a[1] >= token::kSecondKeyHalf && a[1] < token::kFirstValue;
}

double rate(int64_t tokens, double seconds) { return seconds > 0 ? double(tokens) / seconds : 0.0; }

}  // namespace

std::string describe(const Cell& c) {
  return fmt::format("{} length {} depth {:g} distractors {}", taskTypeName(c.task), c.length, c.depth, c.distractors);
}

CellPlan planCells(const Factors& f) {
  if (f.templates < 1 || f.templates > kTemplates)
    throw std::invalid_argument(fmt::format("templates = {}: posc has 1 to {}", f.templates, kTemplates));
  if (f.problems < 1) throw std::invalid_argument("problems must be at least 1");
  if (!(f.fraction > 0.0 && f.fraction <= 1.0)) throw std::invalid_argument("fraction must be in (0, 1]");
  if (!(f.absent_share >= 0.0 && f.absent_share <= 1.0)) throw std::invalid_argument("absent_share must be in [0, 1]");
  std::vector<Cell> all;
  for (TaskType t : f.tasks)
    for (int length : f.lengths)
      for (double depth : f.depths)
        for (int n : f.distractors) all.push_back(Cell{t, length, depth, n});

  std::vector<size_t> chosen(all.size());
  for (size_t i = 0; i < all.size(); ++i) chosen[i] = i;
  if (f.fraction < 1.0) {
    // A seeded Fisher-Yates shuffle; keep the first ceil(fraction x n), in grid order.
    task::PythonRandom rng(mix(f.seed, 0x66726163ULL));
    for (size_t i = chosen.size(); i > 1; --i) std::swap(chosen[i - 1], chosen[rng.randbelow(i)]);
    chosen.resize(static_cast<size_t>(std::ceil(f.fraction * double(all.size()))));
    std::sort(chosen.begin(), chosen.end());
  }
  CellPlan plan;
  for (size_t i : chosen) {
    const Cell& cell = all[i];
    int needed = 0;
    for (int templ = 0; templ < f.templates; ++templ) {
      DocumentSpec s;
      s.task = cell.task;
      s.template_index = templ;
      s.distractors = cell.distractors;
      needed = std::max(needed, minimumLength(s));
    }
    if (cell.length < needed)
      plan.skipped.emplace_back(cell, fmt::format("a document with {} distractors needs at least {} tokens",
                                                  cell.distractors, needed));
    else if (!(cell.depth >= 0.0 && cell.depth <= 1.0))
      plan.skipped.emplace_back(cell, "depth outside [0, 1]");
    else
      plan.cells.push_back(cell);
  }
  return plan;
}

std::vector<DocumentSpec> cellDocuments(const Factors& f, const Cell& cell) {
  std::vector<DocumentSpec> specs;
  uint64_t base = mix(mix(mix(mix(f.seed, static_cast<uint64_t>(cell.task)), static_cast<uint64_t>(cell.length)),
                          std::bit_cast<uint64_t>(cell.depth)),
                      static_cast<uint64_t>(cell.distractors));
  for (int i = 0; i < f.problems; ++i) {
    DocumentSpec s;
    s.task = cell.task;
    s.length = cell.length;
    s.depth = cell.depth;
    s.distractors = cell.distractors;
    s.near_duplicates = f.near_duplicates;
    s.template_index = i % f.templates;
    s.authority = f.authority;
    // Absent for problem i when the running count of absent ones steps up:
    // floor((i + 1) share) > floor(i share) spreads them evenly.
    s.evidence_present = !(canLackEvidence(cell.task) &&
                           std::floor((i + 1) * f.absent_share + 1e-9) > std::floor(i * f.absent_share + 1e-9));
    s.seed = mix(base, static_cast<uint64_t>(i));
    specs.push_back(s);
  }
  return specs;
}

const char* gradeName(Grade g) {
  switch (g) {
    case Grade::Correct: return "correct";
    case Grade::Abstained: return "abstained";
    case Grade::Unsupported: return "unsupported";
    case Grade::Wrong: return "wrong";
  }
  return "?";
}

Grade grade(const Document& doc, int question, const std::vector<int32_t>& generated) {
  std::vector<int32_t> answer = untilEos(generated);
  if (answer == untilEos(doc.questions.at(static_cast<size_t>(question)).answer)) return Grade::Correct;
  if (answer == std::vector<int32_t>{token::kNone}) return Grade::Abstained;
  if (!wellFormed(answer) || !mentioned(doc, answer)) return Grade::Unsupported;
  return Grade::Wrong;
}

std::vector<CellResult> runProtocol(const Factors& f, const Answerer& answer, const ProtocolOptions& options) {
  if (options.batch < 1) throw std::invalid_argument("the protocol's batch must be at least 1");
  CellPlan plan = planCells(f);
  std::vector<CellResult> results;
  for (const Cell& cell : plan.cells) {
    std::vector<Document> docs;
    for (const DocumentSpec& spec : cellDocuments(f, cell)) docs.push_back(generate(spec));
    std::vector<Prompt> prompts;
    for (const Document& d : docs)
      for (size_t q = 0; q < d.questions.size(); ++q) prompts.push_back(Prompt{&d, static_cast<int>(q)});

    CellResult r;
    r.cell = cell;
    r.regression = cell.length <= f.train_max_length;
    r.documents = static_cast<int>(docs.size());
    int hop_correct[2] = {0, 0};
    double prefill_seconds = 0.0, generation_seconds = 0.0;
    for (size_t start = 0; start < prompts.size(); start += static_cast<size_t>(options.batch)) {
      std::vector<Prompt> batch(prompts.begin() + static_cast<std::ptrdiff_t>(start),
                                prompts.begin() + static_cast<std::ptrdiff_t>(
                                                      std::min(prompts.size(), start + static_cast<size_t>(options.batch))));
      Answers a = answer(batch);
      if (a.generated.size() != batch.size())
        throw std::runtime_error(fmt::format("the answerer returned {} answers for {} prompts", a.generated.size(),
                                             batch.size()));
      prefill_seconds += a.prefill_seconds;
      generation_seconds += a.generation_seconds;
      r.peak_cache_bytes = std::max(r.peak_cache_bytes, a.peak_cache_bytes);
      for (size_t i = 0; i < batch.size(); ++i) {
        const Prompt& p = batch[i];
        r.prefill_tokens += static_cast<int64_t>(p.document->context.size() +
                                                 p.document->questions[static_cast<size_t>(p.question)].tokens.size());
        r.generated_tokens += static_cast<int64_t>(a.generated[i].size());
        Grade g = grade(*p.document, p.question, a.generated[i]);
        if (p.question > 0) {  // composition's controls
          hop_correct[p.question - 1] += g == Grade::Correct;
          continue;
        }
        switch (g) {
          case Grade::Correct: ++r.correct; break;
          case Grade::Abstained: ++r.abstained; break;
          case Grade::Unsupported: ++r.unsupported; break;
          case Grade::Wrong: ++r.wrong; break;
        }
      }
    }
    r.accuracy = double(r.correct) / r.documents;
    r.lower_bound = wilsonLowerBound(r.correct, r.documents);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    r.hop1_accuracy = cell.task == TaskType::Composition ? double(hop_correct[0]) / r.documents : nan;
    r.hop2_accuracy = cell.task == TaskType::Composition ? double(hop_correct[1]) / r.documents : nan;
    r.prefill_tokens_per_s = rate(r.prefill_tokens, prefill_seconds);
    r.generation_tokens_per_s = rate(r.generated_tokens, generation_seconds);
    if (options.on_cell) options.on_cell(r);
    results.push_back(r);
  }
  return results;
}

double wilsonLowerBound(int successes, int trials, double z) {
  if (trials <= 0) return 0.0;
  double n = trials, p = double(successes) / n, z2 = z * z;
  double centre = p + z2 / (2 * n);
  double spread = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
  return std::max(0.0, (centre - spread) / (1 + z2 / n));
}

RequirementResult check(const Requirement& req, const std::vector<CellResult>& results) {
  RequirementResult out;
  out.requirement = req;
  for (const CellResult& r : results) {
    if (r.cell.task != req.task) continue;
    if (req.length && r.cell.length != *req.length) continue;
    if (req.depth && std::fabs(r.cell.depth - *req.depth) > 1e-9) continue;
    if (req.distractors && r.cell.distractors != *req.distractors) continue;
    ++out.cells;
    out.documents += r.documents;
    out.correct += r.correct;
  }
  out.lower_bound = wilsonLowerBound(out.correct, out.documents);
  out.met = out.documents > 0 && out.lower_bound >= req.threshold;
  return out;
}

}  // namespace posc::longctx
