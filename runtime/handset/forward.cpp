// Hand-set forward pass (see forward.h).
#include "runtime/handset/forward.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace posc::handset {

namespace {

using plan::WeightTensor;

// y += W x (+ b), where x has W.cols entries; absent tensors add nothing.
void affine(const WeightTensor& w, const WeightTensor& b, const double* x, double* y, int out) {
  if (w.present)
    for (int r = 0; r < w.rows; ++r) {
      double acc = 0;
      for (int c = 0; c < w.cols; ++c) acc += w.at(r, c) * x[c];
      y[r] += acc;
    }
  if (b.present)
    for (int r = 0; r < out; ++r) y[r] += b.values[static_cast<size_t>(r)];
}

}  // namespace

Forward::Forward(const plan::HandsetModel& model, plan::SoftmaxKind softmax) : model_(model), softmax_(softmax) {}

std::vector<double> Forward::logits(const std::vector<int64_t>& tokens) const {
  const int n = static_cast<int>(tokens.size());
  int width = model_.embed_width;
  std::vector<double> x(static_cast<size_t>(n) * width, 0.0);
  for (int p = 0; p < n; ++p) {
    const int64_t t = tokens[static_cast<size_t>(p)];
    if (t < 0 || t >= model_.vocab)
      throw std::out_of_range(fmt::format("token {} is outside the vocabulary of {}", t, model_.vocab));
    for (int c = 0; c < width; ++c) x[static_cast<size_t>(p) * width + c] = model_.embed.at(static_cast<int>(t), c);
  }
  for (const plan::HandsetLayer& l : model_.layers) {
    if (l.width != width) {  // zero-extend the residual
      std::vector<double> wider(static_cast<size_t>(n) * l.width, 0.0);
      for (int p = 0; p < n; ++p)
        std::copy_n(&x[static_cast<size_t>(p) * width], width, &wider[static_cast<size_t>(p) * l.width]);
      x.swap(wider);
      width = l.width;
    }
    const int inner = l.heads * l.head_dim;
    if (inner > 0) {
      std::vector<double> q(static_cast<size_t>(n) * inner, 0.0), k(q.size(), 0.0), v(q.size(), 0.0), o(q.size(), 0.0);
      for (int p = 0; p < n; ++p) {
        const double* xp = &x[static_cast<size_t>(p) * width];
        affine(l.query, l.query_bias, xp, &q[static_cast<size_t>(p) * inner], inner);
        affine(l.key, l.key_bias, xp, &k[static_cast<size_t>(p) * inner], inner);
        affine(l.value, l.value_bias, xp, &v[static_cast<size_t>(p) * inner], inner);
      }
      const double scale = 1.0 / std::sqrt(static_cast<double>(l.head_dim));
      std::vector<double> score(static_cast<size_t>(n));
      for (int h = 0; h < l.heads; ++h) {
        const int off = h * l.head_dim;
        const double slope = l.alibi[static_cast<size_t>(h)];
        for (int p = 0; p < n; ++p) {
          double top = -INFINITY;
          for (int j = 0; j <= p; ++j) {
            double dot = 0;
            for (int d = 0; d < l.head_dim; ++d)
              dot += q[static_cast<size_t>(p) * inner + off + d] * k[static_cast<size_t>(j) * inner + off + d];
            score[static_cast<size_t>(j)] = dot * scale - slope * (p - j);
            top = std::max(top, score[static_cast<size_t>(j)]);
          }
          // softmax1: e^s_j / (1 + sum e^s), computed as e^(s_j - m) / (e^-m + sum e^(s - m)), m = max(0, max s).
          if (softmax_ == plan::SoftmaxKind::Softmax1) top = std::max(top, 0.0);
          double denominator = softmax_ == plan::SoftmaxKind::Softmax1 ? std::exp(-top) : 0.0;
          for (int j = 0; j <= p; ++j) {
            score[static_cast<size_t>(j)] = std::exp(score[static_cast<size_t>(j)] - top);
            denominator += score[static_cast<size_t>(j)];
          }
          for (int j = 0; j <= p; ++j) {
            const double w = score[static_cast<size_t>(j)] / denominator;
            for (int d = 0; d < l.head_dim; ++d)
              o[static_cast<size_t>(p) * inner + off + d] += w * v[static_cast<size_t>(j) * inner + off + d];
          }
        }
      }
      for (int p = 0; p < n; ++p)
        affine(l.out, l.out_bias, &o[static_cast<size_t>(p) * inner], &x[static_cast<size_t>(p) * width], width);
    }
    if (l.mlp_hidden > 0) {
      std::vector<double> gate(static_cast<size_t>(l.mlp_hidden)), up(gate.size());
      for (int p = 0; p < n; ++p) {
        double* xp = &x[static_cast<size_t>(p) * width];
        std::fill(gate.begin(), gate.end(), 0.0);
        std::fill(up.begin(), up.end(), 0.0);
        affine(l.gate, l.gate_bias, xp, gate.data(), l.mlp_hidden);
        affine(l.up, l.up_bias, xp, up.data(), l.mlp_hidden);
        for (size_t i = 0; i < gate.size(); ++i) gate[i] = std::max(gate[i], 0.0) * up[i];
        std::vector<double> delta(static_cast<size_t>(width), 0.0);
        affine(l.down, l.down_bias, gate.data(), delta.data(), width);
        for (int c = 0; c < width; ++c) xp[c] += delta[static_cast<size_t>(c)];
      }
    }
  }
  if (model_.identity_head) return x;  // width == vocab, checked by sema
  std::vector<double> out(static_cast<size_t>(n) * model_.vocab, 0.0);
  plan::WeightTensor none;
  for (int p = 0; p < n; ++p)
    affine(model_.unembed, none, &x[static_cast<size_t>(p) * width], &out[static_cast<size_t>(p) * model_.vocab], model_.vocab);
  return out;
}

}  // namespace posc::handset
