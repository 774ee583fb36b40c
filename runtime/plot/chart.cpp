// SVG rendering of line charts: axes with nice ticks, optional log axes,
// series with optional bands, reference rules and a legend to the right.
#include "runtime/plot/chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/plot/table.h"

namespace posc::plot {

namespace {

// Colour-blind-friendly palette (Okabe-Ito).
const char* const kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                "#E69F00", "#56B4E9", "#000000", "#F0E442"};

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
  void widenIfFlat() {
    if (empty()) lo = 0, hi = 1;
    if (lo == hi) {
      double d = lo == 0 ? 1 : std::fabs(lo) * 0.5;
      lo -= d, hi += d;
    }
  }
};

std::string num(double v) { return fmt::format("{:.2f}", v); }

}  // namespace

std::string xmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> niceTicks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  double raw = (hi - lo) / std::max(1, target);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  // Multiples k * step, computed from k (not accumulated) and rounded to the
  // step's decimal precision so that 0.6 prints and compares as 0.6.
  const double scale = std::pow(10.0, std::max(0.0, -std::floor(std::log10(step)) + 1));
  for (long long k = static_cast<long long>(std::ceil(lo / step - 1e-9)); k * step <= hi + step * 1e-9; ++k)
    ticks.push_back(std::round(k * step * scale) / scale + 0.0);
  return ticks;
}

namespace {

// Ticks of a log axis spanning [lo, hi] in log10 units: the powers of 10,
// with 2 and 5 times them when fewer than 3 powers fall inside.
std::vector<double> logTicks(double lo, double hi) {
  std::vector<double> t;
  for (double e = std::ceil(lo - 1e-9); e <= hi + 1e-9; e += 1) t.push_back(std::pow(10.0, e));
  if (t.size() < 3)
    for (double e = std::floor(lo); e <= hi; e += 1)
      for (double m : {2.0, 5.0})
        if (double v = m * std::pow(10.0, e); std::log10(v) >= lo && std::log10(v) <= hi) t.push_back(v);
  std::sort(t.begin(), t.end());
  return t;
}

}  // namespace

void showSinglePoints(Chart& c) {
  for (Series& s : c.series)
    if (s.x.size() < 2) s.style = Style::LineAndPoints;
}

void logYIfDecades(Chart& c) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const Series& s : c.series)
    for (double y : s.y)
      if (std::isfinite(y)) lo = std::min(lo, y), hi = std::max(hi, y);
  if (lo > 0 && hi >= 100 * lo) c.log_y = true;
  else c.y_min = 0;
}

std::string renderSvg(const Chart& c) {
  const bool logx = c.log_x, logy = c.log_y;
  // Data to axis units (log10 on a log axis); a value a log axis cannot show is NaN.
  auto tx = [&](double x) { return logx ? (x > 0 ? std::log10(x) : NAN) : x; };
  auto ty = [&](double y) { return logy ? (y > 0 ? std::log10(y) : NAN) : y; };
  Range xr, yr;
  for (const auto& s : c.series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(tx(s.x[i])) || !std::isfinite(ty(s.y[i]))) continue;
      xr.add(tx(s.x[i]));
      yr.add(ty(s.y[i]));
      if (i < s.lo.size()) yr.add(ty(s.lo[i]));
      if (i < s.hi.size()) yr.add(ty(s.hi[i]));
    }
    if (s.style == Style::Bars && !logy) yr.add(0);
  }
  for (const auto& r : c.rules) {
    if (r.vertical) xr.add(tx(r.at));
    else yr.add(ty(r.at));
  }
  if (c.x_min && std::isfinite(tx(*c.x_min))) xr.lo = tx(*c.x_min);
  if (c.x_max && std::isfinite(tx(*c.x_max))) xr.hi = tx(*c.x_max);
  if (c.y_min && std::isfinite(ty(*c.y_min))) yr.lo = ty(*c.y_min);
  if (c.y_max && std::isfinite(ty(*c.y_max))) yr.hi = ty(*c.y_max);
  xr.widenIfFlat();
  yr.widenIfFlat();

  const double W = c.width, Hh = c.height;
  // The legend's column widens for long series names (about 6.6 px a character at its font size).
  size_t longest = 0;
  for (const Series& s : c.series) longest = std::max(longest, s.name.size());
  const double left = 70, right = std::max(170.0, 36 + 6.6 * static_cast<double>(longest));
  const double top = c.title.empty() ? 20 : 40, bottom = 52;
  const double pw = W - left - right, ph = Hh - top - bottom;
  auto px = [&](double x) { return left + (tx(x) - xr.lo) / (xr.hi - xr.lo) * pw; };
  auto py = [&](double y) { return top + (1 - (ty(y) - yr.lo) / (yr.hi - yr.lo)) * ph; };
  auto shown = [&](double x, double y) { return std::isfinite(tx(x)) && std::isfinite(ty(y)); };
  auto inside = [&](double x, double y) {
    return shown(x, y) && tx(x) >= xr.lo - 1e-12 && tx(x) <= xr.hi + 1e-12 && ty(y) >= yr.lo - 1e-12 &&
           ty(y) <= yr.hi + 1e-12;
  };

  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      c.width, c.height);
  o += fmt::format("<title>{}</title>\n", xmlEscape(c.title));
  o += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", c.width, c.height);
  if (!c.title.empty())
    o += fmt::format("<text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
                     num(left + pw / 2), xmlEscape(c.title));

  // Grid and ticks.
  o += "<g class=\"axes\" stroke=\"#ccc\">\n";
  const std::vector<double> xt = logx ? logTicks(xr.lo, xr.hi) : niceTicks(xr.lo, xr.hi);
  const std::vector<double> yt = logy ? logTicks(yr.lo, yr.hi) : niceTicks(yr.lo, yr.hi);
  for (double t : xt) {
    o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", num(px(t)), num(top), num(top + ph));
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" stroke=\"none\" fill=\"#333\">{}</text>\n",
                     num(px(t)), num(top + ph + 16), formatNumber(t, 4));
  }
  for (double t : yt) {
    o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", num(left), num(py(t)), num(left + pw));
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" stroke=\"none\" fill=\"#333\">{}</text>\n",
                     num(left - 6), num(py(t) + 4), formatNumber(t, 4));
  }
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n",
                   num(left), num(top), num(pw), num(ph));
  o += "</g>\n";
  o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", num(left + pw / 2),
                   num(Hh - 12), xmlEscape(c.x_label));
  o += fmt::format("<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                   num(top + ph / 2), xmlEscape(c.y_label));

  for (const auto& r : c.rules) {
    if (r.vertical ? !std::isfinite(tx(r.at)) : !std::isfinite(ty(r.at))) continue;
    if (r.vertical) {
      o += fmt::format("<line class=\"rule\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#888\" "
                       "stroke-dasharray=\"4 3\"/>\n", num(px(r.at)), num(top), num(top + ph));
      o += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#666\">{}</text>\n", num(px(r.at) + 4), num(top + 12),
                       xmlEscape(r.label));
    } else {
      o += fmt::format("<line class=\"rule\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#888\" "
                       "stroke-dasharray=\"4 3\"/>\n", num(left), num(py(r.at)), num(left + pw));
      o += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#666\" text-anchor=\"end\">{}</text>\n",
                       num(left + pw - 4), num(py(r.at) - 4), xmlEscape(r.label));
    }
  }

  // Series, clipped to the plot area.
  o += fmt::format("<clipPath id=\"plot\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n",
                   num(left), num(top), num(pw), num(ph));
  size_t colour = 0;
  double legend_y = top + 8;
  for (const auto& s : c.series) {
    std::string col = s.color.empty() ? kPalette[colour++ % std::size(kPalette)] : s.color;
    std::string data;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      data += fmt::format("{}{},{}", data.empty() ? "" : " ", formatNumber(s.x[i], 10), formatNumber(s.y[i], 10));
    o += fmt::format("<g class=\"series\" data-name=\"{}\" data-points=\"{}\" clip-path=\"url(#plot)\">\n",
                     xmlEscape(s.name), data);
    const size_t n = std::min(s.x.size(), s.y.size());
    if (s.lo.size() >= n && s.hi.size() >= n && n > 0) {
      std::string pts;
      for (size_t i = 0; i < n; ++i)
        if (inside(s.x[i], s.y[i]) && shown(s.x[i], s.hi[i])) pts += fmt::format("{},{} ", num(px(s.x[i])), num(py(s.hi[i])));
      for (size_t i = n; i-- > 0;)
        if (inside(s.x[i], s.y[i]) && shown(s.x[i], s.lo[i])) pts += fmt::format("{},{} ", num(px(s.x[i])), num(py(s.lo[i])));
      o += fmt::format("<polygon class=\"band\" points=\"{}\" fill=\"{}\" fill-opacity=\"0.18\" stroke=\"none\"/>\n",
                       pts, col);
    }
    if (s.style == Style::Bars) {
      double bw = std::max(1.0, pw / std::max<size_t>(1, n) * 0.7);
      for (size_t i = 0; i < n; ++i) {
        if (!inside(s.x[i], s.y[i])) continue;
        // From 0 (the axis's foot on a log axis) to the value.
        const double foot = logy ? std::pow(10.0, yr.lo) : std::clamp(0.0, yr.lo, yr.hi);
        double y0 = py(foot), y1 = py(s.y[i]);
        o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", num(px(s.x[i]) - bw / 2),
                         num(std::min(y0, y1)), num(bw), num(std::fabs(y1 - y0)), col);
      }
    }
    if (s.style == Style::Line || s.style == Style::LineAndPoints) {
      // A gap (non-finite point) starts a new polyline.
      std::string pts;
      auto flush = [&] {
        if (!pts.empty())
          o += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"{}/>\n", pts, col,
                           s.dashed ? " stroke-dasharray=\"6 4\"" : "");
        pts.clear();
      };
      for (size_t i = 0; i < n; ++i) {
        if (!shown(s.x[i], s.y[i])) {
          flush();
          continue;
        }
        pts += fmt::format("{}{},{}", pts.empty() ? "" : " ", num(px(s.x[i])), num(py(s.y[i])));
      }
      flush();
    }
    if (s.style == Style::Points || s.style == Style::LineAndPoints) {
      for (size_t i = 0; i < n; ++i)
        if (inside(s.x[i], s.y[i]))
          o += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.6\" fill=\"{}\"/>\n", num(px(s.x[i])), num(py(s.y[i])),
                           col);
    }
    o += "</g>\n";
    o += fmt::format("<g class=\"legend\"><rect x=\"{}\" y=\"{}\" width=\"14\" height=\"4\" fill=\"{}\"/>"
                     "<text x=\"{}\" y=\"{}\">{}</text></g>\n",
                     num(left + pw + 12), num(legend_y), col, num(left + pw + 32), num(legend_y + 6),
                     xmlEscape(s.name));
    legend_y += 18;
  }
  o += "</svg>\n";
  return o;
}

}  // namespace posc::plot
