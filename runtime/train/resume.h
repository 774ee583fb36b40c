// The resume state of one seed: everything that decides the rest of its
// training, so that a run killed at any step and continued from its last
// resume point ends with the same weights, bit for bit, as a run that was
// never interrupted (same device and thread count).
//
// <seed dir>/resume.pt is one LibTorch archive holding
//   model        the parameters and buffers (the checkpoint format)
//   optimizer    AdamW's state: step counts and both moments of every parameter
//   step         optimiser steps done (the schedule is a closed form of it)
//   data_rng     the seed's problem and stretch stream (std::mt19937_64, as text)
//   torch_rng    LibTorch's default CPU generator
//   interval_*   the loss sum and step count since the last metrics line
//   metrics_lines  lines of metrics.jsonl written up to this step
//   plan_hash    the run's training identity (RunOptions::training_hash; the
//                whole plan's hash in versions before 2026-12-07): a plan
//                that trains differently never resumes it
// It is written atomically at every resume point and when a run is asked to
// stop, and removed once the seed's final.pt is written.
#pragma once

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "runtime/model/gpt.h"

namespace posc::train {

struct TrainingState {
  int step = 0;
  std::mt19937_64 data_rng;
  double interval_loss = 0;
  int interval_steps = 0;
  size_t metrics_lines = 0;
  std::string plan_hash;
};

// Writes model, optimiser, LibTorch's CPU generator and `state` to `path`
// atomically. Throws std::runtime_error naming the file on failure.
void saveTrainingState(const std::filesystem::path& path, const torch::nn::Module& model,
                       const torch::optim::Optimizer& optimizer, const TrainingState& state);

// Restores everything saveTrainingState wrote into `model` and `optimizer`
// (built exactly as for the run that wrote it) and LibTorch's CPU generator.
// Throws std::runtime_error if the file is unreadable, belongs to another
// plan (its identity none of `identities`) or does not match the model.
TrainingState loadTrainingState(const std::filesystem::path& path, torch::nn::Module& model,
                                torch::optim::Optimizer& optimizer, const std::vector<std::string>& identities);

}  // namespace posc::train
