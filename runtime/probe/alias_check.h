// The alias check: a prediction, from the plan alone and before any training,
// of the far aliases that the kernel probe finds in trained lookup heads.
//
// The kernel probe (kernel_probe.cpp) holds a trained head's real query and
// target key fixed and sweeps the key's column; the study found a comb of
// far teeth at 50-100% of the target's score for RoPE over column, and decay
// pulling them to zero. Which of the two an encoding gives is decided by its
// positional components, not by training: training picks the amplitudes of
// the pairs, the components fix what each pair can do with distance.
//
// So the check models a lookup head that has learned its target (the operand
// digit in the answer place's column, as in the kernel probe) from what the
// components let each rotation pair do: a pair contributes a c(d) + b s(d),
// c and s being the pair's response to the key's offset d (a cosine and sine
// of its angle, scaled by xPos, zeroed by key zeroing). Two models of the
// heights a and b:
//
//   fitted (the default): ridge-fitted to the ideal spike (1 at the target,
//     0 at the other offsets a training problem has), as the study's ladder
//     fit does: what training can shape, and what it leaves unconstrained
//     beyond the training distances;
//   aligned: every pair aligned on the target with the same weight
//     (initialisation draws every pair alike).
//
// The content score at the target is `target_score`. The check moves the key
// along its row exactly as the kernel probe does and applies every positional
// component of the plan: rotations by every channel (stretch at its evaluation
// value, xPos scales), key zeroing, and the chain of score terms with their
// initial
// parameters. Per head it reports the highest score in each window beyond the
// far distance as a fraction of the target's, and two exact properties of the
// head's score as a function of the channels, tested numerically:
//
//   translation-invariant: moving query and key together (position, column
//     and row shifted alike) changes no score of the sweep;
//   bounded: at keys 10^4 ... 10^12 columns before the target, no score
//     exceeds the largest magnitude within the sweep and the scores do not
//     drift decade after decade (as a logarithmic penalty does long before it
//     crosses that magnitude).
//
// Keys that follow the query in position are masked in attention, so the
// sweep stops at the last key that precedes the query (the kernel probe sweeps
// both sides; compare its windows on this side).
//
// Every layer starts from the same parameters, so the check is per head.
// Absolute embeddings enter the residual stream, not the score chain; a plan
// with them gets a note that the check does not see them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"

namespace posc::probe {

// Where the check looks: the query of answer place `place` in a problem of
// `length` digits per operand, its target the digit of row `operand` in the
// same column; the key swept over column offsets [sweep_begin, sweep_end).
enum class AliasModel : uint8_t { Fitted, Aligned };

struct AliasGeometry {
  int length = 0, place = 0, operand = 0;
  int64_t sweep_begin = 0, sweep_end = 0;
  int window = 10;
  int64_t far = 0;           // windows at |offset| >= far are far
  int64_t trained = 0;       // the largest column offset of a training problem (the fit's offsets)
  double target_score = 20;  // the modelled content score at the target
  AliasModel model = AliasModel::Fitted;
  double ridge = 1e-5;       // the fitted model's penalty (the study's ladder fit)
  uint64_t problem_seed = 0;
  std::string from;          // "kernel probe 'kernel'" or "defaults (...)"
};

// The kernel probe's geometry when the plan declares one (so that the check
// and the probe compare directly), else: the last answer place of the longest
// test problem, the key at every column of the first operand (offsets
// 1 - length .. 0: every distance a test problem has), windows of one column,
// far = the longest training length (no training problem has a larger column
// offset).
AliasGeometry aliasGeometry(const plan::ExperimentPlan& plan, double target_score);

struct HeadAliases {
  int head = 0;
  double target = 0;           // score at the target (after the score terms)
  double spike = 1;            // fitted model: the fitted kernel's height at the target (ideal 1)
  double near = 0;             // best window within the far distance, as a fraction of the target
  double far = 0;              // best window beyond it, as a fraction of the target
  int64_t far_at = 0;          // the offset of that far maximum
  double far_score = 0;        // its score (target - far_score: the margin in points)
  bool has_far = false;        // the sweep reaches beyond the far distance
  bool flat = false;           // the score is the same at every offset of the sweep
  bool translation_invariant = false;
  bool bounded = false;
};

// How the check reads a head: "far alias" (a far window at 0.5 or more of the
// target), "weak far alias" (0.05-0.5), "far scores suppressed" (below 0.05),
// "no positional signal" (flat), "no far windows"; with a target score that is
// not positive (fractions of it mean nothing), the margin in points.
std::string aliasVerdict(const HeadAliases& h);

// The head is flagged by `posc check`: a far window at `threshold` of the target.
// A flat score (no positional signal at all) is not flagged: it is not an alias
// of the target but the absence of a kernel, which `--aliases` reports.
// With a target score that is not positive, a far key that scores as high as
// the target is flagged.
inline bool isFarAlias(const HeadAliases& h, double threshold = 0.5) {
  if (!h.has_far || h.flat) return false;
  return h.target > 0 ? h.far >= threshold : h.far_score >= h.target;
}

struct AliasReport {
  AliasGeometry geometry;
  int64_t last_causal_offset = 0;  // keys beyond it follow the query (masked): not swept
  std::vector<HeadAliases> heads;
  std::vector<std::string> notes;
};

AliasReport checkAliases(const plan::ExperimentPlan& plan, const AliasGeometry& geometry);

}  // namespace posc::probe
