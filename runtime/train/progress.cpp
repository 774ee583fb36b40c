// Progress lines and bars: see runtime/train/progress.h.
#include "runtime/train/progress.h"

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace posc::train {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  long s = std::lround(seconds);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s / 60) % 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string formatRate(double tokens_per_s) {
  if (tokens_per_s >= 1e6) return fmt::format("{:.2f}M", tokens_per_s / 1e6);
  if (tokens_per_s >= 1e3) return fmt::format("{:.1f}k", tokens_per_s / 1e3);
  return fmt::format("{:.0f}", tokens_per_s);
}

void ProgressReporter::tick(int done, double lr, double eta_s, bool force) {
  if (mode_ != ProgressMode::Bar) return;
  if (!force && secondsSince(last_draw_) < 0.2) return;
  last_draw_ = Clock::now();
  const int width = 24;
  int filled = steps_ > 0 ? static_cast<int>(static_cast<long>(width) * done / steps_) : width;
  std::string bar(static_cast<size_t>(filled), '#');
  bar += std::string(static_cast<size_t>(width - filled), '.');
  std::fprintf(stderr, "\rseed %llu [%s] %d/%d  loss %s  lr %.2e  %s tok/s  ETA %s\x1b[K",
               static_cast<unsigned long long>(seed_), bar.c_str(), done, steps_,
               has_loss_ ? fmt::format("{:.4f}", loss_).c_str() : "-", lr,
               has_loss_ ? formatRate(rate_).c_str() : "-", formatDuration(eta_s).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressReporter::log(int done, double loss, double lr, double tokens_per_s, double eta_s) {
  loss_ = loss;
  rate_ = tokens_per_s;
  has_loss_ = true;
  if (mode_ == ProgressMode::Lines) {
    std::fprintf(stderr, "seed %llu  step %d/%d  loss %.4f  lr %.2e  %s tok/s  ETA %s\n",
                 static_cast<unsigned long long>(seed_), done, steps_, loss, lr, formatRate(tokens_per_s).c_str(),
                 formatDuration(eta_s).c_str());
  } else {
    tick(done, lr, eta_s, /*force=*/true);
  }
}

void ProgressReporter::breakLine() {
  if (drawn_) std::fputc('\n', stderr);
  drawn_ = false;
}

}  // namespace posc::train
