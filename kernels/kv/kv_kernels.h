#pragma once
// Device KV cache rows, laid out exactly as lib/kv's host cache: per layer [n_ctx] rows of
// n_head_kv * head_dim elements (head-major), each row stored in the cache type (F32, F16, or the
// 32-block types Q8_0, Q5_1, Q5_0, Q4_0, Q4_1). Append quantizes each row with the arithmetic of
// lib/quant's reference quantize_row (byte-identical); reads dequantize like dequantize_row.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "quant/types.h"

namespace memra::cuda {

// True for the types the device cache stores and attention reads.
bool kv_type_supported(QType t);

// Writes rows [0, n_tokens) of src to cache positions (*pos0) + i. Rows that would land at or
// beyond n_ctx are skipped (the host checks capacity before it launches; a kernel cannot throw).
struct KvAppendParams {
  const float* src = nullptr;  // [n_tokens, row_elems]
  int64_t ld_src = 0;
  int n_tokens = 0;
  int row_elems = 0;  // n_head_kv * head_dim; a multiple of 32 for the block types
  void* cache = nullptr;
  QType type = QType::F16;
  int64_t row_bytes = 0;  // bytes between cache rows (>= qtype_row_bytes(type, row_elems), even)
  const int32_t* pos0 = nullptr;  // device
  int n_ctx = 0;
  // The q8_0 split-plane row (kv.planes; type Q8_0 only): 0 for the GGUF block layout, else
  // row_elems: the row's quants first (element e at byte e), then its blocks' f16 scales from this
  // byte on (block b at scale_plane + 2 b). The same bytes as the block layout, reordered.
  int scale_plane = 0;
};
// Whether a row of row_elems elements of type t may use scale_plane (0 always; else Q8_0, a
// multiple of 32 elements, scale_plane == row_elems and row_bytes >= row_elems * 17 / 16).
bool kv_scale_plane_valid(QType t, int row_elems, int64_t row_bytes, int scale_plane);
// The cache's row stride for split-plane rows of row_elems elements: q8_0's bytes (row_elems * 17 / 16)
// rounded up to 16, so that every row's quants start 16-byte aligned (the int8 tile form's ldmatrix
// tiles) whatever the kv head count (an odd count of 128-element heads leaves 8 bytes of padding).
int64_t kv_planes_row_bytes(int64_t row_elems);
cudaError_t launch_kv_append(const KvAppendParams& p, cudaStream_t stream);
// K and V of the same tokens: one launch when both are block types (same bytes as two
// launch_kv_append calls), else the two calls.
cudaError_t launch_kv_append_pair(const KvAppendParams& k, const KvAppendParams& v, cudaStream_t stream);

// dst[i] = dequantized cache row pos_begin + i, for i in [0, n_rows) (tests, prefill fallback).
struct KvReadParams {
  const void* cache = nullptr;
  QType type = QType::F16;
  int64_t row_bytes = 0;
  int row_elems = 0;
  int pos_begin = 0;
  int n_rows = 0;
  float* dst = nullptr;
  int64_t ld_dst = 0;
  int scale_plane = 0;  // as KvAppendParams::scale_plane
  // Instead of dst: the values rounded to f16 (round to nearest even), ld_dst halves apart.
  void* dst_f16 = nullptr;
};
cudaError_t launch_kv_read(const KvReadParams& p, cudaStream_t stream);

}  // namespace memra::cuda
