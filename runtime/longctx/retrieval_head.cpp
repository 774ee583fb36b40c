// The analytic retrieval head, the distractor law and its fit
// (retrieval_head.h).
#include "runtime/longctx/retrieval_head.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/analysis/controls.h"

namespace posc::longctx {
namespace {

// The key a key question asks: its last two tokens.
Key askedKey(const Question& q) {
  const auto& t = q.tokens;
  const size_t n = t.size();
  if (n < 3 || tokenClass(t[n - 2]) != TokenClass::Key || tokenClass(t[n - 3]) == TokenClass::Key)
    throw std::invalid_argument("the main question asks no single key (order documents have two)");
  return Key{t[n - 2] - token::kFirstKeyHalf, t[n - 1] - token::kSecondKeyHalf};
}

}  // namespace

HeadAttention retrievalHeadAttention(const Document& doc, double margin, const analysis::KernelEvaluator* bias) {
  if (doc.questions.empty() || doc.spec.task == TaskType::Order)
    throw std::invalid_argument("the retrieval head needs a question about one key (order documents have two)");
  const Key asked = askedKey(doc.questions[0]);
  const size_t length = doc.context.size() + doc.questions[0].tokens.size();  // of the main prompt
  constexpr double kMasked = -std::numeric_limits<double>::infinity();
  std::vector<double> scores(length, kMasked);
  // Distances from the query back to each statement's key token, and the
  // positional bias there.
  const double query = static_cast<double>(length - 1);
  std::vector<double> distances, biases(doc.statements.size(), 0.0);
  for (const Statement& st : doc.statements) distances.push_back(query - st.key_token);
  if (bias && !distances.empty()) bias->evaluate(distances.data(), biases.data(), distances.size());
  for (size_t i = 0; i < biases.size(); ++i)
    if (std::isnan(biases[i]) || biases[i] == std::numeric_limits<double>::infinity())
      throw std::invalid_argument(fmt::format("the positional bias is {} at distance {:g}", biases[i], distances[i]));
  // query . key: margin on the one-hot coordinate of the asked key.
  for (size_t i = 0; i < doc.statements.size(); ++i) {
    const Statement& st = doc.statements[i];
    scores[static_cast<size_t>(st.key_token)] = (st.key == asked ? margin : 0.0) + biases[i];
  }

  double top = kMasked;
  for (double s : scores) top = std::max(top, s);
  HeadAttention out;
  out.weights.assign(length, 0.0);
  if (top == kMasked) return out;  // nothing to attend: no statements
  double total = 0.0;
  for (size_t i = 0; i < scores.size(); ++i)
    if (scores[i] != kMasked) total += out.weights[i] = std::exp(scores[i] - top);
  for (double& w : out.weights) w /= total;
  for (const Statement& st : doc.statements) {
    if (st.key == asked)
      out.evidence_mass += out.weights[static_cast<size_t>(st.key_token)];
    else
      ++out.competitors;
  }
  return out;
}

double evidenceShare(const Document& doc, const std::vector<double>& weights) {
  if (doc.questions.empty() || doc.spec.task == TaskType::Order)
    throw std::invalid_argument("the evidence share needs a question about one key (order documents have two)");
  const Key asked = askedKey(doc.questions[0]);
  if (weights.size() != doc.context.size() + doc.questions[0].tokens.size())
    throw std::invalid_argument(fmt::format("attention over {} tokens for a prompt of {}", weights.size(),
                                            doc.context.size() + doc.questions[0].tokens.size()));
  double evidence = 0.0, statements = 0.0;
  for (const Statement& st : doc.statements) {
    double mass = 0.0;
    for (int i = st.begin; i < st.end; ++i) mass += weights[static_cast<size_t>(i)];
    statements += mass;
    if (st.key == asked) evidence += mass;
  }
  return statements > 0.0 ? evidence / statements : std::numeric_limits<double>::quiet_NaN();
}

MarginFit fitMargin(const std::vector<std::pair<int, double>>& samples) {
  MarginFit fit;
  std::vector<double> margins;
  for (const auto& [n, p] : samples)
    if (n >= 1 && p > 0.0 && p < 1.0) margins.push_back(analysis::marginFor(p, n));
  fit.points = static_cast<int>(margins.size());
  if (margins.empty()) return fit;
  for (double m : margins) fit.margin += m;
  fit.margin /= double(margins.size());
  double squares = 0.0;
  for (double m : margins) squares += (m - fit.margin) * (m - fit.margin);
  fit.rms_residual = std::sqrt(squares / double(margins.size()));
  return fit;
}

}  // namespace posc::longctx
