// The factorial long-context protocol: every cell of context length x
// evidence depth x distractor count x task type, each on its own
// independently generated documents, graded with accuracy, abstention and
// unsupported answers, a Wilson 95% lower bound per cell, prefill and
// generation throughput measured separately, and release criteria on the
// lower bounds.
//
// The protocol does not know what answers: an Answerer (a trained model's
// greedy decoder, an analytic head, a scripted baseline) gets a batch of
// prompts and returns the generated tokens with its timing. So the same
// grading, tables and heatmaps serve every model and every control.
//
// Documents of a cell: problem i of cell (task, length, depth, distractors)
// is generate(spec) with template i mod templates, evidence absent for the
// declared share of retrieval and composition problems (spread evenly over
// i), and a seed mixed from the protocol seed and every coordinate of the
// cell and i (SplitMix64), so no two cells share documents and adding a level
// to one factor leaves every other cell's documents unchanged.
//
// Grading one answer (the tokens before <eos>; all of them if <eos> never
// came):
//   correct      equal to the question's answer (for a document without its
//                evidence, that is <none>);
//   abstained    <none> where the document holds the answer;
//   unsupported  a key or value the document never mentions, or a
//                malformed answer (not one value, one key or <none>);
//   wrong        any other answer: a value or key from the document that is
//                not the answer (a distractor's, the superseded one, ...).
// Composition cells also grade the two control questions (hop 1, hop 2) on
// the same documents.
//
// Deliberately free of LibTorch.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/longctx/document.h"

namespace posc::longctx {

// SplitMix64's finaliser: mixes one word into a seed (the documents of a
// cell, a probe's documents).
uint64_t mixSeed(uint64_t seed, uint64_t word);

struct Factors {
  std::vector<TaskType> tasks = {TaskType::Retrieval};
  std::vector<int> lengths = {256};
  std::vector<double> depths = {0.5};
  std::vector<int> distractors = {0};
  int templates = kTemplates;        // problem i uses template i mod templates
  int problems = 50;                 // documents per cell
  double absent_share = 0.0;         // retrieval, composition: share of documents without evidence
  bool near_duplicates = false;
  Authority authority = Authority::Latest;  // contradiction cells
  double fraction = 1.0;             // share of the cross product run (a seeded choice of cells)
  int train_max_length = 0;          // cells at or below it form the regression set
  uint64_t seed = 0;
};

struct Cell {
  TaskType task = TaskType::Retrieval;
  int length = 0;
  double depth = 0.0;
  int distractors = 0;
};
std::string describe(const Cell& cell);  // "retrieval length 1024 depth 0.25 distractors 16"

// The cells to run: the full cross product (tasks outermost, then lengths,
// depths, distractors), or for fraction < 1 a seeded choice of
// ceil(fraction x all) of them in the same order. Cells whose documents
// cannot be laid out (a length too short for its distractors) are left out
// and listed in `skipped`.
struct CellPlan {
  std::vector<Cell> cells;
  std::vector<std::pair<Cell, std::string>> skipped;  // and why
};
CellPlan planCells(const Factors& factors);

// The documents of one cell (see the header comment).
std::vector<DocumentSpec> cellDocuments(const Factors& factors, const Cell& cell);

enum class Grade : uint8_t { Correct, Abstained, Unsupported, Wrong };
const char* gradeName(Grade g);
Grade grade(const Document& doc, int question, const std::vector<int32_t>& generated);

// What an answerer returns for a batch of prompts.
struct Answers {
  std::vector<std::vector<int32_t>> generated;  // per prompt, the tokens it emitted (with <eos> if it came)
  double prefill_seconds = 0.0;                 // time spent reading the prompts
  double generation_seconds = 0.0;              // time spent emitting answer tokens
  int64_t peak_cache_bytes = 0;                 // the largest KV cache it held (0: none)
};
// Answers the prompts of (document, question) pairs, in order.
struct Prompt {
  const Document* document = nullptr;
  int question = 0;
};
using Answerer = std::function<Answers(const std::vector<Prompt>& batch)>;

struct CellResult {
  Cell cell;
  bool regression = false;  // length <= train_max_length
  int documents = 0;
  int correct = 0, abstained = 0, unsupported = 0, wrong = 0;
  double accuracy = 0.0, lower_bound = 0.0;  // Wilson 95% over documents
  // Composition: accuracy of the control questions on the same documents (NaN otherwise).
  double hop1_accuracy = 0.0, hop2_accuracy = 0.0;
  int64_t prefill_tokens = 0, generated_tokens = 0;
  double prefill_tokens_per_s = 0.0, generation_tokens_per_s = 0.0;  // 0 when unmeasured
  int64_t peak_cache_bytes = 0;
};

struct ProtocolOptions {
  int batch = 32;  // prompts per answerer call (one cell's prompts never mix with another's)
  // Called after each cell (progress lines).
  std::function<void(const CellResult&)> on_cell;
};

// Wilson score interval's lower bound for `successes` of `trials` at normal
// quantile z (1.96: 95%); 0 for no trials. The per-cell and pooled bounds.
double wilsonLowerBound(int successes, int trials, double z = plan::kWilsonZ95);

// Runs every planned cell.
std::vector<CellResult> runProtocol(const Factors& factors, const Answerer& answer,
                                    const ProtocolOptions& options = {});

// A release criterion: the Wilson lower bound of the cells that match its
// filters (task, and optionally one length, depth or distractor count),
// pooled over their documents, must reach `threshold`. A `.pos` file writes
// it (plan.h), so the plan owns it.
using Requirement = plan::DocumentRequirement;
struct RequirementResult {
  Requirement requirement;
  int cells = 0, documents = 0, correct = 0;
  double lower_bound = 0.0;
  bool met = false;  // false too when no cell matches
};
RequirementResult check(const Requirement& requirement, const std::vector<CellResult>& results);

}  // namespace posc::longctx
