// Ridge fits of frequency ladders to a target kernel over the training
// distances, and what the fitted kernel does beyond them.
//
// The study asks whether more rotation frequencies could push a kernel's
// repeat out of reach: fit heights and phases (a cos + b sin per frequency)
// to an ideal spike (1 at d = 0, 0 elsewhere) using only the training
// distances, with a ridge penalty standing in for weight decay, then look
// further out. It reports the peak, the worst side bump within the training
// range and the highest value beyond training, for a geometric RoPE ladder
// (omega_i = base^(-i/M)) and a harmonic ladder (omega_k = 2 pi k / period,
// k = 1..M).
//
// The fit minimises sum_d (f(d) - y(d))^2 + ridge * |c|^2 over the
// coefficients c. With P = 2M features and n training distances it solves
// the P x P normal equations by Cholesky when P <= n, and otherwise the
// equivalent n x n system (Phi Phi^T + ridge I) alpha = y, c = Phi^T alpha
// (the same minimiser, by the push-through identity), so a 2000-term ladder
// fitted on 41 distances costs a 41 x 41 factorisation.
#pragma once

#include <string>
#include <vector>

#include "runtime/analysis/kernel.h"

namespace posc::analysis {

struct Ladder {
  enum class Kind { Geometric, Harmonic } kind = Kind::Geometric;
  int terms = 16;
  double base = 10000;    // geometric
  double period = 4000;   // harmonic
  std::vector<double> omegas() const;
  std::string describe() const;  // "RoPE geometric, base 10000" / "harmonic, period 4000"
};

// The four ladders of the study's ridge-fit table, in its row order:
// geometric with 16 and 2000 terms, harmonic (period 4000) with 256 and 2000.
std::vector<Ladder> studyLadders();

struct FitSettings {
  int train = 20;        // training distances -train..train
  int range = 2000;      // evaluation distances -range..range
  double ridge = 1e-5;   // penalty on the squared coefficients
  // The target at the training distances; empty: the ideal spike at d = 0.
  const KernelEvaluator* target = nullptr;
  std::string describe() const;
};

struct FitResult {
  Ladder ladder;
  FitSettings settings;
  std::vector<double> omega, cos_coef, sin_coef;
  double peak = 0;           // f(0)
  double side_bump = 0;      // max f(d), 0 < |d| <= train
  double side_bump_at = 0;
  double beyond = 0;         // max f(d), train < |d| <= range
  double beyond_at = 0;
  double fit_residual = 0;   // root mean square error over the training distances
  std::vector<double> d, value;  // the fitted kernel over -range..range

  // The fitted kernel as a program: sum_m R_m cos(omega_m d + phase_m).
  KernelProgram program() const;
};

FitResult fitLadder(const Ladder& ladder, const FitSettings& settings);

// Solves A x = b for a symmetric positive definite A (row-major n x n) by
// Cholesky; throws std::runtime_error if A is not positive definite.
std::vector<double> solveCholesky(std::vector<double> a, std::vector<double> b, size_t n);

}  // namespace posc::analysis
