// Whether a plan can run on this machine, decided before anything trains.
//
// Memory: whether a plan can run on this machine's memory, decided before anything
// trains: a run that dies in the allocator after hours of training (an
// evaluation length of 100,000 digits, ten million test problems) is refused
// at `posc check` time with a located error at the setting that drives the
// estimate, the estimate itself and the machine's memory.
//
// The estimate is deliberately coarse (within a small factor): parameters,
// gradients and AdamW moments; activations kept for the backward pass of a
// training batch; and for the largest test length the test problems held in
// memory, the KV cache of one decoding batch and the prefill's attention
// scores. It refuses only plans that need more than the machine has.
//
// Precision: `precision = bf16_mixed` pays on a CPU only where it multiplies
// bf16 natively (AVX512_BF16 or AMX). Elsewhere LibTorch converts to float and
// back around every product, and a training step is several times slower than
// in f32, so posc warns at the setting instead of letting a run crawl.
#pragma once

#include <cstdint>
#include <string_view>

#include "compiler/sema/settings.h"

namespace posc::sema {

struct MemoryEstimate {
  double parameters = 0;   // bytes: weights, gradients and optimiser state
  double training = 0;     // bytes: parameters + one batch's activations
  double evaluation = 0;   // bytes: problems + decoding at the largest length
  double problems = 0;     // of which the test problems of one length
  int tokens_train = 0;    // sequence length at train_max_digits
  int tokens_eval = 0;     // sequence length at the largest test length
};

MemoryEstimate estimateMemory(const plan::ExperimentPlan& plan);

// The largest value `channel` takes in a sequence whose operands have
// `digits` digits (position: its last token; column: the answer's highest
// place; row: the answer row; kind: the largest token kind).
int channelMaximum(const plan::TaskPlan& task, plan::Channel channel, int digits);

// The memory this process may use: physical memory, or the cgroup's limit
// when that is lower. 0 when unknown.
double availableMemory();

// Reports a plan that cannot fit (see above) at the setting that drives the
// estimate; `at` locates it when that setting was not written.
void checkMemory(SourceRange at, SettingsContext& ctx);

// Whether the flags of a /proc/cpuinfo "flags" line include native bf16
// products: avx512_bf16 or amx_bf16 (Linux lists only what the kernel enables).
bool flagsHaveNativeBf16(std::string_view flags);
// The same for this machine's CPU (read once a process); false when
// /proc/cpuinfo cannot be read.
bool cpuHasNativeBf16();

// Warns at `model.precision` when bf16_mixed would run on a CPU that lacks
// native bf16 products (`native_bf16` false); `at` locates it when unwritten.
void checkPrecision(SourceRange at, SettingsContext& ctx, bool native_bf16);
// The same on this machine's CPU, which is asked only for bf16_mixed plans.
void checkPrecision(SourceRange at, SettingsContext& ctx);

}  // namespace posc::sema
