#include <cuda_fp16.h>

#include "quant/block_q8_1.h"
#include "quant/quant_kernels.h"

namespace memra::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

// One warp per 32-element block: lane e owns element e.
__global__ void quantize_q8_1_kernel(const float* __restrict__ x, BlockQ8_1* __restrict__ y,
                                     int64_t blocks_per_row, int64_t n_blocks, int64_t ld_x) {
  const int lane = threadIdx.x & 31;
  const int64_t ib = (int64_t)blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5);
  if (ib >= n_blocks) return;
  const int64_t row = ib / blocks_per_row, b = ib % blocks_per_row;
  const float v = x[row * ld_x + b * 32 + lane];
  float amax = fabsf(v);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const int q = (int)roundf(v * id);
  int sum = q;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  BlockQ8_1& out = y[ib];
  out.qs[lane] = (int8_t)q;
  if (lane == 0) {
    out.d = __half_as_ushort(__float2half_rn(d));
    out.s = __half_as_ushort(__float2half_rn(__fmul_rn((float)sum, d)));
  }
}

}  // namespace

cudaError_t launch_quantize_q8_1(const QuantizeQ8_1Params& p, cudaStream_t stream) {
  if (!p.x || !p.y || p.n <= 0 || p.n % 32 || p.rows <= 0) return cudaErrorInvalidValue;
  const int64_t ld = p.ld_x ? p.ld_x : p.n;
  if (ld < p.n) return cudaErrorInvalidValue;
  const int64_t bpr = p.n / 32, nb = bpr * p.rows;
  const int64_t grid = (nb + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (grid > 0x7fffffff) return cudaErrorInvalidConfiguration;
  quantize_q8_1_kernel<<<(unsigned)grid, 32 * kWarpsPerBlock, 0, stream>>>(
      p.x, static_cast<BlockQ8_1*>(p.y), bpr, nb, ld);
  return cudaGetLastError();
}

}  // namespace memra::cuda
