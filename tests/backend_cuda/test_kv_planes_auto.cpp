// kv.planes = auto on the CUDA backend (backend::cuda_kv_options): the split-plane layout exactly where
// the int8 tile decode form takes every attention layer (head dim 128 for K and V, 4 or 8 query heads
// per kv head, no sinks, no indexer keys, rows within 4 GiB) and the types (K q8_0; V q8_0 or auto,
// which then becomes q8_0); the options unchanged otherwise. Expected values from those rules, which
// are the launch rules tested in test_attn_planes_route.cpp (attn_decode_planes_applies).
#include <gtest/gtest.h>

#include "backend/cuda/cuda_backend.h"

using namespace memra;

namespace {

kv::KvShape layers(int n, int n_head, int n_kv, int hd_k = 128, int hd_v = 128) {
  kv::KvShape s;
  kv::KvLayerShape ls{n_kv, hd_k, hd_v};
  ls.n_head = n_head;
  s.layers.assign((size_t)n, ls);
  return s;
}

kv::KvOptions auto_opts(int n_ctx = 4096, QType v = QType::Q5_1, bool v_auto = true) {
  kv::KvOptions o;
  o.n_ctx = n_ctx;
  o.type_k = QType::Q8_0;
  o.type_v = v;
  o.planes_auto = true;
  o.type_v_auto = v_auto;
  return o;
}

bool planes_for(const kv::KvShape& s, const kv::KvOptions& o) {
  const kv::KvOptions r = backend::cuda_kv_options(s, o);
  EXPECT_FALSE(r.planes_auto);
  EXPECT_EQ(r.type_k, o.type_k);
  EXPECT_EQ(r.n_ctx, o.n_ctx);
  EXPECT_EQ(r.type_v, r.planes ? QType::Q8_0 : o.type_v);
  return r.planes;
}

}  // namespace

TEST(KvPlanesAuto, TakenWhereTheTileFormTakesEveryLayer) {
  EXPECT_TRUE(planes_for(layers(36, 32, 8), auto_opts()));   // qwen3-8b: groups of 4
  EXPECT_TRUE(planes_for(layers(64, 64, 8), auto_opts()));   // qwen3-32b: groups of 8
  EXPECT_TRUE(planes_for(layers(2, 12, 3), auto_opts()));    // odd kv heads, groups of 4
  EXPECT_TRUE(planes_for(layers(36, 32, 8), auto_opts(4096, QType::Q8_0, false)));  // an explicit q8_0 V
  EXPECT_FALSE(planes_for(layers(28, 16, 8), auto_opts()));  // groups of 2 (qwen3-0.6b)
  EXPECT_FALSE(planes_for(layers(4, 32, 32), auto_opts()));  // no grouping
  EXPECT_FALSE(planes_for(layers(4, 64, 4), auto_opts()));   // groups of 16
  EXPECT_FALSE(planes_for(layers(4, 32, 8, 64, 64), auto_opts()));    // head dim 64
  EXPECT_FALSE(planes_for(layers(4, 32, 8, 256, 256), auto_opts()));  // head dim 256
  EXPECT_FALSE(planes_for(layers(4, 32, 8, 192, 128), auto_opts()));  // K and V head dims differ
  EXPECT_FALSE(planes_for(layers(4, 0, 8), auto_opts()));              // query heads not given
}

TEST(KvPlanesAuto, OneLayerOutsideKeepsTheDefaultLayout) {
  kv::KvShape s = layers(4, 32, 8);
  s.layers[2].sinks = true;
  EXPECT_FALSE(planes_for(s, auto_opts()));
  s = layers(4, 32, 8);
  s.layers[3].head_dim_k = s.layers[3].head_dim_v = 256;  // a wider layer (gemma-style)
  EXPECT_FALSE(planes_for(s, auto_opts()));
  s = layers(4, 32, 8);
  s.layers[1].idx_dim = 64;
  EXPECT_FALSE(planes_for(s, auto_opts()));
}

TEST(KvPlanesAuto, RecurrentLayersAreSkipped) {
  kv::KvShape s = layers(4, 32, 8);
  kv::KvLayerShape rec;
  rec.state_floats = 1024;
  s.layers[0] = s.layers[2] = rec;
  EXPECT_TRUE(planes_for(s, auto_opts()));
  kv::KvShape only;
  only.layers.assign(3, rec);
  EXPECT_FALSE(planes_for(only, auto_opts()));  // no attention layer: nothing to take
}

TEST(KvPlanesAuto, TypesDecide) {
  const kv::KvShape s = layers(36, 32, 8);
  EXPECT_FALSE(planes_for(s, auto_opts(4096, QType::Q5_1, false)));  // an explicit q5_1 V
  EXPECT_FALSE(planes_for(s, auto_opts(4096, QType::F16, false)));   // an explicit f16 V
  kv::KvOptions k16 = auto_opts();
  k16.type_k = QType::F16;
  EXPECT_FALSE(planes_for(s, k16));
}

TEST(KvPlanesAuto, RowsPast4GiBKeepTheDefaultLayout) {
  // 8 kv heads x 128: 1024 quants + 64 scale bytes per row (kv_planes_row_bytes), so 2^32 / 1088 rows fit.
  const kv::KvShape s = layers(2, 32, 8);
  EXPECT_TRUE(planes_for(s, auto_opts((int)((uint64_t{1} << 32) / 1088))));
  EXPECT_FALSE(planes_for(s, auto_opts((int)((uint64_t{1} << 32) / 1088) + 1)));
}

TEST(KvPlanesAuto, OffAndOnPassThrough) {
  const kv::KvShape s = layers(4, 32, 32);  // a shape auto would not take
  kv::KvOptions off = auto_opts();
  off.planes_auto = false;
  EXPECT_FALSE(planes_for(s, off));
  kv::KvOptions on = off;
  on.planes = true;
  on.type_v = QType::Q8_0;
  const kv::KvOptions r = backend::cuda_kv_options(s, on);
  EXPECT_TRUE(r.planes);  // "on" is checked where the cache is made and the attention runs, not here
}
