// The factorial protocol with scripted answerers whose every grade is known:
// cells and their documents, grading, pooling, bounds, throughput, release
// criteria, tables and heatmaps.
#include "runtime/longctx/protocol.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>

#include "runtime/longctx/protocol_report.h"
#include "runtime/longctx/retrieval_head.h"

namespace posc::longctx {
namespace {

Factors smallGrid() {
  Factors f;
  f.tasks = {TaskType::Retrieval, TaskType::Composition, TaskType::Contradiction, TaskType::Order};
  f.lengths = {64, 128};
  f.depths = {0.0, 0.5, 1.0};
  f.distractors = {0, 4};
  f.problems = 12;
  f.absent_share = 0.25;
  f.train_max_length = 64;
  f.seed = 3;
  return f;
}

// Answers every question as the document says.
Answers oracle(const std::vector<Prompt>& batch) {
  Answers a;
  for (const Prompt& p : batch) a.generated.push_back(p.document->questions[static_cast<size_t>(p.question)].answer);
  return a;
}

Answers abstainer(const std::vector<Prompt>& batch) {
  Answers a;
  for (size_t i = 0; i < batch.size(); ++i) a.generated.push_back({token::kNone, token::kEos});
  return a;
}

TEST(LongContextProtocol, TheOracleIsAlwaysRight) {
  Factors f = smallGrid();
  auto results = runProtocol(f, oracle);
  ASSERT_EQ(results.size(), 4u * 2 * 3 * 2);
  for (const CellResult& r : results) {
    EXPECT_EQ(r.documents, 12);
    EXPECT_EQ(r.correct, 12) << describe(r.cell);
    EXPECT_DOUBLE_EQ(r.accuracy, 1.0);
    EXPECT_DOUBLE_EQ(r.lower_bound, wilsonLowerBound(12, 12));
    EXPECT_EQ(r.regression, r.cell.length == 64);
    if (r.cell.task == TaskType::Composition) {
      EXPECT_DOUBLE_EQ(r.hop1_accuracy, 1.0);
      EXPECT_DOUBLE_EQ(r.hop2_accuracy, 1.0);
    } else {
      EXPECT_TRUE(std::isnan(r.hop1_accuracy));
    }
  }
}

TEST(LongContextProtocol, AbstainingIsRightOnlyWithoutEvidence) {
  Factors f = smallGrid();
  f.tasks = {TaskType::Retrieval, TaskType::Order};
  auto results = runProtocol(f, abstainer);
  for (const CellResult& r : results) {
    // A quarter of the retrieval documents lack their evidence: 3 of 12.
    int absent = r.cell.task == TaskType::Retrieval ? 3 : 0;
    EXPECT_EQ(r.correct, absent) << describe(r.cell);
    EXPECT_EQ(r.abstained, 12 - absent);
    EXPECT_EQ(r.unsupported + r.wrong, 0);
  }
}

TEST(LongContextProtocol, GradesUnsupportedAndWrongAnswers) {
  DocumentSpec spec;
  spec.length = 200;
  spec.distractors = 5;
  spec.seed = 8;
  Document doc = generate(spec);
  std::set<int32_t> in_doc(doc.context.begin(), doc.context.end());
  int32_t absent_value = token::kFirstValue;
  while (in_doc.count(absent_value)) ++absent_value;
  EXPECT_EQ(grade(doc, 0, {absent_value, token::kEos}), Grade::Unsupported);
  EXPECT_EQ(grade(doc, 0, {token::kIs, token::kEos}), Grade::Unsupported);        // not an answer
  EXPECT_EQ(grade(doc, 0, {token::kFirstFiller}), Grade::Unsupported);           // no <eos>, still graded
  EXPECT_EQ(grade(doc, 0, {token::kNone, token::kEos}), Grade::Abstained);
  EXPECT_EQ(grade(doc, 0, doc.questions[0].answer), Grade::Correct);
  // A distractor's value: in the document, not the answer.
  for (const Statement& st : doc.statements)
    if (st.role == StatementRole::Distractor) {
      int32_t v = doc.context[static_cast<size_t>(st.end - 2)];  // template 0: kx ky is v .
      if (v != doc.questions[0].answer[0]) {
        EXPECT_EQ(grade(doc, 0, {v, token::kEos}), Grade::Wrong);
      }
    }
  // Tokens after <eos> do not count.
  auto trailing = doc.questions[0].answer;
  trailing.push_back(token::kFirstFiller);
  EXPECT_EQ(grade(doc, 0, trailing), Grade::Correct);
}

TEST(LongContextProtocol, CellsHaveTheirOwnDocuments) {
  Factors f = smallGrid();
  std::set<uint64_t> seeds;
  int documents = 0;
  for (const Cell& c : planCells(f).cells)
    for (const DocumentSpec& s : cellDocuments(f, c)) {
      seeds.insert(s.seed);
      ++documents;
      EXPECT_EQ(s.length, c.length);
      EXPECT_EQ(s.distractors, c.distractors);
    }
  EXPECT_EQ(static_cast<int>(seeds.size()), documents);
  // Adding a level to one factor leaves the other cells' documents as they were.
  Cell cell{TaskType::Order, 128, 0.5, 4};
  auto before = cellDocuments(f, cell);
  f.lengths.push_back(1024);
  f.depths.push_back(0.25);
  auto after = cellDocuments(f, cell);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].seed, after[i].seed);
    EXPECT_EQ(before[i].template_index, static_cast<int>(i % kTemplates));
  }
}

TEST(LongContextProtocol, FractionChoosesASeededSubsetInGridOrder) {
  Factors f = smallGrid();
  auto all = planCells(f).cells;
  f.fraction = 0.3;
  auto some = planCells(f).cells;
  EXPECT_EQ(some.size(), static_cast<size_t>(std::ceil(0.3 * all.size())));
  EXPECT_EQ(describe(planCells(f).cells[0]), describe(some[0]));  // deterministic
  size_t at = 0;  // a subsequence of the full grid
  for (const Cell& c : some) {
    while (at < all.size() && describe(all[at]) != describe(c)) ++at;
    EXPECT_LT(at, all.size()) << describe(c);
  }
  f.seed = 4;
  auto other = planCells(f).cells;
  bool differs = false;
  for (size_t i = 0; i < other.size(); ++i) differs |= describe(other[i]) != describe(some[i]);
  EXPECT_TRUE(differs);
}

TEST(LongContextProtocol, SkipsCellsTooShortForTheirDistractors) {
  Factors f;
  f.lengths = {32, 256};
  f.distractors = {0, 30};
  CellPlan plan = planCells(f);
  ASSERT_EQ(plan.cells.size(), 3u);  // 32 with 30 distractors cannot be laid out
  ASSERT_EQ(plan.skipped.size(), 1u);
  EXPECT_EQ(plan.skipped[0].first.length, 32);
  EXPECT_NE(plan.skipped[0].second.find("at least"), std::string::npos);
}

// Right exactly when the evidence ends within the last 60 prompt tokens: a
// recency-limited reader, whose pooled accuracy per (length, depth) the test
// derives document by document.
Answers recent(const std::vector<Prompt>& batch) {
  Answers a;
  for (const Prompt& p : batch) {
    const Document& d = *p.document;
    bool sees = d.evidence_begin >= 0 && static_cast<int>(d.context.size()) - d.evidence_begin <= 60;
    a.generated.push_back(sees ? d.questions[0].answer : std::vector<int32_t>{token::kNone, token::kEos});
  }
  a.prefill_seconds = 0.5;
  a.generation_seconds = 0.25;
  a.peak_cache_bytes = 1000;
  return a;
}

TEST(LongContextProtocol, HeatmapsPoolCellsAndCarryTheirValues) {
  Factors f;
  f.lengths = {64, 256};
  f.depths = {0.0, 1.0};
  f.distractors = {0, 2};
  f.problems = 10;
  f.seed = 9;
  ProtocolOptions options;
  options.batch = 4;
  auto results = runProtocol(f, recent, options);
  // Expected pooled accuracy at (length, depth), from the documents themselves.
  auto expected = [&](int length, double depth) {
    int correct = 0, documents = 0;
    for (int n : f.distractors)
      for (const DocumentSpec& s : cellDocuments(f, Cell{TaskType::Retrieval, length, depth, n})) {
        Document d = generate(s);
        correct += static_cast<int>(d.context.size()) - d.evidence_begin <= 60;
        ++documents;
      }
    return double(correct) / documents;
  };
  auto maps = accuracyHeatmaps(results);
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[0].name, "retrieval_accuracy_length_x_depth");
  const plot::Heatmap& m = maps[0].map;
  ASSERT_EQ(m.rows, (std::vector<std::string>{"64", "256"}));
  ASSERT_EQ(m.columns, (std::vector<std::string>{"0", "1"}));
  EXPECT_DOUBLE_EQ(m.values[0][0], expected(64, 0.0));
  EXPECT_DOUBLE_EQ(m.values[1][0], expected(256, 0.0));
  EXPECT_DOUBLE_EQ(m.values[1][1], 1.0);  // evidence right before the question
  EXPECT_DOUBLE_EQ(m.values[1][0], 0.0);  // 200 tokens back
  std::string svg = plot::renderHeatmapSvg(m);
  std::regex cell("data-row=\"256\" data-column=\"1\" data-value=\"([0-9.]+)\"");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(svg, match, cell));
  EXPECT_EQ(std::stod(match[1]), 1.0);
  // Throughput: tokens over the seconds the answerer reported, per cell.
  const CellResult& r = results[0];
  int calls = (r.documents + options.batch - 1) / options.batch;
  EXPECT_DOUBLE_EQ(r.prefill_tokens_per_s, double(r.documents * 64) / (0.5 * calls));
  EXPECT_DOUBLE_EQ(r.generation_tokens_per_s, double(r.generated_tokens) / (0.25 * calls));
  EXPECT_EQ(r.peak_cache_bytes, 1000);
  // The long-format table: one row per cell.
  plot::Table t = cellTable(results);
  EXPECT_EQ(t.rows.size(), results.size());
  EXPECT_EQ(t.columns[8], "lower_bound_95");
}

TEST(LongContextProtocol, RequirementsPoolTheirCells) {
  Factors f = smallGrid();
  f.tasks = {TaskType::Retrieval};
  auto results = runProtocol(f, oracle);
  Requirement req;
  req.length = 128;
  req.threshold = 0.9;
  req.text = "lower_bound(retrieval, length = 128) >= 0.9";
  RequirementResult v = check(req, results);
  EXPECT_EQ(v.cells, 6);
  EXPECT_EQ(v.documents, 72);
  EXPECT_DOUBLE_EQ(v.lower_bound, wilsonLowerBound(72, 72));  // 0.9493...
  EXPECT_TRUE(v.met);
  req.threshold = 0.96;
  EXPECT_FALSE(check(req, results).met);
  req.length = 4096;
  RequirementResult none = check(req, results);
  EXPECT_EQ(none.cells, 0);
  EXPECT_FALSE(none.met);
  plot::Table t = requirementTable({v, none});
  EXPECT_EQ(t.rows[0].back(), "met");
  EXPECT_EQ(t.rows[1].back(), "no matching cell");
}

TEST(Heatmap, MissingCellsAndBadShapes) {
  plot::Heatmap m;
  m.rows = {"a"};
  m.columns = {"x", "y"};
  m.values = {{0.5, std::nan("")}};
  std::string svg = plot::renderHeatmapSvg(m);
  EXPECT_NE(svg.find("class=\"cell missing\" data-row=\"a\" data-column=\"y\""), std::string::npos);
  EXPECT_NE(svg.find("data-value=\"0.5\""), std::string::npos);
  m.values = {{0.5}};
  EXPECT_THROW(plot::renderHeatmapSvg(m), std::invalid_argument);
}

}  // namespace
}  // namespace posc::longctx
