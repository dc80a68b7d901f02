#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "common/launch.cuh"
#include "misc/misc_kernels.h"
#include "quant/weight_decode.cuh"

namespace memra::cuda {
namespace {

constexpr int kThreads = 256;

// kEmbedParts threads per 32-element chunk of one gathered row (the decoders work in chunks): each
// decodes the chunk and writes its 32 / kEmbedParts consecutive values. One thread per chunk made a
// 4096-wide decode row one block of 128 threads with 32 dependent stores each (~5.6 us, the step's
// first kernel); the values are the same dequantize_value either way.
constexpr int kEmbedParts = 4;
template <QType T>
__global__ void embed_quant_kernel(const uint8_t* __restrict__ table, size_t row_bytes, int64_t table_rows,
                                   int64_t chunks_per_row, const int32_t* __restrict__ ids, int n_tokens,
                                   float* __restrict__ out, int64_t ld_out) {
  using Tr = wq::WTraits<T>;
  constexpr int kPer = 32 / kEmbedParts;
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (int64_t)n_tokens * chunks_per_row * kEmbedParts) return;
  const int part = (int)(i % kEmbedParts);
  const int64_t tc = i / kEmbedParts, t = tc / chunks_per_row, c = tc % chunks_per_row;
  const int32_t id = ids[t];
  float* o = out + t * ld_out + c * 32 + part * kPer;
  if (id < 0 || id >= table_rows) {
#pragma unroll
    for (int e = 0; e < kPer; ++e) o[e] = __int_as_float(0x7fc00000);
    return;
  }
  wq::Chunk ch;
  Tr::decode(table + (int64_t)id * row_bytes + (c / Tr::kSubs) * Tr::kBytes, (int)(c % Tr::kSubs), ch);
#pragma unroll
  for (int e = 0; e < kPer; ++e) o[e] = wq::dequantize_value<T>(ch, part * kPer + e);
}

template <QType T>
__global__ void embed_float_kernel(const uint8_t* __restrict__ table, size_t row_bytes, int64_t table_rows,
                                   int64_t cols, const int32_t* __restrict__ ids, int n_tokens,
                                   float* __restrict__ out, int64_t ld_out) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (int64_t)n_tokens * cols) return;
  const int64_t t = i / cols, c = i % cols;
  const int32_t id = ids[t];
  float v;
  if (id < 0 || id >= table_rows) {
    v = __int_as_float(0x7fc00000);
  } else {
    const uint8_t* row = table + (int64_t)id * row_bytes;
    if constexpr (T == QType::F32) v = reinterpret_cast<const float*>(row)[c];
    else if constexpr (T == QType::F16) v = __half2float(reinterpret_cast<const __half*>(row)[c]);
    else v = __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[c]);
  }
  out[t * ld_out + c] = v;
}

template <EwiseOp Op>
__global__ void ewise_kernel(float* __restrict__ x, int64_t ld_x, const float* __restrict__ y, int64_t ld_y,
                             int64_t rows, int64_t cols, float s) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols, c = i % cols;
  float& v = x[r * ld_x + c];
  if constexpr (Op == EwiseOp::Add) v = __fadd_rn(v, y[r * ld_y + c]);
  else if constexpr (Op == EwiseOp::AddBias) v = __fadd_rn(v, y[c]);
  else if constexpr (Op == EwiseOp::Scale) v = __fmul_rn(v, s);
  else v = __fmul_rn(s, tanhf(__fdiv_rn(v, s)));
}

unsigned grid_for(int64_t n) { return (unsigned)((n + kThreads - 1) / kThreads); }

// A kernel boundary and nothing else: wait for the previous grid (and let the next one launch).
__global__ void boundary_probe_kernel() { pdl_wait(); }

}  // namespace

cudaError_t launch_boundary_probe(int n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  for (int i = 0; i < n; ++i) {
    const cudaError_t e = launch_kernel(boundary_probe_kernel, dim3(1), dim3(32), 0, stream);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t launch_embed(const EmbedParams& p, cudaStream_t stream) {
  if (!p.table || !p.ids || !p.out || p.n_tokens < 0 || p.cols <= 0 || p.table_rows <= 0)
    return cudaErrorInvalidValue;
  if (p.n_tokens == 0) return cudaSuccess;
  const int64_t ld = p.ld_out ? p.ld_out : p.cols;
  const auto* t = static_cast<const uint8_t*>(p.table);
  switch (p.type) {
#define MEMRA_CASE(N)                                                                             \
  case QType::N: {                                                                                \
    if (p.cols % 32) return cudaErrorInvalidValue;                                               \
    const int64_t cpr = p.cols / 32;                                                              \
    embed_quant_kernel<QType::N><<<grid_for(p.n_tokens * cpr * kEmbedParts), kThreads, 0, stream>>>( \
        t, p.row_bytes, p.table_rows, cpr, p.ids, p.n_tokens, p.out, ld);                         \
    break;                                                                                        \
  }
    MEMRA_CUDA_WTYPES(MEMRA_CASE)
#undef MEMRA_CASE
    case QType::F32:
      embed_float_kernel<QType::F32><<<grid_for(p.n_tokens * p.cols), kThreads, 0, stream>>>(
          t, p.row_bytes, p.table_rows, p.cols, p.ids, p.n_tokens, p.out, ld);
      break;
    case QType::F16:
      embed_float_kernel<QType::F16><<<grid_for(p.n_tokens * p.cols), kThreads, 0, stream>>>(
          t, p.row_bytes, p.table_rows, p.cols, p.ids, p.n_tokens, p.out, ld);
      break;
    case QType::BF16:
      embed_float_kernel<QType::BF16><<<grid_for(p.n_tokens * p.cols), kThreads, 0, stream>>>(
          t, p.row_bytes, p.table_rows, p.cols, p.ids, p.n_tokens, p.out, ld);
      break;
    default:
      return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

cudaError_t launch_ewise(const EwiseParams& p, cudaStream_t stream) {
  if (!p.x || p.rows < 0 || p.cols < 0) return cudaErrorInvalidValue;
  if ((p.op == EwiseOp::Add || p.op == EwiseOp::AddBias) && !p.y) return cudaErrorInvalidValue;
  if (p.rows * p.cols == 0) return cudaSuccess;
  const int64_t ldx = p.ld_x ? p.ld_x : p.cols, ldy = p.ld_y ? p.ld_y : p.cols;
  const unsigned g = grid_for(p.rows * p.cols);
  switch (p.op) {
    case EwiseOp::Add: ewise_kernel<EwiseOp::Add><<<g, kThreads, 0, stream>>>(p.x, ldx, p.y, ldy, p.rows, p.cols, p.s); break;
    case EwiseOp::AddBias: ewise_kernel<EwiseOp::AddBias><<<g, kThreads, 0, stream>>>(p.x, ldx, p.y, ldy, p.rows, p.cols, p.s); break;
    case EwiseOp::Scale: ewise_kernel<EwiseOp::Scale><<<g, kThreads, 0, stream>>>(p.x, ldx, p.y, ldy, p.rows, p.cols, p.s); break;
    case EwiseOp::Softcap: ewise_kernel<EwiseOp::Softcap><<<g, kThreads, 0, stream>>>(p.x, ldx, p.y, ldy, p.rows, p.cols, p.s); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace memra::cuda
