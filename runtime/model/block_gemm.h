// Matrix products on one attention block's small row-major matrices.
//
// The fused attention core (attention_core.h) multiplies matrices of a few
// dozen rows inside its own loop over (batch, head) blocks. LibTorch's bmm
// would do the same products, but spends more time per block on its own
// bookkeeping (a select, a conjugation check and a dispatch per operand) than
// the product takes at these sizes. Here a product is one call into the BLAS
// that LibTorch itself links (sgemm_/dgemm_, found in the running process, so
// posc uses whatever OpenBLAS build and kernels it chose at start-up); where
// no BLAS symbol is present, plain loops compute the same product.
#pragma once

#include <cstdint>

namespace posc::model {

// C = alpha * op(A) * op(B) + beta * C, all row-major: op(A) is m x k, op(B)
// k x n, C m x n with leading dimensions lda, ldb, ldc (row strides). With
// trans_a, A is stored k x m and op(A) is its transpose; likewise trans_b.
// beta = 0 overwrites C (NaN in C does not survive).
void blockGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void blockGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
               int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// The loop fallback, for tests that compare it with the BLAS path.
template <typename T>
void blockGemmLoops(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                    const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// True when blockGemm calls a BLAS found in the process.
bool blockGemmUsesBlas();

}  // namespace posc::model
