// Small row-major products through the process's BLAS: see block_gemm.h.
//
// Fortran BLAS is column-major. A row-major m x n matrix C with row stride ldc
// is, read column-major, C^T (n x m, leading dimension ldc). So the row-major
// C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T: the
// operands swap places and each keeps its own transpose flag.
#include "runtime/model/block_gemm.h"

#include <dlfcn.h>

namespace posc::model {

namespace {

using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);
using DgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const double*,
                         const double*, const int*, const double*, const int*, const double*, double*, const int*);

// Looked up once: LibTorch's own BLAS is already loaded (it links it), so
// RTLD_DEFAULT finds its symbols without opening anything.
struct Blas {
  SgemmFn sgemm = reinterpret_cast<SgemmFn>(dlsym(RTLD_DEFAULT, "sgemm_"));
  DgemmFn dgemm = reinterpret_cast<DgemmFn>(dlsym(RTLD_DEFAULT, "dgemm_"));
};

const Blas& blas() {
  static const Blas b;
  return b;
}

template <typename T, typename Fn>
void viaBlas(Fn fn, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
             const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
  const int M = static_cast<int>(n), N = static_cast<int>(m), K = static_cast<int>(k);
  const int LDA = static_cast<int>(ldb), LDB = static_cast<int>(lda), LDC = static_cast<int>(ldc);
  fn(&tb, &ta, &M, &N, &K, &alpha, b, &LDA, a, &LDB, &beta, c, &LDC);
}

}  // namespace

template <typename T>
void blockGemmLoops(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                    const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) row[j] = beta == T(0) ? T(0) : beta * row[j];
    for (int64_t p = 0; p < k; ++p) {
      const T av = alpha * (trans_a ? a[p * lda + i] : a[i * lda + p]);
      if (trans_b) {
        for (int64_t j = 0; j < n; ++j) row[j] += av * b[j * ldb + p];
      } else {
        const T* brow = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
      }
    }
  }
}

template void blockGemmLoops<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                    const float*, int64_t, float, float*, int64_t);
template void blockGemmLoops<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                                     const double*, int64_t, double, double*, int64_t);

namespace {

// The BLAS routine `fn` when the process has one (and the product is not
// empty in k, where BLAS would only scale C), else the loops.
template <typename T, typename Fn>
void product(Fn fn, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
             const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (fn && k > 0)
    viaBlas(fn, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    blockGemmLoops(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

void blockGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  product(blas().sgemm, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void blockGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
               int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  product(blas().dgemm, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

bool blockGemmUsesBlas() { return blas().sgemm != nullptr && blas().dgemm != nullptr; }

}  // namespace posc::model
