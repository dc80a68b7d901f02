#include <cuda_fp16.h>

#include "act/act_kernels.h"
#include "act/act_math.cuh"
#include "norm/q8_1_emit.cuh"

namespace memra::cuda {
namespace {

template <ActKind A>
__global__ void activate_kernel(const float* x, int64_t ld, float* out, int64_t ld_out, int rows, int cols) {
  const int64_t total = (int64_t)rows * cols;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
       t += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = t / cols, c = t % cols;
    out[r * ld_out + c] = act<A>(x[r * ld + c]);
  }
}

template <ActKind A>
__device__ __forceinline__ float glu_value(const float* gate, int64_t ld_g, const float* up, int64_t ld_u,
                                           int64_t r, int c) {
  if constexpr (A == ActKind::SwigluOai) return swiglu_oai(gate[r * ld_g + c], up[r * ld_u + c]);
  else return __fmul_rn(act<A>(gate[r * ld_g + c]), up[r * ld_u + c]);
}

template <ActKind A>
__global__ void glu_kernel(const float* gate, int64_t ld_g, const float* up, int64_t ld_u, float* out,
                           int64_t ld_o, int rows, int cols) {
  const int64_t total = (int64_t)rows * cols;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
       t += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = t / cols;
    const int c = (int)(t % cols);
    out[r * ld_o + c] = glu_value<A>(gate, ld_g, up, ld_u, r, c);
  }
}

// 4 consecutive elements per thread: 16-byte loads and stores (cols and every ld % 4 == 0, rows
// 16-byte aligned), the same glu_value per element; out16 (optional): the f16 rounding as well.
template <ActKind A>
__global__ void glu_x4_kernel(const float* gate, int64_t ld_g, const float* up, int64_t ld_u, float* out,
                              int64_t ld_o, __half* out16, int rows, int cols4) {
  const int64_t total = (int64_t)rows * cols4;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
       t += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = t / cols4;
    const int c = (int)(t - r * cols4) * 4;
    const float4 g = *reinterpret_cast<const float4*>(gate + r * ld_g + c);
    const float4 u = *reinterpret_cast<const float4*>(up + r * ld_u + c);
    const float4 v = make_float4(__fmul_rn(act<A>(g.x), u.x), __fmul_rn(act<A>(g.y), u.y),
                                 __fmul_rn(act<A>(g.z), u.z), __fmul_rn(act<A>(g.w), u.w));
    *reinterpret_cast<float4*>(out + r * ld_o + c) = v;
    if (out16) {
      const __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
      uint2 w;
      w.x = *reinterpret_cast<const uint32_t*>(&lo);
      w.y = *reinterpret_cast<const uint32_t*>(&hi);
      *reinterpret_cast<uint2*>(out16 + r * (int64_t)cols4 * 4 + c) = w;
    }
  }
}

bool glu_x4_ok(const GluParams& p) {
  const auto a16 = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  return p.cols % 4 == 0 && p.ld_gate % 4 == 0 && p.ld_up % 4 == 0 && p.ld_out % 4 == 0 && a16(p.gate) &&
         a16(p.up) && a16(p.out) && reinterpret_cast<uintptr_t>(p.out_f16) % 8 == 0;
}

// One warp per q8_1 block.
template <ActKind A>
__global__ void glu_q8_1_kernel(const float* gate, int64_t ld_g, const float* up, int64_t ld_u,
                                uint8_t* out, int64_t ld_o, int rows, int cols) {
  const int64_t blocks_per_row = cols / 32;
  const int64_t total = (int64_t)rows * blocks_per_row;
  const int lane = threadIdx.x & 31;
  for (int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; w < total;
       w += ((int64_t)gridDim.x * blockDim.x) >> 5) {
    const int64_t r = w / blocks_per_row;
    const int b = (int)(w % blocks_per_row);
    const float v = glu_value<A>(gate, ld_g, up, ld_u, r, b * 32 + lane);
    emit_q8_1_block(v, lane, out + r * ld_o + (int64_t)b * kQ81BlockBytes);
  }
}

unsigned grid_for(int64_t threads_needed, int threads) {
  return (unsigned)std::min<int64_t>((threads_needed + threads - 1) / threads, 132 * 16);
}

}  // namespace

cudaError_t launch_activate(const ActParams& p, cudaStream_t s) {
  if (!p.x || !p.out || p.rows < 0 || p.cols <= 0 || p.ld_x < p.cols || p.ld_out < p.cols)
    return cudaErrorInvalidValue;
  if (p.act == ActKind::SwigluOai) return cudaErrorNotSupported;  // a GLU only
  if (p.rows == 0) return cudaSuccess;
  const unsigned g = grid_for((int64_t)p.rows * p.cols, 256);
  if (p.act == ActKind::Silu)
    activate_kernel<ActKind::Silu><<<g, 256, 0, s>>>(p.x, p.ld_x, p.out, p.ld_out, p.rows, p.cols);
  else if (p.act == ActKind::GeluTanh)
    activate_kernel<ActKind::GeluTanh><<<g, 256, 0, s>>>(p.x, p.ld_x, p.out, p.ld_out, p.rows, p.cols);
  else
    activate_kernel<ActKind::Sigmoid><<<g, 256, 0, s>>>(p.x, p.ld_x, p.out, p.ld_out, p.rows, p.cols);
  return cudaGetLastError();
}

bool glu_f16_copy_supported(const GluParams& p) { return p.out && glu_x4_ok(p); }

cudaError_t launch_glu(const GluParams& p, cudaStream_t s) {
  if (!p.gate || !p.up || p.rows < 0 || p.cols <= 0 || p.ld_gate < p.cols || p.ld_up < p.cols)
    return cudaErrorInvalidValue;
  if ((p.out == nullptr) == (p.out_q8_1 == nullptr)) return cudaErrorInvalidValue;  // exactly one
  if (p.out_f16 && !p.out) return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  const bool silu_act = p.act == ActKind::Silu;
  const bool plain_only = p.act == ActKind::Sigmoid || p.act == ActKind::SwigluOai;
  if (plain_only && (!p.out || p.out_f16)) return cudaErrorNotSupported;
  if (p.out) {
    if (p.ld_out < p.cols) return cudaErrorInvalidValue;
    if (plain_only) {
      const unsigned g = grid_for((int64_t)p.rows * p.cols, 256);
      if (p.act == ActKind::Sigmoid)
        glu_kernel<ActKind::Sigmoid><<<g, 256, 0, s>>>(p.gate, p.ld_gate, p.up, p.ld_up, p.out, p.ld_out, p.rows,
                                                       p.cols);
      else
        glu_kernel<ActKind::SwigluOai><<<g, 256, 0, s>>>(p.gate, p.ld_gate, p.up, p.ld_up, p.out, p.ld_out, p.rows,
                                                         p.cols);
      return cudaGetLastError();
    }
    if (glu_x4_ok(p)) {
      const unsigned g = grid_for((int64_t)p.rows * (p.cols / 4), 256);
      auto* o16 = static_cast<__half*>(p.out_f16);
      if (silu_act)
        glu_x4_kernel<ActKind::Silu><<<g, 256, 0, s>>>(p.gate, p.ld_gate, p.up, p.ld_up, p.out, p.ld_out, o16,
                                                       p.rows, p.cols / 4);
      else
        glu_x4_kernel<ActKind::GeluTanh><<<g, 256, 0, s>>>(p.gate, p.ld_gate, p.up, p.ld_up, p.out, p.ld_out, o16,
                                                           p.rows, p.cols / 4);
      return cudaGetLastError();
    }
    if (p.out_f16) return cudaErrorNotSupported;  // the f16 copy needs the 4-wide path
    const unsigned g = grid_for((int64_t)p.rows * p.cols, 256);
    if (silu_act)
      glu_kernel<ActKind::Silu><<<g, 256, 0, s>>>(p.gate, p.ld_gate, p.up, p.ld_up, p.out, p.ld_out,
                                                  p.rows, p.cols);
    else
      glu_kernel<ActKind::GeluTanh><<<g, 256, 0, s>>>(p.gate, p.ld_gate, p.up, p.ld_up, p.out, p.ld_out,
                                                      p.rows, p.cols);
  } else {
    if (p.cols % 32 || p.ld_out_bytes < (int64_t)p.cols / 32 * kQ81BlockBytes) return cudaErrorInvalidValue;
    auto* oq = static_cast<uint8_t*>(p.out_q8_1);
    const unsigned g = grid_for((int64_t)p.rows * p.cols, 256);
    if (silu_act)
      glu_q8_1_kernel<ActKind::Silu><<<g, 256, 0, s>>>(p.gate, p.ld_gate, p.up, p.ld_up, oq,
                                                       p.ld_out_bytes, p.rows, p.cols);
    else
      glu_q8_1_kernel<ActKind::GeluTanh><<<g, 256, 0, s>>>(p.gate, p.ld_gate, p.up, p.ld_up, oq,
                                                           p.ld_out_bytes, p.rows, p.cols);
  }
  return cudaGetLastError();
}

}  // namespace memra::cuda
