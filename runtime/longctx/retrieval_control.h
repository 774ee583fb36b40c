// The retrieval control: the analytic retrieval head (retrieval_head.h) run
// over the protocol's retrieval cells, so a positional bias can be read as
// the evidence probability it leaves a head of a given content margin, at
// every context length, evidence depth and distractor count, before any
// training. With no bias every document gives the law 1 / (1 + N e^(-m));
// a bias that prefers recent keys (ALiBi's -s d) lowers it for deep
// evidence and raises it for evidence near the question, and aliases of a
// periodic kernel pull mass onto distractors at the aliased distances.
//
// Per length and depth, the effective margin (fitMargin over the cells'
// (N, mean mass)) condenses that into one number: the margin a bias-free
// head would need to do as well. Its residual says how far the cells are
// from the law's shape in N (0 without a bias).
#pragma once

#include <vector>

#include "runtime/analysis/kernel.h"
#include "runtime/longctx/protocol.h"
#include "runtime/longctx/protocol_report.h"
#include "runtime/longctx/retrieval_head.h"

namespace posc::longctx {

// Mean evidence mass per planned retrieval cell of `factors` (its tasks are
// ignored: every cell is a retrieval cell, on the protocol's documents).
// Documents without evidence are not generated (absent_share is ignored).
std::vector<PooledValue> retrievalControl(Factors factors, double margin, const analysis::KernelEvaluator* bias);

struct EffectiveMargin {
  int length = 0;
  double depth = 0.0;
  MarginFit fit;
};
// The effective margin per (length, depth), fitted over the distractor counts
// of its cells (those with N >= 1 and 0 < p < 1).
std::vector<EffectiveMargin> effectiveMargins(const std::vector<PooledValue>& cells);

}  // namespace posc::longctx
