#pragma once
// The split-plane ("sp") decode layouts of a weight matrix, read by the mmvs decode matvec
// (kernels/matvec/mmvs.h) with aligned 16-byte loads only. Same bytes as the GGUF blocks (no
// padding beyond a plane's 256-byte alignment), in another order. The matvec's unit of work is a
// 64-weight "task" (mmvs_task.cuh) whose quant bytes are C 16-byte chunks:
//   Q4_0: 2 blocks' qs (C = 2),               d plane = the blocks' f16 d
//   Q8_0: 2 blocks' qs (C = 4),               d plane = d
//   Q4_K: a quarter superblock's qs (C = 2),  aux plane = the 16-byte header (d, dmin, scales)
//   Q6_K: a quarter superblock's ql, ql, qh (C = 3), aux plane = the 16 scale bytes, d plane = d
//   Q5_K: a quarter superblock's qs (C = 2),  aux plane = 48 bytes per superblock: the 16-byte
//     header (d, dmin, scales) and its 32 qh bytes as four 8-byte words, one per task (q5k_hi_words:
//     the same bits in another order, so that a task's high bits are one aligned 8-byte load)
//   IQ4_XS: a quarter superblock's qs (C = 2) with the task's 64 indices re-laid in element order
//     (iq4xs_task_nibbles: nibble n of u32 w is element 8 w + n), aux plane = the 8-byte header (d,
//     scales_h, scales_l)
// Two orders of the body plane (kernels.mmvs_interleave):
//   blocked: a row's blocks one after the other minus their d (Q6_K keeps its scales in the
//     body; Q4_K is not repacked at all: its 144-byte superblocks are used in place, header
//     included). Lane l of a warp reading task l's chunk c touches every other 16 bytes.
//   interleaved: per row, the tasks in groups of 32 (the last group may be shorter, n tasks);
//     in group g chunk c of task 32g + l sits at 16 * (32g * C + c * n + l): the 32 lanes of one
//     load instruction read 512 contiguous bytes.
// Rows follow each other (row r's body at r * body_row_bytes); the aux plane (aux_offset) holds
// rows * superblocks entries of aux_bytes (16; Q5_K 48, IQ4_XS 8), the d plane (d_offset) rows * blocks_per_row
// halves.
//
// Plain C++ (no CUDA) so the repack is unit-tested on the CPU (tests/backend_cuda/test_mmvs_emul).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "quant/types.h"

namespace memra::cuda::sp {

struct Layout {
  bool ok = false;        // the type has a split-plane decode kernel
  bool repacked = false;  // false: the GGUF bytes are used as they are (blocked Q4_K)
  int block_elems = 0;
  int block_bytes = 0;    // GGUF block
  int body_bytes = 0;     // per block in the body plane
  int body_src = 0;       // offset of the body bytes in the GGUF block (blocked order)
  int d_src = -1;         // offset of the f16 d in the GGUF block, -1: no d plane
  int aux_src = -1;       // offset of the 16 aux bytes in the GGUF block, -1: no aux plane
  int chunks = 0;         // 16-byte chunks per 64-weight task
  int aux_bytes = 16;     // per superblock in the aux plane (Q5_K: the header and its qh words)
};

// IQ4_XS: a task's 32 qs bytes (sub-blocks 2 j and 2 j + 1 of a superblock: in a GGUF IQ4_XS block,
// element i < 16 of a sub-block is the low nibble of its byte i and element 16 + i the high nibble)
// in element order: nibble n (bits 4 n .. 4 n + 3) of u32 w is element 8 w + n of the task, so that
// a u32 and its upper half are the byte_perm selectors of 4 consecutive elements' codebook bytes
// (mmvs_task.cuh Task<IQ4_XS>). The same nibbles in another order.
inline void iq4xs_task_nibbles(const uint8_t* qs, uint8_t* out) {
  for (int w = 0; w < 8; ++w) {
    uint32_t v = 0;
    for (int n = 0; n < 8; ++n) {
      const int e = 8 * w + n, sb = e / 32, i = e % 32;
      const uint8_t b = qs[16 * sb + i % 16];
      v |= (uint32_t)(i < 16 ? b & 0xF : b >> 4) << (4 * n);
    }
    std::memcpy(out + 4 * w, &v, 4);
  }
}

// Q5_K's aux entry after the header: the superblock's 32 qh bytes as four 8-byte words, word j for
// task j (elements 64 j .. 64 j + 63). In a GGUF Q5_K block, element l (0 .. 31) of task j takes
// its fifth bit from bit 2 j of qh[l] and element 32 + l from bit 2 j + 1. Here the first u32 of word
// j holds the bits of elements 0 .. 31 and the second those of 32 .. 63, element 4 w + b (w: the
// task's u32 of qs it sits in, 0 .. 7; b: the byte) at bit 8 b + w, so that shifting the u32 by
// 4 - w puts the four high bits of qs word w at bit 4 of each byte (mmvs_task.cuh Task<Q5_K>).
inline void q5k_hi_words(const uint8_t* qh, uint8_t* out) {
  for (int j = 0; j < 4; ++j)
    for (int half = 0; half < 2; ++half) {
      uint32_t v = 0;
      for (int l = 0; l < 32; ++l) v |= (uint32_t)((qh[l] >> (2 * j + half)) & 1u) << (8 * (l % 4) + l / 4);
      std::memcpy(out + 8 * j + 4 * half, &v, 4);
    }
}

inline Layout layout(QType t, bool interleaved) {
  switch (t) {
    case QType::Q4_0: return {true, true, 32, 18, 16, 2, 0, -1, 2};
    case QType::Q8_0: return {true, true, 32, 34, 32, 2, 0, -1, 4};
    case QType::Q6_K:
      return interleaved ? Layout{true, true, 256, 210, 192, 0, 208, 192, 3} : Layout{true, true, 256, 210, 208, 0, 208, -1, 3};
    case QType::Q4_K:
      return interleaved ? Layout{true, true, 256, 144, 128, 16, -1, 0, 2} : Layout{true, false, 256, 144, 144, 0, -1, -1, 2};
    case QType::Q5_K: return {true, true, 256, 176, 128, 48, -1, 0, 2, 48};  // both orders: qs in the body
    case QType::IQ4_XS: return {true, true, 256, 136, 128, 8, -1, 0, 2, 8};
    default: return {};
  }
}

// GGUF offset (in its row) of chunk c of task t, interleaved order (see the table above).
inline size_t chunk_src(QType type, int64_t t, int c) {
  switch (type) {
    case QType::Q4_0: return (size_t)(2 * t + c) * 18 + 2;
    case QType::Q8_0: return (size_t)(2 * t + c / 2) * 34 + 2 + 16 * (size_t)(c % 2);
    case QType::Q4_K: return (size_t)(t >> 2) * 144 + 16 + 32 * (size_t)(t & 3) + 16 * (size_t)c;
    case QType::Q5_K: return (size_t)(t >> 2) * 176 + 48 + 32 * (size_t)(t & 3) + 16 * (size_t)c;
    case QType::IQ4_XS: return (size_t)(t >> 2) * 136 + 8 + 32 * (size_t)(t & 3) + 16 * (size_t)c;  // of the re-laid row
    case QType::Q6_K: {
      const size_t b = (size_t)(t >> 2) * 210, n = (size_t)((t >> 1) & 1), lh = (size_t)(t & 1);
      return c == 0 ? b + 64 * n + 16 * lh : c == 1 ? b + 64 * n + 32 + 16 * lh : b + 128 + 32 * n + 16 * lh;
    }
    default: return 0;
  }
}

// Offset of chunk c of task t in a row's interleaved body (n_tasks tasks per row).
inline constexpr size_t il_chunk(int64_t t, int c, int chunks, int64_t n_tasks) {
  const int64_t g0 = t & ~int64_t{31};
  const int64_t n = n_tasks - g0 < 32 ? n_tasks - g0 : 32;
  return 16 * (size_t)(g0 * chunks + c * n + (t & 31));
}

struct Plan {
  int64_t blocks_per_row = 0;
  size_t body_row_bytes = 0;
  size_t d_offset = 0;     // bytes from the base to the d plane (0 when none)
  size_t aux_offset = 0;   // bytes from the base to the aux plane (0 when none)
  size_t total_bytes = 0;  // of the split copy (0 when not repacked)
};

// k: row length (multiple of the block size, and of 64 for the kernel's 64-weight tasks).
inline Plan plan(QType t, int64_t rows, int64_t k, bool interleaved) {
  const Layout L = layout(t, interleaved);
  Plan p;
  if (!L.ok || k % L.block_elems || k % 64) return p;
  p.blocks_per_row = k / L.block_elems;
  p.body_row_bytes = (size_t)p.blocks_per_row * (size_t)L.body_bytes;
  if (!L.repacked) return p;
  const auto up = [](size_t v) { return (v + 255) / 256 * 256; };
  size_t end = p.body_row_bytes * (size_t)rows;
  if (L.aux_src >= 0) {
    p.aux_offset = up(end);
    end = p.aux_offset + (size_t)rows * (size_t)p.blocks_per_row * (size_t)L.aux_bytes;
  }
  if (L.d_src >= 0) {
    p.d_offset = up(end);
    end = p.d_offset + (size_t)rows * (size_t)p.blocks_per_row * 2;
  }
  p.total_bytes = end;
  return p;
}

// GGUF rows (row stride src_row_bytes) -> the split copy at dst (plan(t, rows, k, il).total_bytes).
inline void repack(QType t, const uint8_t* src, size_t src_row_bytes, int64_t rows, int64_t k, bool interleaved,
                   uint8_t* dst) {
  const Layout L = layout(t, interleaved);
  const Plan p = plan(t, rows, k, interleaved);
  if (!L.repacked || !p.total_bytes) return;
  const int64_t n_tasks = k / 64;
  // IQ4_XS: each row's task nibbles re-laid first (iq4xs_task_nibbles), then copied as the other types.
  std::vector<uint8_t> relaid(t == QType::IQ4_XS ? (size_t)p.blocks_per_row * (size_t)L.block_bytes : 0);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = src + (size_t)r * src_row_bytes;
    if (t == QType::IQ4_XS) {
      std::memcpy(relaid.data(), row, relaid.size());
      for (int64_t task = 0; task < n_tasks; ++task)
        iq4xs_task_nibbles(row + chunk_src(t, task, 0), relaid.data() + chunk_src(t, task, 0));
      row = relaid.data();
    }
    uint8_t* body = dst + (size_t)r * p.body_row_bytes;
    if (interleaved) {
      for (int64_t task = 0; task < n_tasks; ++task)
        for (int c = 0; c < L.chunks; ++c)
          std::memcpy(body + il_chunk(task, c, L.chunks, n_tasks), row + chunk_src(t, task, c), 16);
    }
    for (int64_t b = 0; b < p.blocks_per_row; ++b) {
      const uint8_t* blk = row + (size_t)b * (size_t)L.block_bytes;
      const size_t i = (size_t)r * (size_t)p.blocks_per_row + (size_t)b;
      if (!interleaved) std::memcpy(body + (size_t)b * (size_t)L.body_bytes, blk + L.body_src, (size_t)L.body_bytes);
      if (L.aux_src >= 0) {
        uint8_t* aux = dst + p.aux_offset + i * (size_t)L.aux_bytes;
        std::memcpy(aux, blk + L.aux_src, L.aux_bytes < 16 ? (size_t)L.aux_bytes : 16);
        if (t == QType::Q5_K) q5k_hi_words(blk + 16, aux + 16);
      }
      if (L.d_src >= 0) std::memcpy(dst + p.d_offset + i * 2, blk + L.d_src, 2);
    }
  }
}

// q8_1 blocks (36 B: f16 d, f16 s, int8 qs[32]) of m rows of k -> the q8s planes of mmvs.h:
// xq[m*k] int8 and xds[m*(k/32)] pairs {d as f32, sum of the 32 quants}. half_to_f32 converts
// the f16 bits (passed in so this header needs neither CUDA nor lib/core).
template <class HalfToF32>
inline void q8_1_to_q8s(const uint8_t* blocks, int64_t m, int64_t k, int8_t* xq, float* xds, HalfToF32 half_to_f32) {
  const int64_t nb = k / 32;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = blocks + (size_t)(r * nb + b) * 36;
      uint16_t d;
      std::memcpy(&d, blk, 2);
      int sum = 0;
      for (int e = 0; e < 32; ++e) {
        const int8_t q = (int8_t)blk[4 + e];
        xq[r * k + b * 32 + e] = q;
        sum += q;
      }
      xds[(r * nb + b) * 2] = half_to_f32(d);
      xds[(r * nb + b) * 2 + 1] = (float)sum;
    }
}

}  // namespace memra::cuda::sp
