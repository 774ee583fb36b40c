// The long-context document generator: the tasks' evidence, questions and
// answers, placed by the layout (document.h).
#include "runtime/longctx/document.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "runtime/longctx/layout.h"
#include "runtime/longctx/statements.h"
#include "runtime/task/python_random.h"

namespace posc::longctx {
namespace {

using task::PythonRandom;

int roundOffset(double fraction, int room) { return static_cast<int>(std::lround(fraction * room)); }

void validate(const DocumentSpec& spec) {
  if (spec.template_index < 0 || spec.template_index >= kTemplates)
    throw std::invalid_argument(fmt::format("template {} does not exist: templates are 0 to {}", spec.template_index,
                                            kTemplates - 1));
  if (!(spec.depth >= 0.0 && spec.depth <= 1.0))
    throw std::invalid_argument(fmt::format("depth {} is outside [0, 1]", spec.depth));
  if (spec.distance && *spec.distance < 0)
    throw std::invalid_argument(fmt::format("distance {} is negative", *spec.distance));
  if (spec.distractors < 0) throw std::invalid_argument(fmt::format("{} distractors", spec.distractors));
  if (!spec.evidence_present && !canLackEvidence(spec.task))
    throw std::invalid_argument(fmt::format("a {} document always holds its evidence (only retrieval and "
                                            "composition ask about keys the document never states)",
                                            taskTypeName(spec.task)));
  if (!spec.filler) {
    if (spec.task != TaskType::Retrieval)
      throw std::invalid_argument(fmt::format("a {} document needs filler: documents without filler are retrieval "
                                              "documents only",
                                              taskTypeName(spec.task)));
    if (spec.distance)
      throw std::invalid_argument("a document without filler places its evidence by depth, not distance");
    return;  // the length follows from the statements
  }
  if (spec.length < minimumLength(spec))
    throw std::invalid_argument(fmt::format("length {} is too short for a {} document with {} distractors: it needs "
                                            "at least {} tokens",
                                            spec.length, taskTypeName(spec.task), spec.distractors,
                                            minimumLength(spec)));
}

}  // namespace

int minimumLength(const DocumentSpec& spec) {
  int templ = std::clamp(spec.template_index, 0, kTemplates - 1);
  if (!spec.filler)  // retrieval: the statements packed, no slack
    return 1 + headerLength(spec) + questionLength(spec) +
           ((spec.evidence_present ? 1 : 0) + std::max(0, spec.distractors)) * statementLength(templ, false, false);
  int evidence = 0;
  switch (spec.task) {
    case TaskType::Retrieval: evidence = spec.evidence_present ? statementLength(templ, false, false) : 0; break;
    case TaskType::Composition:
      evidence = (spec.evidence_present ? statementLength(templ, true, false) : 0) + statementLength(templ, false, false);
      break;
    case TaskType::Contradiction: evidence = 2 * statementLength(templ, false, false) + 1; break;
    case TaskType::Order: evidence = 2 * statementLength(templ, false, false); break;
  }
  int distractor = spec.task == TaskType::Composition ? longestStatement(templ) - 1 : statementLength(templ, false, false);
  // Pieces placed at their depth split the body's free room into one more
  // region than there are pieces; beside each piece up to distractor - 1
  // tokens may be too few for a distractor, so that much more room makes
  // every depth fit.
  int anchored = 0;
  switch (spec.task) {
    case TaskType::Retrieval: anchored = spec.evidence_present ? 1 : 0; break;
    case TaskType::Composition: anchored = spec.evidence_present ? 2 : 1; break;
    case TaskType::Contradiction: anchored = 2; break;
    case TaskType::Order: anchored = 1; break;
  }
  const int slack = spec.distractors > 0 ? anchored * (distractor - 1) : 0;
  return 1 + headerLength(spec) + questionLength(spec) + evidence + std::max(0, spec.distractors) * distractor + slack;
}

Document generate(const DocumentSpec& spec) {
  validate(spec);
  PythonRandom random(spec.seed);
  KeyPool rng(random);
  const int templ = spec.template_index;
  const int header = headerLength(spec);
  const int length = spec.filler ? spec.length : minimumLength(spec);  // without filler: what the statements take
  const int body = length - 1 - header - questionLength(spec);
  auto value = [&] { return Object{std::nullopt, rng.draw(kValues)}; };
  auto otherValue = [&](int not_this) {
    int v = rng.draw(kValues - 1);
    return Object{std::nullopt, v >= not_this ? v + 1 : v};
  };

  // The primary piece's offset in a body with `room` = body - its size.
  auto primaryOffset = [&](int size) {
    int room = body - size;
    if (spec.distance) {
      if (*spec.distance > room)
        throw std::invalid_argument(fmt::format("distance {} is past the start of the body ({} tokens before the "
                                                "question at most)",
                                                *spec.distance, room));
      return room - *spec.distance;
    }
    // Without filler the evidence is one of the packed statements (all of
    // its length in retrieval): the round(depth x distractors)-th.
    if (!spec.filler) return size * roundOffset(spec.depth, spec.distractors);
    return roundOffset(spec.depth, room);
  };

  Document doc;
  doc.spec = spec;
  doc.spec.length = length;
  std::vector<Placed> anchored;
  Key queried = rng.fresh();
  std::vector<Question> questions;
  int primary = -1;  // index into anchored of the evidence span

  switch (spec.task) {
    case TaskType::Retrieval: {
      Object v = value();
      if (spec.evidence_present) {
        Span s = statementSpan(templ, queried, v, StatementRole::Evidence, false);
        int at = primaryOffset(s.size());
        anchored.push_back(Placed{at, std::move(s)});
        primary = 0;
        questions.push_back(Question{keyQuestion(templ, queried), {token::kFirstValue + v.value, token::kEos}, "main"});
      } else {
        questions.push_back(Question{keyQuestion(templ, queried), {token::kNone, token::kEos}, "main"});
      }
      break;
    }
    case TaskType::Composition: {
      Key middle = rng.fresh();
      Object c = value();
      Span hop2 = statementSpan(templ, middle, c, StatementRole::Evidence, false);
      std::vector<int32_t> c_answer = {token::kFirstValue + c.value, token::kEos};
      if (spec.evidence_present) {
        Span hop1 = statementSpan(templ, queried, Object{middle, 0}, StatementRole::Evidence, false);
        int at1 = primaryOffset(hop1.size());
        // The second hop sits half a body away from the first (wrapping).
        double first_fraction = body > hop1.size() ? double(at1) / (body - hop1.size()) : 0.0;
        int at2 = roundOffset(std::fmod(first_fraction + 0.5, 1.0), body - hop2.size());
        if (at2 < at1 + hop1.size() && at1 < at2 + hop2.size())  // overlap in a very short body
          at2 = at1 + hop1.size() + hop2.size() <= body ? at1 + hop1.size() : at1 - hop2.size();
        if (at2 < 0) throw std::invalid_argument("the document is too short for the two hops of a composition");
        anchored.push_back(Placed{at1, std::move(hop1)});
        anchored.push_back(Placed{at2, std::move(hop2)});
        primary = 0;
        auto b = keyTokens(middle);
        questions.push_back(Question{chainQuestion(templ, queried), c_answer, "main"});
        questions.push_back(Question{keyQuestion(templ, queried), {b[0], b[1], token::kEos}, "hop 1"});
      } else {
        // The first hop is missing: a -> ? has no answer; b -> c still stands.
        int at2 = primaryOffset(hop2.size());
        anchored.push_back(Placed{at2, std::move(hop2)});
        questions.push_back(Question{chainQuestion(templ, queried), {token::kNone, token::kEos}, "main"});
        questions.push_back(Question{keyQuestion(templ, queried), {token::kNone, token::kEos}, "hop 1"});
      }
      questions.push_back(Question{keyQuestion(templ, middle), c_answer, "hop 2"});
      break;
    }
    case TaskType::Contradiction: {
      Object holds = value();
      Object other = otherValue(holds.value);
      bool marked = spec.authority == Authority::Correction;
      Span authoritative = statementSpan(templ, queried, holds, StatementRole::Evidence, marked);
      Span superseded = statementSpan(templ, queried, other, StatementRole::Superseded, false);
      int a = primaryOffset(authoritative.size());
      int s = superseded.size();
      // Where the superseded statement may start, given the rule; the
      // authoritative one moves just enough to leave room when its declared
      // place has none on the side the rule needs.
      if (spec.authority == Authority::Latest && a < s) a = s;
      if (spec.authority == Authority::Earliest && a + authoritative.size() > body - s) a = body - s - authoritative.size();
      std::vector<int> starts;
      if (spec.authority != Authority::Earliest)
        for (int x = 0; x + s <= a; ++x) starts.push_back(x);
      if (spec.authority != Authority::Latest)
        for (int x = a + authoritative.size(); x + s <= body; ++x) starts.push_back(x);
      if (starts.empty()) throw std::invalid_argument("the document is too short for two contradicting statements");
      int at = starts[static_cast<size_t>(rng.draw(static_cast<int>(starts.size())))];
      anchored.push_back(Placed{a, std::move(authoritative)});
      anchored.push_back(Placed{at, std::move(superseded)});
      primary = 0;
      questions.push_back(Question{keyQuestion(templ, queried), {token::kFirstValue + holds.value, token::kEos}, "main"});
      break;
    }
    case TaskType::Order: {
      Key second = rng.fresh();
      Span first_statement = statementSpan(templ, queried, value(), StatementRole::Evidence, false);
      Span second_statement = statementSpan(templ, second, value(), StatementRole::Evidence, false);
      int gap = rng.draw(kOrderGap + 1);
      // The gap takes only room the distractors do not need (minimumLength).
      const int d = statementLength(templ, false, false);
      const int reserved = spec.distractors > 0 ? spec.distractors * d + (d - 1) : 0;
      int room = body - first_statement.size() - second_statement.size() - reserved;
      gap = std::min(gap, std::max(0, room));
      Span pair = std::move(first_statement);
      for (int i = 0; i < gap; ++i) pair.tokens.push_back(token::kFirstFiller + rng.draw(kFillerWords));
      append(pair, second_statement);
      int at = primaryOffset(pair.size());
      anchored.push_back(Placed{at, std::move(pair)});
      primary = 0;
      bool swap = rng.draw(2) == 1;
      auto k = keyTokens(queried);
      questions.push_back(Question{swap ? orderQuestion(templ, second, queried) : orderQuestion(templ, queried, second),
                                   {k[0], k[1], token::kEos}, "main"});
      break;
    }
  }
  int primary_offset = primary >= 0 ? anchored[static_cast<size_t>(primary)].offset : -1;

  // Distractors: statements about other keys (near duplicates of the queried
  // key when asked), in the document's template.
  std::vector<Span> distractors;
  for (int i = 0; i < spec.distractors; ++i) {
    Key k = spec.near_duplicates ? rng.nearDuplicate(queried, i % 2) : rng.fresh();
    Object o = value();
    if (spec.task == TaskType::Composition && rng.draw(2) == 1) o = Object{rng.fresh(), 0};
    distractors.push_back(statementSpan(templ, k, o, StatementRole::Distractor, false));
  }

  Span laid = layBody(body, std::move(anchored), std::move(distractors), rng);

  int start = 1 + header;
  doc.context.push_back(token::kBos);
  if (header) {
    int32_t rule = spec.authority == Authority::Latest     ? token::kLatest
                   : spec.authority == Authority::Earliest ? token::kEarliest
                                                           : token::kCorrectionRule;
    doc.context.insert(doc.context.end(), {token::kRule, rule, token::kStop});
  }
  doc.context.insert(doc.context.end(), laid.tokens.begin(), laid.tokens.end());
  for (Statement& st : laid.statements) shift(st, start);
  doc.statements = std::move(laid.statements);
  doc.questions = std::move(questions);
  doc.evidence_begin = primary_offset >= 0 ? start + primary_offset : -1;
  return doc;
}

std::vector<int32_t> Document::prompt(int question) const {
  std::vector<int32_t> p = context;
  const auto& q = questions.at(static_cast<size_t>(question)).tokens;
  p.insert(p.end(), q.begin(), q.end());
  return p;
}

std::vector<TokenClass> Document::classes(int question) const {
  std::vector<TokenClass> out;
  for (int32_t t : prompt(question)) out.push_back(tokenClass(t));
  return out;
}

std::vector<int32_t> Document::segments(int question) const {
  const auto& q = questions.at(static_cast<size_t>(question)).tokens;
  std::vector<int32_t> out(context.size() + q.size(), 0);
  int32_t n = 0;
  for (const Statement& st : statements) {
    ++n;
    for (int i = st.begin; i < st.end; ++i) out[static_cast<size_t>(i)] = n;
  }
  for (size_t i = context.size(); i < out.size(); ++i) out[i] = n + 1;
  return out;
}

}  // namespace posc::longctx
