// `posc emit flex`: an experiment's attention as a self-contained Python
// module for PyTorch's FlexAttention.
//
// FlexAttention (torch.nn.attention.flex_attention, PyTorch >= 2.5) takes a
// `score_mod(score, b, h, q_idx, kv_idx)` applied to every query-key score and
// a `mask_mod(b, h, q_idx, kv_idx)`; both see only indices, so per-token data
// is captured as tensors indexed by `b` and the index. The module holds:
//
//   - the plan's score terms in order, each one formula of the expression
//     language written as torch operations, with its exempt key and query
//     kinds and its heads as a `torch.where`. Each operation is written as the
//     `python` column of its row in compiler/expr/ops.def says: the torch
//     operations of its `tensor` column, posc's tensor path
//     (runtime/model/score_formula.cpp), so values and autograd's gradients
//     are the tensor path's (comparisons give 1.0 / 0.0, min and max give a
//     tie's gradient to their first operand); a table read rounds its index
//     down and clamps it, NaN reads NaN, as there;
//   - `make_score_mod(channels, params)`: channels an integer tensor (4, B, L)
//     of position, column, row and kind (docs/language.md), params the score
//     parameters by name (their initial values from `initial_params()`, or the
//     trained ones from final.safetensors under `posc.score_params.<name>`);
//   - `mask_mod`: the causal mask;
//   - `apply_rotary(q, k, channels)`: the plan's rotations (each pair's
//     inverse frequency written out, stretch at its evaluation value, xPos
//     scales) and key zeroing, for q and k of shape (B, H, L, head_dim) with
//     pairs on adjacent dimensions, as posc rotates them before the scores.
//
//   - `finish(out, lse, null_value)` and `normalise(scores)`: softmax1 and the
//     null slot add terms exp(0) to the normaliser, which no score_mod can;
//     flex_attention's output and logsumexp (return_lse=True) give posc's
//     output exactly, and `normalise` is the same on a dense score tensor.
//
// A hand-set model is refused with the reason (its layers differ).
#pragma once

#include <optional>
#include <string>

#include "compiler/plan/plan.h"

namespace posc::flex {

// The module's text, or std::nullopt with `why` set when the experiment
// cannot be written as score and mask functions.
std::optional<std::string> emitModule(const plan::ExperimentPlan& plan, std::string& why);

}  // namespace posc::flex
