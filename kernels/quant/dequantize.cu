#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "quant/quant_kernels.h"
#include "quant/weight_decode.cuh"

namespace memra::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void store(void* out, int64_t i, float v, bool f16) {
  if (f16) static_cast<__half*>(out)[i] = __float2half_rn(v);
  else static_cast<float*>(out)[i] = v;
}

// One thread per 32-element chunk: decode once, write 32 values.
template <QType T>
__global__ void dequantize_kernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t rows,
                                  int64_t chunks_per_row, void* __restrict__ out, int64_t ld_out, bool f16, bool vec) {
  using Tr = wq::WTraits<T>;
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * chunks_per_row) return;
  const int64_t r = i / chunks_per_row, c = i % chunks_per_row;
  wq::Chunk ch;
  Tr::decode(w + r * row_bytes + (c / Tr::kSubs) * Tr::kBytes, (int)(c % Tr::kSubs), ch);
  const int64_t o = r * ld_out + c * 32;
  if (vec) {
    // 16-byte stores: a thread's 32 outputs are contiguous, so the warp's stores fill whole
    // sectors (one 2-byte store per element ran at 219 GB/s on the H200 for 14336x4096 Q4_K).
    if (f16) {
      uint32_t h[16];
#pragma unroll
      for (int e = 0; e < 16; ++e) {
        const __half2 v = __floats2half2_rn(wq::dequantize_value<T>(ch, 2 * e), wq::dequantize_value<T>(ch, 2 * e + 1));
        h[e] = *reinterpret_cast<const uint32_t*>(&v);
      }
      uint4* dst = reinterpret_cast<uint4*>(static_cast<__half*>(out) + o);
#pragma unroll
      for (int k = 0; k < 4; ++k) dst[k] = make_uint4(h[4 * k], h[4 * k + 1], h[4 * k + 2], h[4 * k + 3]);
    } else {
      float4* dst = reinterpret_cast<float4*>(static_cast<float*>(out) + o);
#pragma unroll
      for (int k = 0; k < 8; ++k)
        dst[k] = make_float4(wq::dequantize_value<T>(ch, 4 * k), wq::dequantize_value<T>(ch, 4 * k + 1),
                             wq::dequantize_value<T>(ch, 4 * k + 2), wq::dequantize_value<T>(ch, 4 * k + 3));
    }
    return;
  }
#pragma unroll
  for (int e = 0; e < 32; ++e) store(out, o + e, wq::dequantize_value<T>(ch, e), f16);
}

// Float weights: one thread per element (f16/bf16/f32 -> f32 is exact; -> f16 rounds).
template <QType T>
__global__ void convert_weights_kernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t rows,
                                       int64_t cols, void* __restrict__ out, int64_t ld_out, bool f16) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols, c = i % cols;
  const uint8_t* row = w + r * row_bytes;
  float v;
  if constexpr (T == QType::F32) v = reinterpret_cast<const float*>(row)[c];
  else if constexpr (T == QType::F16) v = __half2float(reinterpret_cast<const __half*>(row)[c]);
  else v = __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[c]);
  store(out, r * ld_out + c, v, f16);
}

__global__ void convert_f32_kernel(const float* __restrict__ x, int64_t rows, int64_t cols, int64_t ld_x,
                                   void* __restrict__ out, bool bf16) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const float v = x[(i / cols) * ld_x + i % cols];
  if (bf16) static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(v);
  else static_cast<__half*>(out)[i] = __float2half_rn(v);
}

// 8 consecutive elements per thread: two 16-byte loads, one 16-byte store (cols % 8 == 0, x, ld
// and out 16-byte aligned); the same per-element rounding as convert_f32_kernel.
__global__ void convert_f32_x8_kernel(const float* __restrict__ x, int64_t rows, int64_t cols8, int64_t ld_x,
                                      void* __restrict__ out, bool bf16) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * cols8) return;
  const int64_t r = i / cols8, c = (i - r * cols8) * 8;
  const float4* src = reinterpret_cast<const float4*>(x + r * ld_x + c);
  const float4 a = __ldg(src), b = __ldg(src + 1);
  const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  uint32_t w[4];
  for (int j = 0; j < 4; ++j) {
    if (bf16) {
      const __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]);
      w[j] = *reinterpret_cast<const uint32_t*>(&h);
    } else {
      const __half2 h = __floats2half2_rn(v[2 * j], v[2 * j + 1]);
      w[j] = *reinterpret_cast<const uint32_t*>(&h);
    }
  }
  reinterpret_cast<uint4*>(out)[i] = make_uint4(w[0], w[1], w[2], w[3]);
}

unsigned grid_for(int64_t n) { return (unsigned)((n + kThreads - 1) / kThreads); }

}  // namespace

bool cuda_weight_type_supported(QType t) {
  switch (t) {
#define MEMRA_CASE(N) case QType::N:
    MEMRA_CUDA_WTYPES(MEMRA_CASE)
#undef MEMRA_CASE
    case QType::F32:
    case QType::F16:
    case QType::BF16:
      return true;
    default:
      return false;
  }
}

cudaError_t launch_dequantize(const DequantizeParams& p, cudaStream_t stream) {
  if (!p.w || !p.out || p.rows <= 0 || p.cols <= 0) return cudaErrorInvalidValue;
  const auto& tr = qtype_traits(p.type);
  if (p.cols % tr.block_elems) return cudaErrorInvalidValue;
  const size_t dense = (size_t)(p.cols / tr.block_elems) * tr.block_bytes;
  const size_t rb = p.row_bytes ? p.row_bytes : dense;
  const int64_t ld = p.ld_out ? p.ld_out : p.cols;
  if (rb < dense || ld < p.cols) return cudaErrorInvalidValue;
  const auto* w = static_cast<const uint8_t*>(p.w);
  const bool vec = reinterpret_cast<uintptr_t>(p.out) % 16 == 0 && ld % (p.out_f16 ? 8 : 4) == 0;
  switch (p.type) {
#define MEMRA_CASE(N)                                                                                \
  case QType::N: {                                                                                   \
    const int64_t cpr = p.cols / 32;                                                                 \
    dequantize_kernel<QType::N><<<grid_for(p.rows * cpr), kThreads, 0, stream>>>(w, rb, p.rows, cpr, \
                                                                                  p.out, ld, p.out_f16, vec); \
    break;                                                                                           \
  }
    MEMRA_CUDA_WTYPES(MEMRA_CASE)
#undef MEMRA_CASE
    case QType::F32:
      convert_weights_kernel<QType::F32><<<grid_for(p.rows * p.cols), kThreads, 0, stream>>>(
          w, rb, p.rows, p.cols, p.out, ld, p.out_f16);
      break;
    case QType::F16:
      convert_weights_kernel<QType::F16><<<grid_for(p.rows * p.cols), kThreads, 0, stream>>>(
          w, rb, p.rows, p.cols, p.out, ld, p.out_f16);
      break;
    case QType::BF16:
      convert_weights_kernel<QType::BF16><<<grid_for(p.rows * p.cols), kThreads, 0, stream>>>(
          w, rb, p.rows, p.cols, p.out, ld, p.out_f16);
      break;
    default:
      return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

cudaError_t launch_convert_f32(const ConvertParams& p, cudaStream_t stream) {
  if (!p.x || !p.out || p.rows <= 0 || p.cols <= 0) return cudaErrorInvalidValue;
  const int64_t ld = p.ld_x ? p.ld_x : p.cols;
  if (ld < p.cols) return cudaErrorInvalidValue;
  const bool vec = p.cols % 8 == 0 && ld % 4 == 0 && reinterpret_cast<uintptr_t>(p.x) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(p.out) % 16 == 0;
  if (vec) {
    convert_f32_x8_kernel<<<grid_for(p.rows * (p.cols / 8)), kThreads, 0, stream>>>(p.x, p.rows, p.cols / 8, ld, p.out,
                                                                                      p.to_bf16);
    return cudaGetLastError();
  }
  convert_f32_kernel<<<grid_for(p.rows * p.cols), kThreads, 0, stream>>>(p.x, p.rows, p.cols, ld, p.out, p.to_bf16);
  return cudaGetLastError();
}

}  // namespace memra::cuda
