#pragma once
// A persistent decode-chain probe (issue 7; rp-q4-probe --chain). The question it answers before
// anyone builds a persistent decode kernel: can one resident grid stream a layer stack's dependent
// matvecs at the bandwidth floor when every matrix must wait for the whole output of the one
// before it? The engine's decode step runs each matvec as its own launch (PDL between them); its
// matvecs reach ~0.72 of their bytes' floor on the H200 and every launch pays a ramp and a tail
// (bench/notes/decode-trace.md). Here the weights of the whole chain are streamed by a producer warp
// per CTA (cp.async.bulk into a ring of shared-memory pages) without waiting for any activation, and
// only the consumer warps wait for the previous matrix's counter: the weight stream need not drain at
// a matrix boundary as long as the ring covers the wait.
//
// The chain (per layer, qwen3-8b's shapes by default): qkv (Q x H), o (H x H) reading the first H
// outputs of qkv, gate and up (F x H each, SiLU(gate) * up), down (H x F); the next layer's qkv reads
// the down's output. No attention, norm or residual: the matvecs and their dependencies alone.
// Weights: Q4_0 or Q4_K (GGUF's bytes, 4.5 bits per weight either way), generated from a hash of
// (seed, matrix, row, block) so that the CPU check can regenerate any block, and stored as pages:
// a task (32 rows of one matrix; a GLU task the 32 rows of gate and of up) is a run of contiguous
// 18432-byte pages, one per 1024 columns (a GLU task alternates gate and up pages).
// Activations: q8 blocks of 32 (int8 quants, f32 scale amax / 127, the int sum of the quants), one
// block per task output (32 rows), written by the task that computed it.
#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define MEMRA_CHAIN_HD __host__ __device__ __forceinline__
#else
#define MEMRA_CHAIN_HD inline
#endif

namespace memra::chain {

// Weight formats of the pages. Both are 4.5 bits per weight, so a page (32 rows x 1024 columns) is
// 18432 bytes either way: Q4_0 as [quants: 32 rows x 512 bytes][f16 scales: 32 rows x 32], Q4_K as
// [quants: 32 rows x 512 bytes][headers: 32 rows x 4 super-blocks x 16 bytes] (GGUF's 144-byte
// super-blocks split into their 16-byte header, f16 d and dmin and 12 bytes of 6-bit scales and mins,
// and their 128 quant bytes; see q4k_unit_page_offset).
enum WType : int { kQ4_0 = 0, kQ4_K = 1 };
constexpr int kQ4KBytes = 144;  // one super-block: 256 weights

constexpr int kTaskRows = 32;                                       // one q8 block of the next input
constexpr int kPageCols = 1024;                                     // columns of one page
constexpr int kPageBlocks = kPageCols / 32;                         // 32: lane l takes block l
constexpr uint32_t kPageQsBytes = kTaskRows * kPageCols / 2;        // 16384
constexpr uint32_t kPageDBytes = kTaskRows * kPageBlocks * 2;       // 2048
constexpr uint32_t kPageBytes = kPageQsBytes + kPageDBytes;         // 18432
constexpr int kMats = 4;                                            // qkv, o, glu, down
enum Mat : int { kQkv = 0, kO = 1, kGlu = 2, kDown = 3 };
// Weight matrices per layer as generated (the GLU's gate and up are two).
enum WMat : int { kWQkv = 0, kWO = 1, kWGate = 2, kWUp = 3, kWDown = 4, kWMats = 5 };

struct Dims {
  int n_layers = 36;
  int64_t hidden = 4096;  // H: multiple of kPageCols
  int64_t qkv = 6144;     // Q: multiple of 32, >= H
  int64_t ffn = 12288;    // F: multiple of kPageCols
};

MEMRA_CHAIN_HD int64_t mat_rows(const Dims& d, int mat) {
  return mat == kQkv ? d.qkv : mat == kGlu ? d.ffn : d.hidden;
}
MEMRA_CHAIN_HD int64_t mat_cols(const Dims& d, int mat) { return mat == kDown ? d.ffn : d.hidden; }
MEMRA_CHAIN_HD int64_t mat_tasks(const Dims& d, int mat) { return mat_rows(d, mat) / kTaskRows; }
MEMRA_CHAIN_HD int mat_pages(const Dims& d, int mat) {
  return (int)(mat_cols(d, mat) / kPageCols) * (mat == kGlu ? 2 : 1);
}
MEMRA_CHAIN_HD uint64_t mat_bytes(const Dims& d, int mat) {
  return (uint64_t)mat_tasks(d, mat) * (uint64_t)mat_pages(d, mat) * kPageBytes;
}
MEMRA_CHAIN_HD uint64_t layer_bytes(const Dims& d) {
  uint64_t b = 0;
  for (int m = 0; m < kMats; ++m) b += mat_bytes(d, m);
  return b;
}
MEMRA_CHAIN_HD int64_t layer_tasks(const Dims& d) {
  int64_t t = 0;
  for (int m = 0; m < kMats; ++m) t += mat_tasks(d, m);
  return t;
}

// Activation slots: 0 = the chain's input (H values), 1 + 4 * layer + mat = that matrix's output.
// Every slot holds up to F values (q plane) and F / 32 blocks (d and s planes).
MEMRA_CHAIN_HD int out_slot(int layer, int mat) { return 1 + 4 * layer + mat; }
MEMRA_CHAIN_HD int in_slot(int layer, int mat) {
  return mat == kQkv ? (layer == 0 ? 0 : out_slot(layer - 1, kDown)) : out_slot(layer, mat - 1);
}
MEMRA_CHAIN_HD int n_slots(const Dims& d) { return 1 + 4 * d.n_layers; }

// Task t of the whole chain (layers in order, then qkv, o, glu, down, then row blocks).
struct Task {
  int layer = 0, mat = 0;
  int64_t row_block = 0;
  int pages = 0;
  int64_t cols = 0;
  uint64_t w_off = 0;   // byte offset of its first page in the chain's weight buffer
  int dep = -1;         // counter (4 * layer + mat) it waits for; -1: none
  uint32_t dep_count = 0;
};
MEMRA_CHAIN_HD Task task_at(const Dims& d, int64_t t) {
  Task k;
  const int64_t tpl = layer_tasks(d);
  k.layer = (int)(t / tpl);
  int64_t l = t % tpl;
  uint64_t off = (uint64_t)k.layer * layer_bytes(d);
  int m = 0;
  while (l >= mat_tasks(d, m)) {
    l -= mat_tasks(d, m);
    off += mat_bytes(d, m);
    ++m;
  }
  k.mat = m;
  k.row_block = l;
  k.pages = mat_pages(d, m);
  k.cols = mat_cols(d, m);
  k.w_off = off + (uint64_t)l * (uint64_t)k.pages * kPageBytes;
  if (m != kQkv || k.layer > 0) {
    const int dl = m == kQkv ? k.layer - 1 : k.layer, dm = m == kQkv ? kDown : m - 1;
    k.dep = 4 * dl + dm;
    k.dep_count = (uint32_t)mat_tasks(d, dm);
  }
  return k;
}

// One unit of a CTA's work: pages [pg0, pg1) of task k (row block k.row_block of matrix k.mat of
// k.layer); task index t (its arrival counter when split).
struct Item {
  Task k;
  int64_t t = 0;
  int pg0 = 0, pg1 = 0;
};

// This CTA's items in order (next() until false); the producer and the consumers walk the same sequence.
// Tasks (ChainParams::split false): tasks cta, cta + grid, ..., every page of each. Split: of every
// matrix in turn, the CTA's share of its pages, [P cta / grid, P (cta + 1) / grid) of its P pages in
// row-block order (contiguous bytes), one item per row block the share touches.
struct ItemIter {
  int64_t t, p = 0, p1 = 0, t0 = 0;  // tasks: the next task; split: the page cursor, the share's end, the matrix's first task
  int layer = 0, mat = -1;
  MEMRA_CHAIN_HD explicit ItemIter(int cta) : t(cta) {}
  MEMRA_CHAIN_HD bool next(const Dims& d, bool split, int cta, int grid, Item& it) {
    if (!split) {
      if (t >= (int64_t)d.n_layers * layer_tasks(d)) return false;
      it.k = task_at(d, t);
      it.t = t;
      it.pg0 = 0;
      it.pg1 = it.k.pages;
      t += grid;
      return true;
    }
    while (p >= p1) {  // the next matrix with a non-empty share
      if (mat >= 0) t0 += mat_tasks(d, mat);
      if (++mat == kMats) {
        mat = 0;
        if (++layer == d.n_layers) return false;
      }
      const int64_t P = mat_tasks(d, mat) * mat_pages(d, mat);
      p = P * cta / grid;
      p1 = P * (cta + 1) / grid;
    }
    const int64_t pp = mat_pages(d, mat), rb = p / pp, pe = p1 < (rb + 1) * pp ? p1 : (rb + 1) * pp;
    it.t = t0 + rb;
    it.k = task_at(d, it.t);
    it.pg0 = (int)(p - rb * pp);
    it.pg1 = (int)(pe - rb * pp);
    p = pe;
    return true;
  }
};

// Q4_0 pages: row r's quants are 32 slots of 16 bytes (one block each), block b in slot b ^ (r % 8):
// the 8 rows r, r + 1, ... of one block sit in 8 different 16-byte bank groups of shared memory, so
// the tensor-core consumer (rows g = 0..7 of an MMA fragment reading one block) has no bank
// conflicts; the dp4a consumer's 32 lanes still read one row's 32 slots (a permutation).
MEMRA_CHAIN_HD int64_t q4_0_slot(int64_t row_in_task, int64_t blk_in_page) { return blk_in_page ^ (row_in_task & 7); }

// Byte offset (in the chain's weight buffer) of the 16 quant bytes of block `blk` of row `row` of
// weight matrix `wm` of `layer`; its f16 scale: block_d_offset.
MEMRA_CHAIN_HD uint64_t block_qs_offset(const Dims& d, int layer, int wm, int64_t row, int64_t blk) {
  const int mat = wm <= kWO ? wm : wm == kWDown ? kDown : kGlu;
  uint64_t off = (uint64_t)layer * layer_bytes(d);
  for (int m = 0; m < mat; ++m) off += mat_bytes(d, m);
  const int64_t rb = row / kTaskRows, kc = blk / kPageBlocks;
  const int64_t page = mat == kGlu ? 2 * kc + (wm == kWUp ? 1 : 0) : kc;
  off += ((uint64_t)rb * (uint64_t)mat_pages(d, mat) + (uint64_t)page) * kPageBytes;
  return off + (uint64_t)(row % kTaskRows) * (kPageCols / 2) + (uint64_t)q4_0_slot(row % kTaskRows, blk % kPageBlocks) * 16;
}
MEMRA_CHAIN_HD uint64_t block_d_offset(const Dims& d, int layer, int wm, int64_t row, int64_t blk) {
  const uint64_t qs = block_qs_offset(d, layer, wm, row, blk);
  const uint64_t page = qs - (uint64_t)(row % kTaskRows) * (kPageCols / 2) -
                        (uint64_t)q4_0_slot(row % kTaskRows, blk % kPageBlocks) * 16;
  return page + kPageQsBytes + (uint64_t)((row % kTaskRows) * kPageBlocks + blk % kPageBlocks) * 2;
}

// Q4_K pages have the Q4_0 pages' two planes: row r's 128 quant bytes of super-block s (GGUF's bytes
// 16..143: chunk c = units 2c, 2c + 1, sub-blocks 2c in the low nibbles and 2c + 1 in the high ones) are
// 16-byte units 8 s .. 8 s + 7 of the row's 512 quant bytes, unit u in slot u ^ (r % 8) as Q4_0's
// blocks (the tensor-core consumer's rows g = 0..7 read one unit: no bank conflicts), and its 16-byte
// header (f16 d, dmin, the 12 scale and min bytes: GGUF's bytes 0..15) is header slot 4 r + s of the
// page's last 2048 bytes.
constexpr int kQ4KHeaderBytes = 16;
MEMRA_CHAIN_HD uint32_t q4k_unit_page_offset(int r, int sb_in_page, int unit) {
  return (uint32_t)(r * (kPageCols / 2) + ((8 * sb_in_page + unit) ^ (r & 7)) * 16);
}
MEMRA_CHAIN_HD uint32_t q4k_header_page_offset(int r, int sb_in_page) {
  return kPageQsBytes + (uint32_t)(r * (kPageCols / 256) + sb_in_page) * kQ4KHeaderBytes;
}
// Byte offset (in the chain's weight buffer) of the page holding super-block `sb` (256 columns) of row
// `row`; the super-block is then q4k_unit_page_offset / q4k_header_page_offset(row % 32, sb % 4) in it.
MEMRA_CHAIN_HD uint64_t superblock_page_offset(const Dims& d, int layer, int wm, int64_t row, int64_t sb) {
  const int mat = wm <= kWO ? wm : wm == kWDown ? kDown : kGlu;
  uint64_t off = (uint64_t)layer * layer_bytes(d);
  for (int m = 0; m < mat; ++m) off += mat_bytes(d, m);
  const int64_t rb = row / kTaskRows, kc = sb / (kPageCols / 256);
  const int64_t page = mat == kGlu ? 2 * kc + (wm == kWUp ? 1 : 0) : kc;
  return off + ((uint64_t)rb * (uint64_t)mat_pages(d, mat) + (uint64_t)page) * kPageBytes;
}

// ---- the generated weights (the same bits on the CPU and the GPU)
MEMRA_CHAIN_HD uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
MEMRA_CHAIN_HD uint64_t block_hash(uint64_t seed, int layer, int wm, int64_t row, int64_t blk) {
  return mix64(seed ^ mix64(((uint64_t)layer << 40) ^ ((uint64_t)wm << 36) ^ ((uint64_t)row << 16) ^ (uint64_t)blk));
}
// Quant word w (0..3: bytes 4w..4w+3) of the block.
MEMRA_CHAIN_HD uint32_t block_word(uint64_t h, int w) {
  const uint64_t a = mix64(h + 1 + (uint64_t)(w >> 1));
  return (w & 1) ? (uint32_t)(a >> 32) : (uint32_t)a;
}
// f16 scale bits: random sign and mantissa, exponent field base - 1 .. base + 1 (finite, normal).
// base 6 for 4096-column rows (|d| ~ 2^-9 .. 2^-7), 5 for longer ones, so a matrix's output keeps
// roughly its input's magnitude and 36 layers stay far from f32's range limits.
MEMRA_CHAIN_HD uint16_t block_scale_bits(uint64_t h, int64_t cols) {
  const uint32_t s = (uint32_t)(h >> 40);
  const uint32_t base = cols > 4096 ? 5u : 6u;
  return (uint16_t)((s & 0x8000u) | ((base - 1u + (s >> 16) % 3u) << 10) | (s & 0x3FFu));
}
MEMRA_CHAIN_HD float f16_bits_to_float(uint16_t h) {
  // Normal values only (block_scale_bits makes no others).
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  const uint32_t bits = sign | ((e + 112u) << 23) | (m << 13);
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
#endif
}

// f16 bits of a float that a normal f16 holds exactly (the callers make only such values).
MEMRA_CHAIN_HD uint16_t exact_f16_bits(float f) {
#ifdef __CUDA_ARCH__
  const uint32_t b = __float_as_uint(f);
#else
  uint32_t b;
  __builtin_memcpy(&b, &f, 4);
#endif
  return (uint16_t)(((b >> 16) & 0x8000u) | ((((b >> 23) & 0xFFu) - 112u) << 10) | ((b >> 13) & 0x3FFu));
}

// Word w (0..35) of Q4_K super-block h: word 0 = f16 d | f16 dmin << 16, words 1..3 the 12 scale and
// min bytes, words 4..35 the 128 quant bytes (random). Each sub-block's min equals its scale and dmin
// = 7.5 d exactly (d's mantissa has 6 bits), so a weight d * sc * q - dmin * m = d * sc * (q - 7.5) has
// zero mean as real Q4_K rows nearly do: random mins would give every row a mean and grow the
// chain's values by ~75x per matrix. d ~ 2^-14 .. 2^-12: Q4_0's weight magnitudes.
MEMRA_CHAIN_HD uint32_t superblock_word(uint64_t h, int w) {
  const uint32_t s = (uint32_t)(h >> 32);
  if (w == 0) {
    const uint32_t dbits = (s & 0x8000u) | ((1u + ((s >> 20) & 1u)) << 10) | ((s & 0x3Fu) << 4);
    const uint32_t mbits = exact_f16_bits(7.5f * f16_bits_to_float((uint16_t)dbits));
    return dbits | mbits << 16;
  }
  // Bytes 0..3: the scales of sub-blocks 0..3 and the top bits of 4..7; bytes 4..7 the mins: the same;
  // bytes 8..11: the low nibbles of sub-blocks 4..7's scale (low half) and min (high half): the same.
  const uint32_t a = block_word(h, 1);
  if (w == 1 || w == 2) return a;
  if (w == 3) {
    const uint32_t lo = block_word(h, 2) & 0x0F0F0F0Fu;
    return lo | lo << 4;
  }
  return block_word(h, w);
}

MEMRA_CHAIN_HD int dp4a_hd(int a, int b, int c) {
#ifdef __CUDA_ARCH__
  return __dp4a(a, b, c);
#else
  for (int k = 0; k < 4; ++k) c += (int)(int8_t)(uint8_t)(a >> (8 * k)) * (int)(int8_t)(uint8_t)(b >> (8 * k));
  return c;
#endif
}

// The tensor-core consumer's operands (ChainParams::mma; mma.m16n8k32 .s8, lane = 4 g + t, PTX's
// fragment roles: A rows g and g + 8 at k 4t..4t+3 in a0 / a1 and at k 16 + 4t.. in a2 / a3, B column g
// at k 4t.. in b0 and 16 + 4t.. in b1, C rows g and g + 8 at columns 2t, 2t + 1).
// Byte offset in a Q4_0 page of word t (bytes 4t..4t+3) of block blk of row r.
MEMRA_CHAIN_HD uint32_t q4_0_word_offset(int r, int blk, int t) {
  return (uint32_t)(r * (kPageCols / 2) + q4_0_slot(r, blk) * 16 + 4 * t);
}
// A from word t of rows g (w0) and g + 8 (w1) of one block: k 4t.. are the bytes' low nibbles (GGUF's
// weight j in byte j), k 16 + 4t.. their high nibbles (weight j + 16), as s8 values 0..15.
MEMRA_CHAIN_HD void mma_a_words(uint32_t w0, uint32_t w1, uint32_t a[4]) {
  a[0] = w0 & 0x0F0F0F0Fu;
  a[1] = w1 & 0x0F0F0F0Fu;
  a[2] = (w0 >> 4) & 0x0F0F0F0Fu;
  a[3] = (w1 >> 4) & 0x0F0F0F0Fu;
}
// B of the share's MMA i: column i holds block i's activation quants (x_lo: its word t, x_hi: word
// 4 + t, loaded by the lanes of column g = i), every other column zero.
MEMRA_CHAIN_HD void mma_b_words(int g, int i, uint32_t x_lo, uint32_t x_hi, uint32_t b[2]) {
  b[0] = g == i ? x_lo : 0u;
  b[1] = g == i ? x_hi : 0u;
}
// A Q4_0 block's term from its exact integer dot s: (s - 8 sx) (d dx), q4_0_term's expression.
MEMRA_CHAIN_HD float q4_0_scaled(int s, uint16_t dbits, float dx, int sx) {
  return (float)(s - 8 * sx) * (f16_bits_to_float(dbits) * dx);
}

// One lane's term of a row for one 32-column block, as the kernel computes it (the CPU tests run
// these same functions against the project's GGUF decoders). x: the activation block's 32 quants
// as 8 words, dx its scale, sx the sum of its quants.
// Q4_0: w = the block's 16 quant bytes (weight j: low nibble of byte j, weight j + 16: high nibble;
// each minus 8), dbits its f16 scale.
MEMRA_CHAIN_HD float q4_0_term(const uint32_t w[4], uint16_t dbits, const uint32_t x[8], float dx, int sx) {
  int s = 0;
  for (int k = 0; k < 4; ++k) s = dp4a_hd((int)(w[k] & 0x0F0F0F0Fu), (int)x[k], s);
  for (int k = 0; k < 4; ++k) s = dp4a_hd((int)((w[k] >> 4) & 0x0F0F0F0Fu), (int)x[4 + k], s);
  return q4_0_scaled(s, dbits, dx, sx);
}
// Q4_K sub-block j (0..7) of a super-block: its 6-bit scale and min from the 12 bytes sc[0..2].
MEMRA_CHAIN_HD void q4k_scale_min(const uint32_t sc[3], int j, int& scale, int& min) {
  // Selects, not an indexed array: j is a lane's runtime value and sc must stay in registers.
  const auto byte = [&](int i) {
    const uint32_t w = i < 4 ? sc[0] : i < 8 ? sc[1] : sc[2];
    return (int)((w >> (8 * (i & 3))) & 0xFFu);
  };
  if (j < 4) {
    scale = byte(j) & 63;
    min = byte(j + 4) & 63;
  } else {
    scale = (byte(j + 4) & 0xF) | ((byte(j - 4) >> 6) << 4);
    min = (byte(j + 4) >> 4) | ((byte(j) >> 6) << 4);
  }
}
// Q4_K sub-block j's term from its exact integer dot s (the nibbles 0..15 against the activation
// quants): dx (s d scale - sx dmin min), dd = header word 0 (d, dmin), sc = header words 1..3.
MEMRA_CHAIN_HD float q4_k_scaled(int s, int j, uint32_t dd, const uint32_t sc[3], float dx, int sx) {
  int scale = 0, min = 0;
  q4k_scale_min(sc, j, scale, min);
  const float d = f16_bits_to_float((uint16_t)(dd & 0xFFFFu)), dmin = f16_bits_to_float((uint16_t)(dd >> 16));
  return dx * ((float)s * (d * (float)scale) - (float)sx * (dmin * (float)min));
}
// Q4_K: q = the 32 quant bytes of sub-block j's 64-weight chunk (j / 2; sub-block j takes their low
// nibbles when j is even, the high ones when odd), dd = word 0 (d, dmin), sc = words 1..3.
// Weight value d * scale * q - dmin * min.
MEMRA_CHAIN_HD float q4_k_term(const uint32_t q[8], int j, uint32_t dd, const uint32_t sc[3], const uint32_t x[8],
                               float dx, int sx) {
  int s = 0;
  const int shift = 4 * (j & 1);
  for (int k = 0; k < 8; ++k) s = dp4a_hd((int)((q[k] >> shift) & 0x0F0F0F0Fu), (int)x[k], s);
  return q4_k_scaled(s, j, dd, sc, dx, sx);
}
// The tensor-core consumer's A for Q4_K sub-block 2c + hi of a chunk c (32 bytes: units 2c, 2c + 1 of
// the super-block): lo0 / lo1 = word t of unit 2c of rows g / g + 8 (the sub-block's weights 4t..4t+3
// in their low or high nibbles), hi0 / hi1 = word t of unit 2c + 1 (weights 16 + 4t..); as s8 0..15.
MEMRA_CHAIN_HD void mma_a_words_q4k(uint32_t lo0, uint32_t lo1, uint32_t hi0, uint32_t hi1, int hi, uint32_t a[4]) {
  const int sh = 4 * hi;
  a[0] = (lo0 >> sh) & 0x0F0F0F0Fu;
  a[1] = (lo1 >> sh) & 0x0F0F0F0Fu;
  a[2] = (hi0 >> sh) & 0x0F0F0F0Fu;
  a[3] = (hi1 >> sh) & 0x0F0F0F0Fu;
}

// The chain's q8 rule for 32 outputs y: amax = max |y|; q = rint(y * (127 / amax)) (0 when amax is
// 0); s = sum of q; d = amax / 127, except for the down projection's output (and the chain's
// input), whose blocks are stored at unit scale, d = 1 / 127: the layer's normalization (a model
// has an RMSNorm there). Without it the GLU's product, quadratic in its input, would drive 36
// layers' values to 0 or to infinity. The same float operations on the CPU and the GPU.
MEMRA_CHAIN_HD float q8_inv_scale(float amax) { return amax > 0.f ? 127.f / amax : 0.f; }
MEMRA_CHAIN_HD float q8_stored_scale(float amax, bool unit) { return unit ? 1.f / 127.f : amax / 127.f; }
MEMRA_CHAIN_HD bool unit_scale_output(int mat) { return mat == kDown; }

// Probe modes: the full chain (a task waits for the whole matrix it reads); the dependency waits
// skipped (the streaming and compute ceiling: outputs are not checked); the pages streamed and
// released without any compute (the copy ceiling); the full chain with per-chunk waits (a task
// waits, page by page, only for the 32 tasks that wrote the 1024 inputs of that page, so a matrix's
// first tasks start while the previous matrix's last ones finish); the pages consumed alone (no_deps
// without a task's fixed work: no input staged, no output reduced, stored or fenced; what no_deps
// adds to it is that per-task work).
enum Mode : int { kFull = 0, kNoDeps = 1, kStreamOnly = 2, kFullChunk = 3, kPagesOnly = 4 };

// Counters: 4 * n_layers matrix counters (tasks done), then 16 chunk counters per matrix (tasks done
// among the 32 that write outputs [1024 c, 1024 c + 1024)), then one arrival counter per task (split
// schedule: the pages of that row block summed so far).
constexpr int kMaxChunks = 16;
MEMRA_CHAIN_HD int n_counters(const Dims& d) {
  return 4 * d.n_layers * (1 + kMaxChunks) + d.n_layers * (int)layer_tasks(d);
}
MEMRA_CHAIN_HD int chunk_counter(const Dims& d, int mat_counter, int chunk) {
  return 4 * d.n_layers + mat_counter * kMaxChunks + chunk;
}
MEMRA_CHAIN_HD int arrival_counter(const Dims& d, int64_t task) { return 4 * d.n_layers * (1 + kMaxChunks) + (int)task; }

}  // namespace memra::chain

#if defined(__CUDACC__) || defined(MEMRA_HAVE_CUDA)
#include <cuda_runtime_api.h>

namespace memra::cuda::chain {

struct ChainParams {
  memra::chain::Dims dims;
  const uint8_t* w = nullptr;  // the pages (memra::chain layout), 16-byte aligned
  int8_t* act_q = nullptr;     // n_slots x ffn
  float* act_d = nullptr;      // n_slots x ffn / 32
  int32_t* act_s = nullptr;    // n_slots x ffn / 32
  float* y = nullptr;          // n_slots x ffn: every matrix's f32 output (the GLU's after SiLU(gate) * up)
  uint32_t* counters = nullptr;  // memra::chain::n_counters, zero before the launch
  uint32_t* error = nullptr;     // set to 1 when a dependency wait ran past spin_limit
  int mode = memra::chain::kFull;
  int wtype = memra::chain::kQ4_0;  // the pages' format (memra::chain::WType)
  int consumers = 8;        // consumer warps per CTA: 4, 8 or 16 (mma: 8 or 16)
  // The consumers' form: false = dp4a (lane l: block l of a page, every row of the warp's share);
  // true = int8 tensor cores: a warp takes 16 rows x 32 / (consumers / 2) blocks of a page (Q4_K: 32-
  // weight sub-blocks), one mma.m16n8k32 per block with the block's activation in B column i (the
  // other columns zero), so after a page's MMAs C holds 16 rows x 8 blocks of exact integer dots spread
  // over all 32 lanes, which scale them as q4_0_term / q4_k_term do (the same per-block terms, another
  // summation order).
  bool mma = false;
  // The schedule: false = tasks (a CTA takes tasks blockIdx.x, + grid, ...: whole row blocks, so a
  // matrix with fewer tasks than CTAs, or not a multiple of them, leaves CTAs idle at its end); true =
  // split (every CTA takes an equal share of every matrix's pages, cutting row blocks: each item's
  // row sums are added to `acc`, and the item that completes a row block's pages (its arrival
  // counter) finishes it). kFullChunk is tasks only.
  bool split = false;
  float* acc = nullptr;     // split: 2 x n_slots x ffn row sums (gate / only matrix, then up), zero before the launch
  int ctas_per_sm = 1;      // 1 or 2: every CTA must be resident at once (checked)
  int stages = 0;           // ring pages per CTA; 0 = as many as fit
  long long spin_limit = 2000000000ll;  // clock cycles (~1 s) a dependency wait may take before it gives up
};
// Shared memory per CTA and the ring depth the launch will use, given the device's opt-in limit.
struct ChainGeometry {
  int grid = 0, threads = 0, stages = 0;
  size_t smem = 0;
};
cudaError_t chain_geometry(const ChainParams& p, int sm_count, size_t smem_optin, ChainGeometry& g);
cudaError_t launch_chain(const ChainParams& p, const ChainGeometry& g, cudaStream_t stream);
// One timed run: counters, the error flag and (split) the row sums zeroed, CUDA events around the
// launch alone; waits for it. ms: the kernel; error: the flag after the run (1 = a dependency wait
// gave up).
cudaError_t time_chain(const ChainParams& p, const ChainGeometry& g, cudaStream_t stream, float& ms, uint32_t& error);
// Writes every weight block of the chain (the pages) from the hash: one launch per weight matrix.
cudaError_t fill_chain_weights(const memra::chain::Dims& d, int wtype, uint64_t seed, uint8_t* w, cudaStream_t stream);

}  // namespace memra::cuda::chain
#endif
