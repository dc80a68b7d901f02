// Which attention launches take the split-plane (kv.planes) decode form, on the host: the cache's row
// stride for split-plane rows (kv_planes_row_bytes), and the launch rules of the int8 tile form
// (attn_decode_planes_applies, attn_decode_planes_fold_applies): groups of 4 and 8 query heads per kv
// head at head dim 128, one or two tiles in flight, rows whose quants start 16-byte aligned. The
// pointers below are never dereferenced (the rules read only their alignment).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "attn/attn_i8_tile.h"
#include "attn/attn_kernels.h"
#include "kv/kv_kernels.h"

namespace cu = memra::cuda;

namespace {

alignas(256) uint8_t g_mem[1024];

cu::AttnParams planes_params(int n_head, int n_kv, int head_dim = 128) {
  cu::AttnParams p;
  p.q = reinterpret_cast<const float*>(g_mem);
  p.out = reinterpret_cast<float*>(g_mem + 256);
  p.pos0 = reinterpret_cast<const int32_t*>(g_mem + 512);
  p.workspace = reinterpret_cast<float*>(g_mem + 768);
  p.k_cache = g_mem + 16;
  p.v_cache = g_mem + 32;
  p.ld_q = p.ld_out = (int64_t)n_head * head_dim;
  p.n_tokens = 1;
  p.n_head = n_head;
  p.n_head_kv = n_kv;
  p.head_dim = head_dim;
  p.scale = 1.0f / std::sqrt((float)head_dim);
  p.n_splits = 66;
  const int row = n_kv * head_dim;
  p.type_k = p.type_v = memra::QType::Q8_0;
  p.k_row_bytes = p.v_row_bytes = cu::kv_planes_row_bytes(row);
  p.k_scale_plane = p.v_scale_plane = row;
  return p;
}

}  // namespace

// q8_0's bytes per row (17 / 16 of the elements) rounded up to 16: equal for an even count of
// 128-element heads, 8 bytes more for an odd count.
TEST(AttnPlanesRoute, RowStrideIsQ8_0BytesRoundedTo16) {
  for (int n_kv = 1; n_kv <= 16; ++n_kv) {
    const int64_t row = 128 * n_kv, q8 = row * 17 / 16, rb = cu::kv_planes_row_bytes(row);
    EXPECT_EQ(rb % 16, 0) << n_kv;
    EXPECT_GE(rb, q8) << n_kv;
    EXPECT_LT(rb, q8 + 16) << n_kv;
    EXPECT_EQ(rb, n_kv % 2 ? q8 + 8 : q8) << n_kv;
    EXPECT_TRUE(cu::kv_scale_plane_valid(memra::QType::Q8_0, (int)row, rb, (int)row)) << n_kv;
  }
}

// Groups of 4 and 8 at head dim 128, any kv head count once the rows are padded; nothing else.
TEST(AttnPlanesRoute, TileFormTakesGroupsOf4And8AtHeadDim128) {
  for (auto [nh, nkv] : {std::pair{32, 8}, {64, 8}, {12, 3}, {8, 1}, {4, 1}, {40, 5}})
    EXPECT_TRUE(cu::attn_decode_planes_applies(planes_params(nh, nkv), 16384)) << nh << "/" << nkv;
  for (auto [nh, nkv] : {std::pair{8, 8}, {16, 8}, {24, 8}, {128, 8}, {48, 8}})
    EXPECT_FALSE(cu::attn_decode_planes_applies(planes_params(nh, nkv), 16384)) << nh << "/" << nkv;
  EXPECT_FALSE(cu::attn_decode_planes_applies(planes_params(32, 8, 64), 16384));  // head dim 64
  cu::AttnParams p = planes_params(12, 3);
  p.k_row_bytes = p.v_row_bytes = 3 * 128 * 17 / 16;  // odd kv heads unpadded: quants off 16-byte alignment
  EXPECT_FALSE(cu::attn_decode_planes_applies(p, 16384));
  p = planes_params(32, 8);
  p.softcap = 30.0f;
  EXPECT_FALSE(cu::attn_decode_planes_applies(p, 16384));
  p = planes_params(32, 8);
  p.k_scale_plane = p.v_scale_plane = 0;  // GGUF blocks
  EXPECT_FALSE(cu::attn_decode_planes_applies(p, 16384));
}

// kernels.attn_planes_stages: 1 or 2 tiles in flight per warp.
TEST(AttnPlanesRoute, OneOrTwoStages) {
  for (int st : {0, 1, 2, 3, 4}) {
    cu::AttnParams p = planes_params(64, 8);
    p.planes_stages = st;
    EXPECT_EQ(cu::attn_decode_planes_applies(p, 16384), st == 1 || st == 2) << st;
    p.planes_copy = cu::PlanesCopy::TensorTiles;  // kernels.attn_planes_copy = tensor: one tile in flight only, the
                                                  // cache's rows known, within the offsets' range
    p.kv_rows = 4096;
    EXPECT_EQ(cu::attn_decode_planes_applies(p, 16384), st == 1) << st << " tensor";
    p.kv_rows = 0;
    EXPECT_FALSE(cu::attn_decode_planes_applies(p, 16384)) << st << " tensor, rows unknown";
    p.kv_rows = 16385;
    EXPECT_FALSE(cu::attn_decode_planes_applies(p, 16384)) << st << " tensor, rows past the range";
  }
}

// The fold (q/k norm + RoPE + append inside the tile form): one token, both sources, groups of 4 or 8.
TEST(AttnPlanesRoute, FoldTakesOneTokenWithItsSources) {
  float src[256] = {};
  for (auto [nh, nkv, ok] : {std::tuple{32, 8, true}, {64, 8, true}, {12, 3, true}, {16, 8, false}}) {
    cu::AttnParams p = planes_params(nh, nkv);
    p.rope.k_src = src;
    p.rope.v_src = src;
    EXPECT_EQ(cu::attn_decode_planes_fold_applies(p), ok) << nh << "/" << nkv;
    p.n_tokens = 2;
    EXPECT_FALSE(cu::attn_decode_planes_fold_applies(p)) << nh << "/" << nkv;
    p.n_tokens = 1;
    p.rope.v_src = nullptr;
    EXPECT_FALSE(cu::attn_decode_planes_fold_applies(p)) << nh << "/" << nkv;
  }
}

// The fold's head split (RopeFold::head_split = 1: one block per query head, 2: blocks of 2) is taken with
// the fold only; 0, other values and the unfolded launch keep the group's block. attn_decode_head_split
// answers the same for split-plane rows (kernel-check's fused _hs / _hs2 cases fail when it is not taken).
TEST(AttnPlanesRoute, HeadSplitOnlyInTheFold) {
  float src[256] = {};
  for (auto [nh, nkv] : {std::pair{32, 8}, {64, 8}, {12, 3}, {8, 1}}) {
    for (int hs : {0, 1, 2, 3, 4}) {
      cu::AttnParams p = planes_params(nh, nkv);
      p.rope.k_src = src;
      p.rope.v_src = src;
      p.rope.head_split = hs;
      p.rope.on = true;
      EXPECT_EQ(cu::attn_decode_planes_head_split(p), hs == 1 || hs == 2) << nh << "/" << nkv << " hs " << hs;
      EXPECT_EQ(cu::attn_decode_head_split(p), hs == 1 || hs == 2) << nh << "/" << nkv << " hs " << hs;
      p.rope.on = false;
      EXPECT_FALSE(cu::attn_decode_planes_head_split(p)) << nh << "/" << nkv << " hs " << hs;
    }
  }
}
