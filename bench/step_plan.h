// The models the CPU benchmarks time, as plans built directly (no front end),
// so that the C++ benchmarks and the Python peer (bench/peer/gpt.py) describe
// the same shapes:
//   small = 2 layers x 64 wide, 4 heads (the quick start's size);
//   study = 6 layers x 384 wide, 6 heads (the study's, 10.6M parameters).
// Encodings: "nope" (no positional component), "rope2d" (rows on the first
// half of each head's rotation pairs, columns on the second half, base 10000)
// and "rope2d_decay" (2D RoPE and the study's decay term, bench/decay_attention.h).
// Training batches are 64 addition problems of 1 to 10 digits (about 34 tokens).
#pragma once

#include <string>

#include "bench/decay_attention.h"
#include "compiler/plan/plan.h"

namespace posc::bench {

inline plan::ExperimentPlan makePlan(bool study_size, const std::string& encoding) {
  plan::ExperimentPlan p;
  p.name = "bench";
  p.task.train_min_digits = 1;
  p.task.train_max_digits = 10;  // sequences of about 40 tokens, as in the study
  p.model.layers = study_size ? 6 : 2;
  p.model.width = study_size ? 384 : 64;
  p.model.heads = study_size ? 6 : 4;
  p.model.head_dim = p.model.width / p.model.heads;
  p.model.mlp_hidden = 4 * p.model.width;
  int pairs = p.model.head_dim / 2;
  if (encoding != "nope") {
    plan::Rotation row, col;
    row.channel = plan::Channel::Row;
    row.pair_begin = 0;
    row.pair_end = pairs / 2;
    col.channel = plan::Channel::Column;
    col.pair_begin = pairs / 2;
    col.pair_end = pairs;
    p.attention.rotations = {row, col};
  }
  if (encoding == "rope2d_decay") {
    plan::AttentionPlan decay = decayAttention(p.model.heads, /*learned=*/false);
    p.attention.params = decay.params;
    p.attention.score_terms = decay.score_terms;
  }
  return p;
}

}  // namespace posc::bench
