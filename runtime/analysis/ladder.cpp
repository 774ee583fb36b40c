// Frequency ladders and their ridge fits (see ladder.h).
#include "runtime/analysis/ladder.h"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <utility>

namespace posc::analysis {

std::vector<double> Ladder::omegas() const {
  std::vector<double> w;
  for (int i = 0; i < terms; ++i) {
    if (kind == Kind::Geometric) w.push_back(std::pow(base, -static_cast<double>(i) / terms));
    else w.push_back(2 * std::numbers::pi * (i + 1) / period);
  }
  return w;
}

std::string Ladder::describe() const {
  if (kind == Kind::Geometric) return fmt::format("RoPE geometric, base {:g}", base);
  return fmt::format("harmonic, period {:g}", period);
}

std::string FitSettings::describe() const {
  return fmt::format("fitted on distances -{0}..{0} to {1}, ridge penalty {2:g} on the squared cos/sin "
                     "coefficients; evaluated on -{3}..{3}",
                     train, target ? "the target kernel" : "an ideal spike (1 at d = 0, 0 elsewhere)", ridge, range);
}

std::vector<double> solveCholesky(std::vector<double> a, std::vector<double> b, size_t n) {
  // A = L L^T, L stored in the lower triangle of a.
  for (size_t j = 0; j < n; ++j) {
    double diag = a[j * n + j];
    for (size_t k = 0; k < j; ++k) diag -= a[j * n + k] * a[j * n + k];
    if (!(diag > 0)) throw std::runtime_error("the normal equations are not positive definite (raise the ridge penalty)");
    const double l = std::sqrt(diag);
    a[j * n + j] = l;
    for (size_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / l;
    }
  }
  for (size_t i = 0; i < n; ++i) {  // L z = b
    double s = b[i];
    for (size_t k = 0; k < i; ++k) s -= a[i * n + k] * b[k];
    b[i] = s / a[i * n + i];
  }
  for (size_t i = n; i-- > 0;) {  // L^T x = z
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= a[k * n + i] * b[k];
    b[i] = s / a[i * n + i];
  }
  return b;
}

std::vector<Ladder> studyLadders() {
  std::vector<Ladder> out;
  for (auto [kind, terms] : {std::pair{Ladder::Kind::Geometric, 16}, {Ladder::Kind::Geometric, 2000},
                             {Ladder::Kind::Harmonic, 256}, {Ladder::Kind::Harmonic, 2000}}) {
    Ladder l;
    l.kind = kind;
    l.terms = terms;
    out.push_back(l);
  }
  return out;
}

FitResult fitLadder(const Ladder& ladder, const FitSettings& settings) {
  if (ladder.terms < 1) throw std::invalid_argument("a ladder needs at least one term");
  if (settings.train < 0 || settings.range <= settings.train)
    throw std::invalid_argument("the evaluation range must extend beyond the training distances");
  if (!(settings.ridge >= 0)) throw std::invalid_argument("the ridge penalty must be non-negative");
  FitResult r;
  r.ladder = ladder;
  r.settings = settings;
  r.omega = ladder.omegas();
  const size_t m = r.omega.size(), p = 2 * m;

  std::vector<double> train_d;
  for (int d = -settings.train; d <= settings.train; ++d) train_d.push_back(d);
  const size_t n = train_d.size();
  std::vector<double> y(n, 0.0);
  if (settings.target) settings.target->evaluate(train_d.data(), y.data(), n);
  else y[static_cast<size_t>(settings.train)] = 1.0;

  // Features: column 2k is cos(omega_k d), column 2k+1 is sin(omega_k d).
  std::vector<double> phi(n * p);
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < m; ++k) {
      phi[i * p + 2 * k] = std::cos(r.omega[k] * train_d[i]);
      phi[i * p + 2 * k + 1] = std::sin(r.omega[k] * train_d[i]);
    }

  std::vector<double> c(p, 0.0);
  if (p <= n) {
    std::vector<double> g(p * p, 0.0), rhs(p, 0.0);
    for (size_t i = 0; i < n; ++i)
      for (size_t a = 0; a < p; ++a) {
        rhs[a] += phi[i * p + a] * y[i];
        for (size_t b = 0; b <= a; ++b) g[a * p + b] += phi[i * p + a] * phi[i * p + b];
      }
    for (size_t a = 0; a < p; ++a) {
      for (size_t b = 0; b < a; ++b) g[b * p + a] = g[a * p + b];
      g[a * p + a] += settings.ridge;
    }
    c = solveCholesky(std::move(g), std::move(rhs), p);
  } else {
    std::vector<double> k(n * n, 0.0);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j <= i; ++j) {
        double s = 0;
        for (size_t a = 0; a < p; ++a) s += phi[i * p + a] * phi[j * p + a];
        k[i * n + j] = k[j * n + i] = s;
      }
    for (size_t i = 0; i < n; ++i) k[i * n + i] += settings.ridge;
    std::vector<double> alpha = solveCholesky(std::move(k), y, n);
    for (size_t i = 0; i < n; ++i)
      for (size_t a = 0; a < p; ++a) c[a] += phi[i * p + a] * alpha[i];
  }
  for (size_t k = 0; k < m; ++k) {
    r.cos_coef.push_back(c[2 * k]);
    r.sin_coef.push_back(c[2 * k + 1]);
  }

  double sq = 0;
  r.side_bump = settings.train > 0 ? -HUGE_VAL : 0.0;
  r.beyond = -HUGE_VAL;
  for (int d = -settings.range; d <= settings.range; ++d) {
    double f = 0;
    for (size_t k = 0; k < m; ++k) f += r.cos_coef[k] * std::cos(r.omega[k] * d) + r.sin_coef[k] * std::sin(r.omega[k] * d);
    r.d.push_back(d);
    r.value.push_back(f);
    const int ad = std::abs(d);
    if (ad <= settings.train) {
      const double target = y[static_cast<size_t>(d + settings.train)];
      sq += (f - target) * (f - target);
    }
    if (d == 0) r.peak = f;
    else if (ad <= settings.train) {
      if (f > r.side_bump) r.side_bump = f, r.side_bump_at = d;
    } else if (f > r.beyond) {
      r.beyond = f, r.beyond_at = d;
    }
  }
  r.fit_residual = std::sqrt(sq / static_cast<double>(n));
  return r;
}

KernelProgram FitResult::program() const {
  std::vector<double> amplitude, phase;
  for (size_t k = 0; k < omega.size(); ++k) {
    amplitude.push_back(std::hypot(cos_coef[k], sin_coef[k]));
    phase.push_back(-std::atan2(sin_coef[k], cos_coef[k]));  // a cos x + b sin x = R cos(x - atan2(b, a))
  }
  return cosineSum(amplitude, omega, phase);
}

}  // namespace posc::analysis
