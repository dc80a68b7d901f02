#include <cuda_fp16.h>

#include <algorithm>

#include "norm/norm_kernels.h"
#include "common/bulk_copy.cuh"
#include "common/launch.cuh"
#include "norm/norm_math.cuh"
#include "norm/q8_1_emit.cuh"

namespace memra::cuda {
namespace {

// Thread t of a row's block owns the 4-float chunks t, t + T, t + 2T, ... of the row (T threads,
// a multiple of 32, at most 256; up to 8 chunks per thread, 32 * T columns, stay in registers from
// the load to the store, longer rows re-read the later ones). A warp's load or store of one chunk
// index is 512 contiguous bytes, and a 32-element q8 block is 8 consecutive lanes (3 shuffle
// steps instead of 5, four blocks per warp at once). Every variant (any MODE/EMIT, any row count,
// aligned or not) sums a row's squares in the same order: per thread over its chunks and their
// elements in increasing order, then the fixed block_sum tree, so the bits depend only on
// (x, cols).
// Why: the first form (256 threads, one element per thread per step, one warp per q8 block)
// took 9.7 us per 4096-column decode row on the H200 (ncu, 18% of a qwen3-8b decode step,
// receipts/h200/logs/ncu-decode-step-qwen3-8b-q4_k_m-c019650-20261201.txt); a second (one
// 32-element block per thread) 6.5 us, but its float4 loads left 128 bytes between lanes and
// prefill fell 4% (pp512 16858 -> 16190 in both arms of
// receipts/h200/pp-bench-qwen3-8b-mmvs-interleave-arms-985a38c-20261201.jsonl.gz).
constexpr int kJ = 8;  // chunks per thread held in registers

int norm_threads(int cols) { return rms_norm_threads(cols); }

struct NormArgs {
  const float* x;  // MODE 0 input, MODE 1 residual
  int64_t ld_x;
  const float* delta;
  int64_t ld_delta;
  float* res_out;
  int64_t ld_res_out;
  const float* w;
  float* out;
  int64_t ld_out;
  uint8_t* out_q;
  int64_t ld_q;
  int cols;
  float eps;
  int8_t* xq;   // EMIT 2: q8s planes of out (rows x cols, dense)
  float2* xds;
  __half* out16;  // EMIT 3: f16 copy of out (rows x cols, dense; cols % 4 == 0, vec)
  bool vec;     // every f32 row 16-byte aligned: float4 loads and stores (same values)
  bool xq_il;   // EMIT 2: xq in the interleaved order (q8s_order.h; one row)
  // MODE 0 (RmsNormParams::bulk, norm_bulk_applies): the row is copied into dynamic shared memory
  // by one bulk copy after the wait and read from there (the same values).
  bool bulk = false;
};

// Elements [4c, 4c + 4) of a row that has `cols` of them, zeros beyond.
__device__ __forceinline__ float4 load4(const float* row, int c, int cols, bool vec) {
  const int e = 4 * c;
  if (vec && e + 4 <= cols) return reinterpret_cast<const float4*>(row)[c];
  float4 f = make_float4(0.f, 0.f, 0.f, 0.f);
  if (e < cols) f.x = row[e];
  if (e + 1 < cols) f.y = row[e + 1];
  if (e + 2 < cols) f.z = row[e + 2];
  if (e + 3 < cols) f.w = row[e + 3];
  return f;
}
__device__ __forceinline__ void store4(float* row, int c, int cols, bool vec, float4 f) {
  const int e = 4 * c;
  if (vec && e + 4 <= cols) {
    reinterpret_cast<float4*>(row)[c] = f;
    return;
  }
  if (e < cols) row[e] = f.x;
  if (e + 1 < cols) row[e + 1] = f.y;
  if (e + 2 < cols) row[e + 2] = f.z;
  if (e + 3 < cols) row[e + 3] = f.w;
}
__device__ __forceinline__ float4 add4(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }

// MODE 0: plain (src = x). MODE 1: res_out = x + delta, src = res_out.
// EMIT 0: f32 out; 1: q8_1 blocks only; 2: f32 out and its q8s planes (mmvs.h), the planes
// byte-identical to launch_quantize_q8s(out) (same quantization of the same values); 3: f32 out
// and its f16 rounding (the next GEMM's input, byte-identical to launch_convert_f32(out)).
// Grid (rows, S): with S > 1 (RmsNormParams::split, MODE 0 with out not overlapping x) each of a
// row's S blocks computes the same sum of squares in the same order (every block loads the whole
// row), then writes only its share of the outputs: the register-held chunk index j with
// j % S == blockIdx.y (and the same rule past them). Same bits as S = 1 by construction.
template <int MODE, int EMIT>
__global__ void __launch_bounds__(kNormMaxThreads) rms_norm_kernel(NormArgs a) {
  __shared__ float smem[32];
  const int64_t r = blockIdx.x;
  const int S = (int)gridDim.y, slice = (int)blockIdx.y;
  const int cols = a.cols, T = blockDim.x, t = threadIdx.x, lane = t & 31;
  const int n_chunks = (cols + 3) / 4;
  const int n_j = (n_chunks + T - 1) / T;  // warp-uniform: the emits' shuffles run on every lane
  const bool has_w = a.w != nullptr;
  // The norm weights of the register-held chunks are requested before the dependency wait:
  // weights are never written during a step.
  float4 wv[kJ];
#pragma unroll
  for (int j = 0; j < kJ; ++j)
    wv[j] = has_w && j < n_j ? load4(a.w, t + T * j, cols, a.vec) : make_float4(0.f, 0.f, 0.f, 0.f);
  // Bulk form (MODE 0; the launcher checks 16-byte rows, cols % 4 == 0 and n_j <= kJ): the
  // barrier is set up before the wait (shared memory only).
  extern __shared__ __align__(16) float xs[];
  __shared__ __align__(8) uint64_t xbar;
  const bool bulk = MODE == 0 && a.bulk;
  if (bulk) {
    if (t == 0) bulk::init_barrier(&xbar);
    __syncthreads();
  }
  pdl_wait();
  const float* x = a.x + r * a.ld_x;
  if (bulk && t == 0) bulk::copy_to_shared(xs, x, (uint32_t)cols * 4u, &xbar);
  // Every load of the register-held chunks is issued before the first store: res_out may alias
  // the residual, so a store would keep the next chunk's loads behind it (one round trip per
  // chunk). The rolled loop of c810365 did that; it is the suspected cause of the drop between
  // its run and 985a38c's (q4_k_m tg128 no-split arm 305.1 vs 320.6, q4_0 315.6 vs 355.7,
  // pp-bench-qwen3-8b-split-k-arm-c810365-20261201.jsonl.gz; not isolated in one run).
  float4 v[kJ];
  if (bulk) {
    bulk::wait_barrier(&xbar, 0);
#pragma unroll
    for (int j = 0; j < kJ; ++j)
      v[j] = t + T * j < n_chunks ? reinterpret_cast<const float4*>(xs)[t + T * j] : make_float4(0.f, 0.f, 0.f, 0.f);
  } else {
#pragma unroll
    for (int j = 0; j < kJ; ++j) v[j] = j < n_j ? load4(x, t + T * j, cols, a.vec) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  if (MODE == 1) {
    float4 dl[kJ];
#pragma unroll
    for (int j = 0; j < kJ; ++j)
      dl[j] = j < n_j ? load4(a.delta + r * a.ld_delta, t + T * j, cols, a.vec) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int j = 0; j < kJ; ++j) {
      v[j] = add4(v[j], dl[j]);
      if (j < n_j) store4(a.res_out + r * a.ld_res_out, t + T * j, cols, a.vec, v[j]);
    }
  }
  float ss = 0.0f;
  const auto sq = [&](float4 u) {  // zeros past the row add nothing
    ss += __fmul_rn(u.x, u.x);
    ss += __fmul_rn(u.y, u.y);
    ss += __fmul_rn(u.z, u.z);
    ss += __fmul_rn(u.w, u.w);
  };
#pragma unroll
  for (int j = 0; j < kJ; ++j) sq(v[j]);
  for (int j = kJ; j < n_j; ++j) {  // rows past 32 * T columns
    const int c = t + T * j;
    float4 u = load4(x, c, cols, a.vec);
    if (MODE == 1) {
      u = add4(u, load4(a.delta + r * a.ld_delta, c, cols, a.vec));
      store4(a.res_out + r * a.ld_res_out, c, cols, a.vec, u);
    }
    sq(u);
  }
  // The barriers of block_sum order every read of x / delta before any write of out (which may
  // alias them) by another thread; res_out is re-read below only by the thread that wrote it.
  const float inv = norm_scale(norm_block_sum(ss, smem), cols, a.eps);
  const float* src = MODE == 1 ? a.res_out + r * a.ld_res_out : x;
  const auto emit = [&](int c, float4 u, float4 wb) {
    const float y[4] = {normed_by(u.x, inv, has_w, wb.x), normed_by(u.y, inv, has_w, wb.y),
                        normed_by(u.z, inv, has_w, wb.z), normed_by(u.w, inv, has_w, wb.w)};
    if (EMIT != 1 && c < n_chunks) store4(a.out + r * a.ld_out, c, cols, a.vec, make_float4(y[0], y[1], y[2], y[3]));
    // cols % 32 == 0 for the emits: chunk c is part k = c % 8 of q8 block c / 8, whose 8 parts
    // are lanes 8 * (lane / 8) .. + 7 of this warp.
    if (EMIT == 2)
      emit_q8s_block8(y, lane, c < n_chunks, a.xq + r * cols, 4 * (int64_t)c, a.xq_il, a.xds + (r * cols) / 32 + c / 8);
    if (EMIT == 1)
      emit_q8_1_block8(y, lane, c < n_chunks, a.out_q + r * a.ld_q + (int64_t)(c / 8) * kQ81BlockBytes);
    if (EMIT == 3 && c < n_chunks) {
      const __half2 lo = __floats2half2_rn(y[0], y[1]), hi = __floats2half2_rn(y[2], y[3]);
      uint2 h;
      h.x = *reinterpret_cast<const uint32_t*>(&lo);
      h.y = *reinterpret_cast<const uint32_t*>(&hi);
      reinterpret_cast<uint2*>(a.out16 + r * cols)[c] = h;
    }
  };
#pragma unroll
  for (int j = 0; j < kJ; ++j)  // n_j and j % S are block-uniform: the shuffles see every lane
    if (j < n_j && j % S == slice) emit(t + T * j, v[j], wv[j]);
  for (int j = kJ; j < n_j; ++j) {
    if (j % S != slice) continue;
    const int c = t + T * j;
    emit(c, load4(src, c, cols, a.vec), has_w ? load4(a.w, c, cols, a.vec) : make_float4(0.f, 0.f, 0.f, 0.f));
  }
}

constexpr int kDeferThreads = 128;
constexpr int kDeferMaxBlock = kDeferThreads * kMaxNormSplit;  // RmsNormDeferParams::scale's block at split 8
// RmsNormDeferParams: block `slice` of S takes the chunks t + T * j with j % S == slice (as the
// split norm's emit); the weights of its first chunk are requested before the dependency wait.
// Each q8s block's partial sum of squares (defer_block_ss) goes to partials[r][block].
// SCALE (RmsNormDeferParams::scale): one block per row, its thread slice * T + t doing block slice's
// thread t's work; the partials go to shared memory and warp 0 sums them as the matvecs would.
struct DeferArgs {
  const float* x;
  int64_t ld_x;
  const float* w;
  int cols;
  int8_t* xq;
  float2* xds;
  bool il;
  bool vec;
  float* partials;
  float* scale;
  float eps;
};
template <bool SCALE>
__global__ void __launch_bounds__(SCALE ? kDeferMaxBlock : kNormMaxThreads) rms_norm_defer_kernel(DeferArgs a) {
  constexpr int T = kDeferThreads;
  const int S = SCALE ? (int)blockDim.x / T : (int)gridDim.x;
  const int slice = SCALE ? (int)threadIdx.x / T : (int)blockIdx.x, t = (int)threadIdx.x % T, lane = t & 31;
  const int64_t r = blockIdx.y;  // the row (rows > 1: the plain order, row r's planes at r * cols)
  const float* x = a.x + r * a.ld_x;
  const int n_chunks = a.cols / 4, n_j = (n_chunks + T - 1) / T, n_part = a.cols / 32;
  const bool has_w = a.w != nullptr;
  const float4 ones = make_float4(1.f, 1.f, 1.f, 1.f);
  const float4 w0 = has_w && slice < n_j ? load4(a.w, t + T * slice, a.cols, a.vec) : ones;
  [[maybe_unused]] __shared__ float part[SCALE ? kNormDeferMaxPartials : 1];
  float* const out_part = SCALE ? part : a.partials + r * n_part;
  pdl_wait();
  for (int j = slice; j < n_j; j += S) {  // warp-uniform: the emit's shuffles see every lane
    const int c = t + T * j;
    const bool valid = c < n_chunks;
    const float4 v = valid ? load4(x, c, a.cols, a.vec) : make_float4(0.f, 0.f, 0.f, 0.f);
    const float4 wb = j == slice ? w0 : has_w ? load4(a.w, c, a.cols, a.vec) : ones;
    const float u[4] = {v.x, v.y, v.z, v.w};
    const float y[4] = {has_w ? __fmul_rn(u[0], wb.x) : u[0], has_w ? __fmul_rn(u[1], wb.y) : u[1],
                        has_w ? __fmul_rn(u[2], wb.z) : u[2], has_w ? __fmul_rn(u[3], wb.w) : u[3]};
    emit_q8s_block8(y, lane, valid, a.xq + r * a.cols, 4 * (int64_t)c, a.il, a.xds + (r * a.cols) / 32 + c / 8);
    const float ss = defer_block_ss(u);  // (cols % 32 == 0: a block's 8 lanes are all valid or none)
    if (valid && (lane & 7) == 0) out_part[c / 8] = ss;
  }
  if constexpr (SCALE) {
    __syncthreads();
    if (threadIdx.x < 32) a.scale[r] = norm_scale(warp_sum_f32(defer_lane_sum(part, n_part, lane)), a.cols, a.eps);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
bool vec_ok(const void* p, int64_t ld) { return !p || (aligned16(p) && ld % 4 == 0); }

// One warp per (row, head).
__global__ void head_rms_norm_kernel(const float* x, int64_t ld_x, float* out, int64_t ld_out,
                                     const float* __restrict__ w, int rows, int n_head, int head_dim,
                                     float eps) {
  pdl_wait();
  const int gw = (int)((blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5);
  const int lane = threadIdx.x & 31;
  if (gw >= rows * n_head) return;
  const float* h = x + (int64_t)(gw / n_head) * ld_x + (int64_t)(gw % n_head) * head_dim;
  float* o = out + (int64_t)(gw / n_head) * ld_out + (int64_t)(gw % n_head) * head_dim;
  // Up to 256 dims: every load of the head before the first store (o may alias h).
  constexpr int kMax = 8;
  float v[kMax];
#pragma unroll
  for (int j = 0; j < kMax; ++j) v[j] = lane + 32 * j < head_dim ? h[lane + 32 * j] : 0.0f;
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kMax; ++j)
    if (lane + 32 * j < head_dim) ss += __fmul_rn(v[j], v[j]);
  for (int i = lane + 32 * kMax; i < head_dim; i += 32) ss += __fmul_rn(h[i], h[i]);
  const float inv = norm_scale(warp_sum_f32(ss), head_dim, eps);
  if (head_dim <= 32 * kMax) {
#pragma unroll
    for (int j = 0; j < kMax; ++j)
      if (lane + 32 * j < head_dim) o[lane + 32 * j] = normed(v[j], inv, w, lane + 32 * j);
  } else {
    for (int i = lane; i < head_dim; i += 32) o[i] = normed(h[i], inv, w, i);
  }
}

}  // namespace

bool rms_norm_f16_copy_supported(const RmsNormParams& p) {
  return p.cols % 4 == 0 && !p.q8s_xq && vec_ok(p.x, p.ld_x) && vec_ok(p.out, p.ld_out) && vec_ok(p.w, 0);
}
bool add_rms_norm_f16_copy_supported(const AddRmsNormParams& p) {
  return p.cols % 4 == 0 && !p.q8s_xq && vec_ok(p.residual, p.ld_residual) && vec_ok(p.delta, p.ld_delta) &&
         vec_ok(p.residual_out, p.ld_residual_out) && vec_ok(p.out, p.ld_out) && vec_ok(p.w, 0);
}

bool rms_norm_bulk_applies(const RmsNormParams& p) {
  return p.bulk && p.cols > 0 && p.cols % 4 == 0 && p.cols <= 8192 && vec_ok(p.x, p.ld_x) && vec_ok(p.out, p.ld_out) &&
         vec_ok(p.w, 0);
}

cudaError_t launch_rms_norm(const RmsNormParams& p, cudaStream_t s) {
  if (p.rows < 0 || p.cols <= 0 || !p.x || !p.out || p.ld_x < p.cols || p.ld_out < p.cols)
    return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  if ((p.q8s_xq != nullptr) != (p.q8s_xds != nullptr) || (p.q8s_xq && p.cols % 32) || (p.q8s_il && p.rows != 1))
    return cudaErrorInvalidValue;
  const bool vec = vec_ok(p.x, p.ld_x) && vec_ok(p.out, p.ld_out) && vec_ok(p.w, 0);
  const bool bulk = rms_norm_bulk_applies(p);
  const NormArgs a{p.x, p.ld_x, nullptr, 0, nullptr, 0, p.w, p.out, p.ld_out, nullptr, 0, p.cols, p.eps,
                   p.q8s_xq, static_cast<float2*>(p.q8s_xds), static_cast<__half*>(p.out_f16), vec, p.q8s_il, bulk};
  const size_t smem = bulk ? (size_t)p.cols * sizeof(float) : 0;  // at most 32 KB: no opt-in
  const dim3 block(norm_threads(p.cols));
  // Split rows: the blocks of a row read all of x while others write out, so out must not overlap x.
  if (p.split < 1 || p.split > kMaxNormSplit) return cudaErrorInvalidValue;
  if (p.split > 1) {
    const auto lo = [](const float* q) { return reinterpret_cast<uintptr_t>(q); };
    const auto hi = [&](const float* q, int64_t ld) { return lo(q) + ((size_t)(p.rows - 1) * ld + p.cols) * sizeof(float); };
    if (lo(p.x) < hi(p.out, p.ld_out) && lo(p.out) < hi(p.x, p.ld_x)) return cudaErrorInvalidValue;
  }
  const dim3 grid(p.rows, p.split);
  if (p.out_f16) {
    if (!rms_norm_f16_copy_supported(p) || reinterpret_cast<uintptr_t>(p.out_f16) % 8) return cudaErrorInvalidValue;
    return launch_kernel(rms_norm_kernel<0, 3>, grid, block, smem, s, a);
  }
  if (p.q8s_xq) return launch_kernel(rms_norm_kernel<0, 2>, grid, block, smem, s, a);
  return launch_kernel(rms_norm_kernel<0, 0>, grid, block, smem, s, a);
}

int rms_norm_defer_partials(int cols) { return cols / 32; }

cudaError_t launch_rms_norm_defer(const RmsNormDeferParams& p, cudaStream_t s) {
  const int64_t ld_x = p.ld_x ? p.ld_x : p.cols;
  if (!p.x || !p.q8s_xq || !p.q8s_xds || !p.partials == !p.scale || p.cols <= 0 || p.cols % 32 || p.split < 1 ||
      p.split > kMaxNormSplit || rms_norm_defer_partials(p.cols) > kNormDeferMaxPartials || p.rows < 1 ||
      p.rows > 65535 || ld_x < p.cols || (p.q8s_il && p.rows != 1))
    return cudaErrorInvalidValue;
  const DeferArgs a{p.x, ld_x, p.w, p.cols, p.q8s_xq, static_cast<float2*>(p.q8s_xds), p.q8s_il,
                    vec_ok(p.x, ld_x) && vec_ok(p.w, 0), p.partials, p.scale, p.eps};
  if (p.scale) return launch_kernel(rms_norm_defer_kernel<true>, dim3(1, p.rows), dim3(kDeferThreads * p.split), 0, s, a);
  return launch_kernel(rms_norm_defer_kernel<false>, dim3(p.split, p.rows), dim3(kDeferThreads), 0, s, a);
}

cudaError_t launch_add_rms_norm(const AddRmsNormParams& p, cudaStream_t s) {
  if (p.rows < 0 || p.cols <= 0 || !p.residual || !p.delta || !p.residual_out || !p.out ||
      p.ld_residual < p.cols || p.ld_delta < p.cols || p.ld_residual_out < p.cols || p.ld_out < p.cols)
    return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  if ((p.q8s_xq != nullptr) != (p.q8s_xds != nullptr) || (p.q8s_xq && p.cols % 32) || (p.q8s_il && p.rows != 1))
    return cudaErrorInvalidValue;
  const bool vec = vec_ok(p.residual, p.ld_residual) && vec_ok(p.delta, p.ld_delta) &&
                   vec_ok(p.residual_out, p.ld_residual_out) && vec_ok(p.out, p.ld_out) && vec_ok(p.w, 0);
  const NormArgs a{p.residual, p.ld_residual, p.delta, p.ld_delta, p.residual_out, p.ld_residual_out,
                   p.w, p.out, p.ld_out, nullptr, 0, p.cols, p.eps, p.q8s_xq, static_cast<float2*>(p.q8s_xds),
                   static_cast<__half*>(p.out_f16), vec, p.q8s_il};
  const dim3 block(norm_threads(p.cols));
  if (p.out_f16) {
    if (!add_rms_norm_f16_copy_supported(p) || reinterpret_cast<uintptr_t>(p.out_f16) % 8)
      return cudaErrorInvalidValue;
    return launch_kernel(rms_norm_kernel<1, 3>, dim3(p.rows), block, 0, s, a);
  }
  if (p.q8s_xq) return launch_kernel(rms_norm_kernel<1, 2>, dim3(p.rows), block, 0, s, a);
  return launch_kernel(rms_norm_kernel<1, 0>, dim3(p.rows), block, 0, s, a);
}

cudaError_t launch_rms_norm_q8_1(const RmsNormQ81Params& p, cudaStream_t s) {
  if (p.rows < 0 || p.cols <= 0 || p.cols % 32 || !p.out_q8_1 ||
      p.ld_out_bytes < (int64_t)p.cols / 32 * kQ81BlockBytes)
    return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  auto* oq = static_cast<uint8_t*>(p.out_q8_1);
  if (p.residual) {
    if (!p.delta || !p.residual_out || p.ld_residual < p.cols || p.ld_delta < p.cols ||
        p.ld_residual_out < p.cols)
      return cudaErrorInvalidValue;
    const bool vec = vec_ok(p.residual, p.ld_residual) && vec_ok(p.delta, p.ld_delta) &&
                     vec_ok(p.residual_out, p.ld_residual_out) && vec_ok(p.w, 0);
    const NormArgs a{p.residual, p.ld_residual, p.delta, p.ld_delta, p.residual_out, p.ld_residual_out,
                     p.w, nullptr, 0, oq, p.ld_out_bytes, p.cols, p.eps, nullptr, nullptr, nullptr, vec};
    rms_norm_kernel<1, 1><<<p.rows, norm_threads(p.cols), 0, s>>>(a);
  } else {
    if (!p.x || p.ld_x < p.cols) return cudaErrorInvalidValue;
    const bool vec = vec_ok(p.x, p.ld_x) && vec_ok(p.w, 0);
    const NormArgs a{p.x, p.ld_x, nullptr, 0, nullptr, 0, p.w, nullptr, 0, oq, p.ld_out_bytes, p.cols, p.eps,
                     nullptr, nullptr, nullptr, vec};
    rms_norm_kernel<0, 1><<<p.rows, norm_threads(p.cols), 0, s>>>(a);
  }
  return cudaGetLastError();
}

cudaError_t launch_head_rms_norm(const HeadRmsNormParams& p, cudaStream_t s) {
  if (p.rows < 0 || p.n_head <= 0 || p.head_dim <= 0 || !p.x || !p.out ||
      p.ld_x < (int64_t)p.n_head * p.head_dim || p.ld_out < (int64_t)p.n_head * p.head_dim)
    return cudaErrorInvalidValue;
  const int64_t warps = (int64_t)p.rows * p.n_head;
  if (warps == 0) return cudaSuccess;
  const int threads = 256;
  const int64_t blocks = (warps * 32 + threads - 1) / threads;
  return launch_kernel(head_rms_norm_kernel, dim3((unsigned)blocks), dim3(threads), 0, s, p.x, p.ld_x, p.out, p.ld_out, p.w, p.rows,
                       p.n_head, p.head_dim, p.eps);
}

}  // namespace memra::cuda
