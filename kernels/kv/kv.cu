#include <cuda_fp16.h>
#include "common/launch.cuh"

#include "kv/kv_dequant.cuh"
#include "kv/kv_quant.cuh"
#include "kv/kv_kernels.h"

namespace memra::cuda {
namespace {
using kvq::quantize_block_row;

__global__ void kv_append_blocks_kernel(const float* src, int64_t ld_src, int n_tokens, int row_elems,
                                        uint8_t* cache, QType t, int64_t row_bytes, int block_bytes,
                                        int scale_plane, const int32_t* pos0, int n_ctx) {
  pdl_wait();
  const int lane = threadIdx.x & 31;
  const int nb = row_elems / 32;
  const int64_t total = (int64_t)n_tokens * nb;
  const int p0 = *pos0;
  for (int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; w < total;
       w += ((int64_t)gridDim.x * blockDim.x) >> 5) {
    const int i = (int)(w / nb), b = (int)(w % nb);
    const int64_t pos = (int64_t)p0 + i;
    if (pos < 0 || pos >= n_ctx) continue;  // uniform across the warp
    const float x = src[i * ld_src + b * 32 + lane];
    quantize_block_row(t, scale_plane, x, lane, cache + pos * row_bytes, b, block_bytes);
  }
}

// K and V rows of the same tokens in one launch: warps [0, n_tokens * nb_k) quantize K blocks,
// the rest V blocks, each exactly as kv_append_blocks_kernel does.
struct KvSide {
  const float* src;
  int64_t ld_src;
  int nb;  // 32-element blocks per row
  uint8_t* cache;
  QType t;
  int64_t row_bytes;
  int block_bytes;
  int scale_plane;
};
__global__ void kv_append_pair_kernel(KvSide k, KvSide v, int n_tokens, const int32_t* pos0, int n_ctx) {
  pdl_wait();
  const int lane = threadIdx.x & 31;
  const int64_t total_k = (int64_t)n_tokens * k.nb, total = total_k + (int64_t)n_tokens * v.nb;
  const int p0 = *pos0;
  for (int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; w < total;
       w += ((int64_t)gridDim.x * blockDim.x) >> 5) {
    const bool is_k = w < total_k;
    const KvSide sd = is_k ? k : v;  // by value: a reference to either parameter moved both to local memory
    const int64_t ww = is_k ? w : w - total_k;
    const int i = (int)(ww / sd.nb), b = (int)(ww % sd.nb);
    const int64_t pos = (int64_t)p0 + i;
    if (pos < 0 || pos >= n_ctx) continue;  // uniform across the warp
    const float x = sd.src[i * sd.ld_src + b * 32 + lane];
    quantize_block_row(sd.t, sd.scale_plane, x, lane, sd.cache + pos * sd.row_bytes, b, sd.block_bytes);
  }
}

__global__ void kv_append_plain_kernel(const float* src, int64_t ld_src, int n_tokens, int row_elems,
                                       uint8_t* cache, bool f16, int64_t row_bytes, const int32_t* pos0,
                                       int n_ctx) {
  pdl_wait();
  const int64_t total = (int64_t)n_tokens * row_elems;
  const int p0 = *pos0;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
       t += (int64_t)gridDim.x * blockDim.x) {
    const int i = (int)(t / row_elems), e = (int)(t % row_elems);
    const int64_t pos = (int64_t)p0 + i;
    if (pos < 0 || pos >= n_ctx) continue;
    const float x = src[i * ld_src + e];
    uint8_t* row = cache + pos * row_bytes;
    if (f16)
      reinterpret_cast<__half*>(row)[e] = __float2half_rn(x);
    else
      reinterpret_cast<float*>(row)[e] = x;
  }
}

__global__ void kv_read_kernel(const uint8_t* cache, QType t, int64_t row_bytes, int row_elems, int scale_plane,
                               int pos_begin, int n_rows, float* dst, __half* dst_f16, int64_t ld_dst) {
  const int64_t total = (int64_t)n_rows * (row_elems / 8);
  for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < total;
       g += (int64_t)gridDim.x * blockDim.x) {
    const int i = (int)(g / (row_elems / 8)), e0 = (int)(g % (row_elems / 8)) * 8;
    float v[8];
    kvq::load_row<8>(t, scale_plane, cache + (int64_t)(pos_begin + i) * row_bytes, e0, v);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      if (dst_f16)
        dst_f16[i * ld_dst + e0 + k] = __float2half_rn(v[k]);
      else
        dst[i * ld_dst + e0 + k] = v[k];
    }
  }
}

unsigned grid_for(int64_t threads_needed) {
  return (unsigned)std::max<int64_t>(1, std::min<int64_t>((threads_needed + 255) / 256, 132 * 16));
}

}  // namespace

bool kv_type_supported(QType t) {
  switch (t) {
    case QType::F32:
    case QType::F16:
    case QType::Q8_0:
    case QType::Q5_1:
    case QType::Q5_0:
    case QType::Q4_0:
    case QType::Q4_1:
      return true;
    default:
      return false;
  }
}

int64_t kv_planes_row_bytes(int64_t row_elems) { return (row_elems + row_elems / 16 + 15) / 16 * 16; }

bool kv_scale_plane_valid(QType t, int row_elems, int64_t row_bytes, int scale_plane) {
  return scale_plane == 0 || (t == QType::Q8_0 && row_elems > 0 && row_elems % 32 == 0 && scale_plane == row_elems &&
                              row_bytes >= (int64_t)row_elems + row_elems / 16);
}

cudaError_t launch_kv_append(const KvAppendParams& p, cudaStream_t s) {
  if (!kv_type_supported(p.type) || !p.src || !p.cache || !p.pos0 || p.n_tokens < 0 || p.row_elems <= 0 ||
      p.ld_src < p.row_elems || p.n_ctx <= 0 || !kv_scale_plane_valid(p.type, p.row_elems, p.row_bytes, p.scale_plane))
    return cudaErrorInvalidValue;
  const auto need = qtype_row_bytes(p.type, (uint64_t)p.row_elems);
  if (!need || p.row_bytes < (int64_t)*need || p.row_bytes % 2) return cudaErrorInvalidValue;
  if (p.n_tokens == 0) return cudaSuccess;
  auto* c = static_cast<uint8_t*>(p.cache);
  if (p.type == QType::F32 || p.type == QType::F16) {
    return launch_kernel(kv_append_plain_kernel, dim3(grid_for((int64_t)p.n_tokens * p.row_elems)), dim3(256), 0, s,
                         p.src, p.ld_src, p.n_tokens, p.row_elems, c, p.type == QType::F16, p.row_bytes, p.pos0,
                         p.n_ctx);
  }
  return launch_kernel(kv_append_blocks_kernel, dim3(grid_for((int64_t)p.n_tokens * p.row_elems)), dim3(256), 0, s,
                       p.src, p.ld_src, p.n_tokens, p.row_elems, c, p.type, p.row_bytes,
                       (int)qtype_traits(p.type).block_bytes, p.scale_plane, p.pos0, p.n_ctx);
}

cudaError_t launch_kv_append_pair(const KvAppendParams& k, const KvAppendParams& v, cudaStream_t s) {
  const bool blocks = k.type != QType::F32 && k.type != QType::F16 && v.type != QType::F32 && v.type != QType::F16;
  if (!blocks || k.n_tokens != v.n_tokens || k.pos0 != v.pos0 || k.n_ctx != v.n_ctx || k.row_elems % 32 ||
      v.row_elems % 32) {
    const cudaError_t e = launch_kv_append(k, s);
    return e != cudaSuccess ? e : launch_kv_append(v, s);
  }
  for (const KvAppendParams* p : {&k, &v}) {
    if (!kv_type_supported(p->type) || !p->src || !p->cache || !p->pos0 || p->n_tokens < 0 || p->row_elems <= 0 ||
        p->ld_src < p->row_elems || p->n_ctx <= 0 ||
        !kv_scale_plane_valid(p->type, p->row_elems, p->row_bytes, p->scale_plane))
      return cudaErrorInvalidValue;
    const auto need = qtype_row_bytes(p->type, (uint64_t)p->row_elems);
    if (!need || p->row_bytes < (int64_t)*need || p->row_bytes % 2) return cudaErrorInvalidValue;
  }
  if (k.n_tokens == 0) return cudaSuccess;
  auto side = [](const KvAppendParams& p) {
    return KvSide{p.src, p.ld_src, p.row_elems / 32, static_cast<uint8_t*>(p.cache), p.type, p.row_bytes,
                  (int)qtype_traits(p.type).block_bytes, p.scale_plane};
  };
  return launch_kernel(kv_append_pair_kernel, dim3(grid_for((int64_t)k.n_tokens * (k.row_elems + v.row_elems))),
                       dim3(256), 0, s, side(k), side(v), k.n_tokens, k.pos0, k.n_ctx);
}

cudaError_t launch_kv_read(const KvReadParams& p, cudaStream_t s) {
  if (!kv_type_supported(p.type) || !p.cache || !p.dst == !p.dst_f16 || p.n_rows < 0 || p.pos_begin < 0 ||
      p.row_elems <= 0 || p.row_elems % 8 || p.ld_dst < p.row_elems ||
      !kv_scale_plane_valid(p.type, p.row_elems, p.row_bytes, p.scale_plane))
    return cudaErrorInvalidValue;
  const auto need = qtype_row_bytes(p.type, (uint64_t)p.row_elems);
  if (!need || p.row_bytes < (int64_t)*need) return cudaErrorInvalidValue;
  if (p.n_rows == 0) return cudaSuccess;
  kv_read_kernel<<<grid_for((int64_t)p.n_rows * p.row_elems / 8), 256, 0, s>>>(
      static_cast<const uint8_t*>(p.cache), p.type, p.row_bytes, p.row_elems, p.scale_plane, p.pos_begin, p.n_rows, p.dst,
      static_cast<__half*>(p.dst_f16), p.ld_dst);
  return cudaGetLastError();
}

}  // namespace memra::cuda
