#include <fmt/format.h>

#include <string>

#include "gemm/gemm.h"
#include "quant/quant_kernels.h"

namespace memra::cuda {
namespace {

thread_local std::string g_last_error;

size_t align256(size_t b) { return (b + 255) / 256 * 256; }

// RAII holders so every early return frees the descriptors.
struct LtObjects {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtObjects() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

cudaError_t lt_fail(cublasStatus_t st, const char* what) {
  g_last_error = fmt::format("{}: {} ({})", what, cublasLtGetStatusName(st), cublasLtGetStatusString(st));
  return st == CUBLAS_STATUS_NOT_SUPPORTED ? cudaErrorNotSupported : cudaErrorUnknown;
}

#define LT_TRY(stmt)                                              \
  do {                                                            \
    const cublasStatus_t st_ = (stmt);                            \
    if (st_ != CUBLAS_STATUS_SUCCESS) return lt_fail(st_, #stmt); \
  } while (0)

// Column-major view: D (n x m, ld ldy) = A^T (n x k) * B (k x m), A = W as k x n (ld lda),
// B = x as k x m (ld ldb). Row-major y[m][n] is exactly column-major D.
cudaError_t lt_matmul(const GemmParams& p, cudaDataType_t ab_type, const void* a, int64_t lda, const void* b,
                      int64_t ldb, int64_t ldy, cudaStream_t stream) {
  LtObjects o;
  LT_TRY(cublasLtMatmulDescCreate(&o.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  LT_TRY(cublasLtMatmulDescSetAttribute(o.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  LT_TRY(cublasLtMatmulDescSetAttribute(o.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  LT_TRY(cublasLtMatrixLayoutCreate(&o.a, ab_type, (uint64_t)p.k, (uint64_t)p.n, lda));
  LT_TRY(cublasLtMatrixLayoutCreate(&o.b, ab_type, (uint64_t)p.k, (uint64_t)p.m, ldb));
  LT_TRY(cublasLtMatrixLayoutCreate(&o.d, CUDA_R_32F, (uint64_t)p.n, (uint64_t)p.m, ldy));
  LT_TRY(cublasLtMatmulPreferenceCreate(&o.pref));
  const uint64_t ws = p.workspace_bytes;
  LT_TRY(cublasLtMatmulPreferenceSetAttribute(o.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  LT_TRY(cublasLtMatmulAlgoGetHeuristic(p.lt, o.op, o.a, o.b, o.d, o.d, o.pref, 1, &heur, &found));
  if (found == 0) {
    g_last_error = fmt::format("cuBLASLt has no algorithm for n={} k={} m={}", p.n, p.k, p.m);
    return cudaErrorNotSupported;
  }
  const float alpha = 1.f, beta = 0.f;
  LT_TRY(cublasLtMatmul(p.lt, o.op, &alpha, a, o.a, b, o.b, &beta, p.y, o.d, p.y, o.d, &heur.algo,
                        p.workspace, p.workspace_bytes, stream));
  return cudaGetLastError();
}

}  // namespace

const char* gemm_last_error() { return g_last_error.c_str(); }

size_t gemm_scratch_bytes(QType w_type, int64_t n, int64_t k, int64_t m) {
  const bool quantized = qtype_traits(w_type).quantized;
  const size_t w_bytes = quantized ? align256((size_t)n * (size_t)k * 2) : 0;
  const size_t x_bytes = w_type == QType::F32 ? 0 : align256((size_t)m * (size_t)k * 2);
  return w_bytes + x_bytes;
}

cudaError_t launch_gemm(const GemmParams& p, cudaStream_t stream) {
  g_last_error.clear();
  if (!p.w || !p.x || !p.y || !p.lt || p.n <= 0 || p.k <= 0 || p.m <= 0) return cudaErrorInvalidValue;
  const auto& tr = qtype_traits(p.w_type);
  if (p.k % tr.block_elems) return cudaErrorInvalidValue;
  const size_t dense = (size_t)(p.k / tr.block_elems) * tr.block_bytes;
  const size_t rb = p.w_row_bytes ? p.w_row_bytes : dense;
  const int64_t ldx = p.ldx ? p.ldx : p.k;
  const int64_t ldy = p.ldy ? p.ldy : p.n;
  if (rb < dense || ldx < p.k || ldy < p.n) return cudaErrorInvalidValue;

  if (p.w_type == QType::F32) {
    if (rb % 4) return cudaErrorInvalidValue;
    return lt_matmul(p, CUDA_R_32F, p.w, (int64_t)(rb / 4), p.x, ldx, ldy, stream);
  }
  if (!p.scratch) return cudaErrorInvalidValue;
  auto* scratch = static_cast<uint8_t*>(p.scratch);
  const void* a = p.w;
  int64_t lda = 0;
  cudaDataType_t ab = CUDA_R_16F;
  if (tr.quantized) {
    if (!cuda_weight_type_supported(p.w_type)) return cudaErrorNotSupported;
    DequantizeParams dq;
    dq.type = p.w_type;
    dq.w = p.w;
    dq.row_bytes = rb;
    dq.rows = p.n;
    dq.cols = p.k;
    dq.out = scratch;
    dq.out_f16 = true;
    if (const cudaError_t e = launch_dequantize(dq, stream); e != cudaSuccess) return e;
    a = scratch;
    lda = p.k;
    scratch += align256((size_t)p.n * (size_t)p.k * 2);
  } else if (p.w_type == QType::F16 || p.w_type == QType::BF16) {
    if (rb % 2) return cudaErrorInvalidValue;
    lda = (int64_t)(rb / 2);
    ab = p.w_type == QType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
  } else {
    return cudaErrorNotSupported;
  }
  if (p.x_conv) return lt_matmul(p, ab, a, lda, p.x_conv, p.k, ldy, stream);
  ConvertParams cv;
  cv.x = p.x;
  cv.rows = p.m;
  cv.cols = p.k;
  cv.ld_x = ldx;
  cv.out = scratch;
  cv.to_bf16 = ab == CUDA_R_16BF;
  if (const cudaError_t e = launch_convert_f32(cv, stream); e != cudaSuccess) return e;
  return lt_matmul(p, ab, a, lda, scratch, p.k, ldy, stream);
}

}  // namespace memra::cuda
