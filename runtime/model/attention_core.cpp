// The fused attention core: see attention_core.h.
//
// Per (batch b, head h) block, with L the padded length, n = count[b] the
// sequence's rows, D the head size, c = 1/sqrt(D):
//   forward   Q = c * xq(R q), K = zero(R k / xq), V = v    (n x D each; rows
//             n..L-1 zero), S = Q K^T (L x L), P = kernel(S), Y = P V
//   backward  dP = dY V^T, (dS, dparams) = kernel'(S, P, dP), dQ = dS K,
//             dK = dS^T Q, dV = P^T dY, then dq = c * R^T (xq * dQ) and
//             dk = R^T (zero(dK) / xq)
// where R rotates each pair (x0, x1) by its angle, xq is xPos's per-pair
// query scale (1 without it) and zero() clears the zeroed key components.
// Padding rows stay zero, so their scores are 0 and causal masking hides
// them from every live query; the block's products run over n rows only.
#include "runtime/model/attention_core.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "compiler/jit/compiled.h"
#include "runtime/model/block_gemm.h"
#include "runtime/model/fused_attention.h"

namespace posc::model {

RowLayout RowLayout::dense(int64_t batch, int64_t length) {
  RowLayout r;
  r.batch = batch;
  r.length = length;
  for (int64_t b = 0; b < batch; ++b) {
    r.first.push_back(b * length);
    r.count.push_back(length);
  }
  return r;
}

bool RowLayout::fromPackedRows(const torch::Tensor& rows, int64_t batch, int64_t length, RowLayout* out) {
  auto flat = rows.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t* p = flat.data_ptr<int64_t>();
  RowLayout r;
  r.batch = batch;
  r.length = length;
  r.first.assign(static_cast<size_t>(batch), 0);
  r.count.assign(static_cast<size_t>(batch), 0);
  for (int64_t i = 0; i < flat.numel(); ++i) {
    const int64_t b = p[i] / length, t = p[i] % length;
    if (b < 0 || b >= batch) return false;
    auto& count = r.count[static_cast<size_t>(b)];
    if (count == 0) r.first[static_cast<size_t>(b)] = i;
    if (t != count || r.first[static_cast<size_t>(b)] + count != i) return false;  // not a prefix
    ++count;
  }
  *out = std::move(r);
  return true;
}

bool attentionCoreSupported(const torch::Tensor& projected, const PositionalContext& positional) {
  const auto dtype = projected.scalar_type();
  if (!jit::available() || !projected.device().is_cpu() || (dtype != torch::kFloat && dtype != torch::kDouble))
    return false;
  for (const auto* t : {&positional.cos, &positional.sin, &positional.query_scale})
    if (t->defined() && (t->scalar_type() != dtype || !t->device().is_cpu())) return false;
  return true;
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The block's view of the shared tables: rotation, xPos scale, key zeroing.
template <typename T>
struct Tables {
  const T* cos = nullptr;  // (B, Hr, L, D/2), null without rotations
  const T* sin = nullptr;
  const T* scale = nullptr;  // (B, Hr, L, D/2), null without xPos
  const bool* zero = nullptr;  // (B, Hz, L, D), null without key zeroing
  int64_t Hr = 1, Hz = 1;

  explicit Tables(const PositionalContext& ctx) {
    if (ctx.cos.defined()) {
      cos = ctx.cos.data_ptr<T>();
      sin = ctx.sin.data_ptr<T>();
      Hr = ctx.cos.size(1);
    }
    if (ctx.query_scale.defined()) scale = ctx.query_scale.data_ptr<T>();
    if (ctx.key_zero.defined()) {
      zero = ctx.key_zero.data_ptr<bool>();
      Hz = ctx.key_zero.size(1);
    }
  }
};

// Everything the backward pass needs besides the saved tensors.
struct Shape {
  int64_t B, H, L, D, C, P;
  const jit::CompiledAttention* kernel;
};

// Rotates (forward: by +angle, then scale) or un-rotates (backward: scale,
// then by -angle) each pair of x in place. `mult` multiplies every pair (the
// 1/sqrt(D) of queries), scale is xPos's (query) or its inverse (key).
template <typename T>
void turnPairs(T* x, int64_t D, const T* cos, const T* sin, const T* scale, bool invert_scale, T mult,
               bool backward) {
  for (int64_t i = 0; i < D / 2; ++i) {
    T s = mult;
    if (scale) s = invert_scale ? s / scale[i] : s * scale[i];
    const T x0 = x[2 * i], x1 = x[2 * i + 1];
    if (cos) {
      const T c = cos[i], n = backward ? -sin[i] : sin[i];
      x[2 * i] = s * (x0 * c - x1 * n);
      x[2 * i + 1] = s * (x1 * c + x0 * n);
    } else {
      x[2 * i] = s * x0;
      x[2 * i + 1] = s * x1;
    }
  }
  if (D % 2) x[D - 1] *= mult;
}

template <typename T>
int64_t runForward(const Shape& sh, const RowLayout& rows, const Tables<T>& tab, const T* qkv, T* q, T* k,
                   T* v, T* scores, T* probs, T* y, const T* qch, const T* kch, const T* table) {
  const int64_t H = sh.H, L = sh.L, D = sh.D, HD = H * D, P = D / 2;
  const T c = T(1) / std::sqrt(static_cast<T>(D));
  auto fn = reinterpret_cast<jit::ForwardFn<T>>(sh.kernel->forward());
  std::atomic<int64_t> bad{0};
  at::parallel_for(0, sh.B * H, 1, [&](int64_t begin, int64_t end) {
    int64_t local = 0;
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H, n = rows.count[static_cast<size_t>(b)];
      const int64_t first = rows.first[static_cast<size_t>(b)];
      T* Q = q + bh * L * D;
      T* K = k + bh * L * D;
      T* V = v + bh * L * D;
      const int64_t hr = tab.Hr > 1 ? h : 0, hz = tab.Hz > 1 ? h : 0;
      for (int64_t t = 0; t < n; ++t) {
        const T* row = qkv + (first + t) * 3 * HD + h * D;
        std::copy(row, row + D, Q + t * D);
        std::copy(row + HD, row + HD + D, K + t * D);
        std::copy(row + 2 * HD, row + 2 * HD + D, V + t * D);
        const int64_t at = ((b * tab.Hr + hr) * L + t) * P;
        const T* cs = tab.cos ? tab.cos + at : nullptr;
        const T* sn = tab.sin ? tab.sin + at : nullptr;
        const T* sc = tab.scale ? tab.scale + at : nullptr;
        turnPairs(Q + t * D, D, cs, sn, sc, false, c, false);
        turnPairs(K + t * D, D, cs, sn, sc, true, T(1), false);
        if (tab.zero) {
          const bool* z = tab.zero + ((b * tab.Hz + hz) * L + t) * D;
          for (int64_t d = 0; d < D; ++d)
            if (z[d]) K[t * D + d] = T(0);
        }
      }
      T* S = scores + bh * L * L;
      T* Pr = probs + bh * L * L;
      blockGemm(false, true, n, n, D, T(1), Q, D, K, D, T(0), S, L);
      // Columns n.. of live rows and all padding rows: keys and queries of zeros.
      for (int64_t i = 0; i < n; ++i) std::fill(S + i * L + n, S + (i + 1) * L, T(0));
      std::fill(S + n * L, S + L * L, T(0));
      local += fn(S, Pr, qch + b * sh.C * L, kch + b * sh.C * L, table + h * sh.P, L, L, h);
      // Live queries weigh only live keys (causal), so P V runs over n keys.
      blockGemm(false, false, n, D, n, T(1), Pr, L, V, D, T(0), y + first * HD + h * D, HD);
    }
    bad += local;
  });
  return bad.load();
}

template <typename T>
void runBackward(const Shape& sh, const RowLayout& rows, const Tables<T>& tab, const T* q, const T* k,
                 const T* v, const T* scores, const T* probs, const T* gy, T* gqkv, T* gblocks, const T* qch,
                 const T* kch, const T* table) {
  const int64_t H = sh.H, L = sh.L, D = sh.D, HD = H * D, P = D / 2;
  const T c = T(1) / std::sqrt(static_cast<T>(D));
  auto fn = reinterpret_cast<jit::BackwardFn<T>>(sh.kernel->backward());  // compiled on first use
  at::parallel_for(0, sh.B * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> gp(static_cast<size_t>(L * L)), gs(static_cast<size_t>(L * L));
    std::vector<T> dq(static_cast<size_t>(L * D)), dk(static_cast<size_t>(L * D));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H, n = rows.count[static_cast<size_t>(b)];
      const int64_t first = rows.first[static_cast<size_t>(b)];
      const T* Q = q + bh * L * D;
      const T* K = k + bh * L * D;
      const T* V = v + bh * L * D;
      const T* Pr = probs + bh * L * L;
      const T* dY = gy + first * HD + h * D;
      std::fill(gp.begin(), gp.end(), T(0));
      blockGemm(false, true, n, n, D, T(1), dY, HD, V, D, T(0), gp.data(), L);
      fn(scores + bh * L * L, Pr, gp.data(), gs.data(), gblocks + bh * sh.P, qch + b * sh.C * L,
         kch + b * sh.C * L, table + h * sh.P, L, L, h);
      blockGemm(false, false, n, D, n, T(1), gs.data(), L, K, D, T(0), dq.data(), D);
      blockGemm(true, false, n, D, n, T(1), gs.data(), L, Q, D, T(0), dk.data(), D);
      T* out = gqkv + first * 3 * HD + h * D;
      blockGemm(true, false, n, D, n, T(1), Pr, L, dY, HD, T(0), out + 2 * HD, 3 * HD);  // dV
      const int64_t hr = tab.Hr > 1 ? h : 0, hz = tab.Hz > 1 ? h : 0;
      for (int64_t t = 0; t < n; ++t) {
        T* dqt = dq.data() + t * D;
        T* dkt = dk.data() + t * D;
        if (tab.zero) {
          const bool* z = tab.zero + ((b * tab.Hz + hz) * L + t) * D;
          for (int64_t d = 0; d < D; ++d)
            if (z[d]) dkt[d] = T(0);
        }
        const int64_t at = ((b * tab.Hr + hr) * L + t) * P;
        const T* cs = tab.cos ? tab.cos + at : nullptr;
        const T* sn = tab.sin ? tab.sin + at : nullptr;
        const T* sc = tab.scale ? tab.scale + at : nullptr;
        turnPairs(dqt, D, cs, sn, sc, false, c, true);
        turnPairs(dkt, D, cs, sn, sc, true, T(1), true);
        std::copy(dqt, dqt + D, out + t * 3 * HD);
        std::copy(dkt, dkt + D, out + t * 3 * HD + HD);
      }
    }
  });
}

struct AttentionCoreFn : torch::autograd::Function<AttentionCoreFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& projected, const torch::Tensor& table,
                               const torch::Tensor& qch, const torch::Tensor& kch, const RowLayout* rows,
                               const PositionalContext* positional, Shape shape, const std::string* names) {
    auto qkv = projected.contiguous();
    auto t = table.contiguous();
    const int64_t B = shape.B, H = shape.H, L = shape.L, D = shape.D;
    auto opts = qkv.options();
    auto q = torch::zeros({B, H, L, D}, opts), k = torch::zeros({B, H, L, D}, opts),
         v = torch::zeros({B, H, L, D}, opts);
    auto scores = torch::empty({B, H, L, L}, opts), probs = torch::empty({B, H, L, L}, opts);
    auto y = torch::empty({qkv.size(0), H * D}, opts);
    auto run = [&](auto zero) {
      using T = decltype(zero);
      return runForward<T>(shape, *rows, Tables<T>(*positional), qkv.data_ptr<T>(), q.data_ptr<T>(),
                           k.data_ptr<T>(), v.data_ptr<T>(), scores.data_ptr<T>(), probs.data_ptr<T>(),
                           y.data_ptr<T>(), qch.data_ptr<T>(), kch.data_ptr<T>(), t.data_ptr<T>());
    };
    const int64_t bad = qkv.scalar_type() == torch::kDouble ? run(0.0) : run(0.0f);
    if (bad > 0)
      throw NonFiniteScores(fmt::format("non-finite attention scores in {} of {} rows after score terms {}", bad,
                                        B * H * L, *names));
    ctx->save_for_backward({q, k, v, scores, probs, qch, kch, t});
    ctx->saved_data["cos"] = positional->cos;
    ctx->saved_data["sin"] = positional->sin;
    ctx->saved_data["query_scale"] = positional->query_scale;
    ctx->saved_data["key_zero"] = positional->key_zero;
    ctx->saved_data["shape"] = std::vector<int64_t>{B, H, L, D, shape.C, shape.P};
    ctx->saved_data["kernel"] = reinterpret_cast<int64_t>(shape.kernel);
    ctx->saved_data["rows_first"] = torch::tensor(rows->first, torch::kLong);
    ctx->saved_data["rows_count"] = torch::tensor(rows->count, torch::kLong);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto dims = ctx->saved_data["shape"].toIntVector();
    Shape shape{dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                reinterpret_cast<const jit::CompiledAttention*>(ctx->saved_data["kernel"].toInt())};
    RowLayout rows;
    rows.batch = shape.B;
    rows.length = shape.L;
    auto first = ctx->saved_data["rows_first"].toTensor(), count = ctx->saved_data["rows_count"].toTensor();
    rows.first.assign(first.data_ptr<int64_t>(), first.data_ptr<int64_t>() + first.numel());
    rows.count.assign(count.data_ptr<int64_t>(), count.data_ptr<int64_t>() + count.numel());
    PositionalContext positional;
    positional.cos = ctx->saved_data["cos"].toTensor();
    positional.sin = ctx->saved_data["sin"].toTensor();
    positional.query_scale = ctx->saved_data["query_scale"].toTensor();
    positional.key_zero = ctx->saved_data["key_zero"].toTensor();
    const auto& q = saved[0];
    const auto& t = saved[7];
    auto gy = grads[0].contiguous();
    auto gqkv = torch::empty({gy.size(0), 3 * shape.H * shape.D}, gy.options());
    auto gblocks = torch::zeros({shape.B, shape.H, shape.P}, q.options());
    auto run = [&](auto zero) {
      using T = decltype(zero);
      runBackward<T>(shape, rows, Tables<T>(positional), saved[0].data_ptr<T>(), saved[1].data_ptr<T>(),
                     saved[2].data_ptr<T>(), saved[3].data_ptr<T>(), saved[4].data_ptr<T>(), gy.data_ptr<T>(),
                     gqkv.data_ptr<T>(), gblocks.data_ptr<T>(), saved[5].data_ptr<T>(), saved[6].data_ptr<T>(),
                     t.data_ptr<T>());
    };
    if (q.scalar_type() == torch::kDouble)
      run(0.0);
    else
      run(0.0f);
    return {gqkv, gblocks.sum(0), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor attentionCore(const torch::Tensor& projected, const RowLayout& rows,
                            const PositionalContext& positional, const torch::Tensor& q_channels,
                            const torch::Tensor& k_channels, const plan::AttentionPlan& attention,
                            plan::SoftmaxKind softmax, const std::vector<torch::Tensor>& params, int64_t heads,
                            int64_t head_dim) {
  FusedKernel fk = prepareFusedKernel(projected.scalar_type(), heads, q_channels, k_channels, attention, softmax,
                                      params);
  Shape shape{rows.batch, heads, rows.length, head_dim, fk.q_channels.size(1), fk.table.size(1), fk.kernel};
  return AttentionCoreFn::apply(projected, fk.table, fk.q_channels, fk.k_channels, &rows, &positional, shape,
                                fk.term_names);
}

}  // namespace posc::model
