// The analytic retrieval head and the distractor law it obeys.
//
// A retrieval head at the last prompt token (the asked key's second half)
// looks for the statement whose key matches the question's. Constructed
// analytically: its query is the queried key as a one-hot vector over the
// key space scaled by a margin m, each statement's second key token carries
// its key as a one-hot key vector, and every other token is outside the
// head's reach (score -inf, as a kind mask would make it). The evidence key
// then scores m and each of N distractor keys 0, so softmax puts
//
//     p(evidence) = e^m / (e^m + N) = 1 / (1 + N e^(-m))
//
// on the evidence: the attentional limit of the long-context document, the
// law of the analytic controls (analysis::targetProbability, whose explicit
// computation on a real document this is). Fitting
// measured masses to that law gives the margin a trained head achieves
// (fitMargin), the number to compare across lengths and encodings.
//
// Float64 throughout. Deliberately free of LibTorch.
#pragma once

#include <utility>
#include <vector>

#include "runtime/analysis/kernel.h"
#include "runtime/longctx/document.h"

namespace posc::longctx {

struct HeadAttention {
  std::vector<double> weights;  // over the prompt of question 0, summing to 1
  double evidence_mass = 0.0;   // on the key tokens of statements about the queried key
  int competitors = 0;          // key tokens of statements about other keys
};

// Runs the analytic head with margin m over a document's main prompt (the
// queried key is the one question 0 asks; order documents have none and are
// refused with std::invalid_argument). With a positional bias b, a kernel of
// the distance d from the query (the last prompt token) back to a key token,
// each key token scores m [key = asked] + b(d): the content margin meets the
// positional components' preference, as in a trained head whose bias
// depends on distance alone (ALiBi, a decay written as a score bias, a
// kernel of rotary frequencies).
HeadAttention retrievalHeadAttention(const Document& doc, double margin,
                                     const analysis::KernelEvaluator* bias = nullptr);

// The share of a head's statement attention that lands on the evidence:
// `weights` is its attention at the last prompt token over the main prompt;
// the result is the mass on the statements about the asked key over the
// mass on every statement. For the analytic head this is evidence_mass (its
// attention is on key tokens only). A trained head may read any token of a
// statement (the key, or the value after it) and also attends outside the
// statements; the share sets that aside, so it is the probability the law
// 1 / (1 + N e^(-m)) describes. NaN when the head puts no mass on any
// statement. Throws std::invalid_argument for a document without a single
// asked key, or weights of another length.
double evidenceShare(const Document& doc, const std::vector<double>& weights);

struct MarginFit {
  double margin = 0.0;        // least-squares m over the points used
  double rms_residual = 0.0;  // of logit(p) + log N - m
  int points = 0;             // samples with N >= 1 and 0 < p < 1
};
// Fits m to samples (N, measured evidence mass): each sample with N >= 1 and
// 0 < p < 1 gives m = log(N p / (1 - p)) (analysis::marginFor); the fit is
// their mean. Samples
// outside that range carry no information about m and are skipped.
MarginFit fitMargin(const std::vector<std::pair<int, double>>& samples);

}  // namespace posc::longctx
