// Block-sparse attention with an indexer (Backend::block_sparse_attention, MiniMax-M3) against an
// independent f64 computation: block scores, the forced local blocks, top-k with ties to the lower
// block, the causal edge inside the query's own block, one-token decode vs a batch; plus the
// F32Order::Ggml arithmetic (tinyBLAS dot order, fused RoPE) and GgmlFlashAttn on an F32 cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "backend_cpu/test_data.h"
#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/half.h"

namespace memra::backend {
namespace {

using testdata::randv;

using testdata::view;

struct Case {
  int n_head = 4, n_head_kv = 2, hd = 8, idx_dim = 8;
  int block = 4, top_k = 3, local = 1;
  int total = 23;  // positions cached
};

struct Data {
  std::vector<float> K, V, IK, Q, IQ;  // K/V/IK: total rows; Q/IQ: total rows (row p = position p)
};

Data make_data(const Case& c, uint32_t seed) {
  const int kvw = c.n_head_kv * c.hd;
  Data d;
  d.K = randv((size_t)c.total * kvw, seed);
  d.V = randv((size_t)c.total * kvw, seed + 1);
  d.IK = randv((size_t)c.total * c.idx_dim, seed + 2);
  d.Q = randv((size_t)c.total * c.n_head * c.hd, seed + 3);
  d.IQ = randv((size_t)c.total * c.n_head_kv * c.idx_dim, seed + 4);
  return d;
}

BlockSparseParams params(const Case& c) {
  BlockSparseParams bp;
  bp.n_idx_head = c.n_head_kv;
  bp.idx_dim = c.idx_dim;
  bp.block_size = c.block;
  bp.top_k = c.top_k;
  bp.local_blocks = c.local;
  return bp;
}

AttnParams attn_params(const Case& c) {
  return AttnParams{c.n_head, c.n_head_kv, c.hd, c.hd, 1.0f / std::sqrt((float)c.hd), 0, 0.0f};
}

std::unique_ptr<KvStore> filled_kv(Backend& be, const Case& c, Data& d, QType t = QType::F32) {
  kv::KvShape shape;
  kv::KvLayerShape ls{c.n_head_kv, c.hd, c.hd};
  ls.idx_dim = c.idx_dim;
  shape.layers = {ls};
  auto kv = be.create_kv(shape, {64, t, t});
  const int kvw = c.n_head_kv * c.hd;
  be.kv_write(*kv, 0, 0, view(d.K, c.total, kvw), view(d.V, c.total, kvw));
  be.kv_write_index(*kv, 0, 0, view(d.IK, c.total, c.idx_dim));
  return kv;
}

// Positions [pos0, pos0 + n) through the op; rows of Q/IQ taken from the data.
std::vector<float> run_op(Backend& be, const KvStore& kv, const Case& c, Data& d, int pos0, int n) {
  const int qw = c.n_head * c.hd, iw = c.n_head_kv * c.idx_dim;
  std::vector<float> out((size_t)n * qw);
  View q{d.Q.data() + (size_t)pos0 * qw, n, qw, qw}, iq{d.IQ.data() + (size_t)pos0 * iw, n, iw, iw};
  be.block_sparse_attention(q, iq, kv, 0, pos0, attn_params(c), params(c), view(out, n, qw));
  return out;
}

// The kept blocks of (pos, kv head g), in f64.
std::set<int> ref_blocks(const Case& c, const Data& d, int pos, int g) {
  const int own = pos / c.block, first_local = std::max(0, own - c.local + 1);
  std::vector<std::pair<double, int>> cand;  // (-score, block): ascending = best first, lower block on ties
  for (int b = 0; b < first_local; ++b) {
    double m = -INFINITY;
    for (int j = b * c.block; j < (b + 1) * c.block; ++j) {
      double s = 0;
      for (int i = 0; i < c.idx_dim; ++i)
        s += (double)d.IQ[(size_t)(pos * c.n_head_kv + g) * c.idx_dim + i] * d.IK[(size_t)j * c.idx_dim + i];
      m = std::max(m, s);
    }
    cand.push_back({-m, b});
  }
  std::sort(cand.begin(), cand.end());
  std::set<int> kept;
  for (int b = first_local; b <= own; ++b) kept.insert(b);
  const int others = c.top_k - (int)kept.size();
  for (int i = 0; i < others && i < (int)cand.size(); ++i) kept.insert(cand[(size_t)i].second);
  return kept;
}

// f64 attention of query position pos over the kept blocks' positions <= pos.
std::vector<double> ref_row(const Case& c, const Data& d, int pos) {
  const int kvw = c.n_head_kv * c.hd, group = c.n_head / c.n_head_kv;
  std::vector<double> out((size_t)c.n_head * c.hd);
  for (int h = 0; h < c.n_head; ++h) {
    const int g = h / group;
    const auto kept = ref_blocks(c, d, pos, g);
    std::vector<int> js;
    for (int j = 0; j <= pos; ++j)
      if (kept.count(j / c.block)) js.push_back(j);
    std::vector<double> s;
    for (int j : js) {
      double x = 0;
      for (int i = 0; i < c.hd; ++i)
        x += (double)d.Q[(size_t)(pos * c.n_head + h) * c.hd + i] * d.K[(size_t)(j * kvw + g * c.hd + i)];
      s.push_back(x / std::sqrt((double)c.hd));
    }
    const double mx = *std::max_element(s.begin(), s.end());
    double sum = 0;
    for (auto& x : s) sum += x = std::exp(x - mx);
    for (int i = 0; i < c.hd; ++i) {
      double o = 0;
      for (size_t k = 0; k < js.size(); ++k) o += s[k] / sum * d.V[(size_t)(js[k] * kvw + g * c.hd + i)];
      out[(size_t)(h * c.hd + i)] = o;
    }
  }
  return out;
}

void check_against_f64(const Case& c, uint32_t seed, F32Order order = F32Order::Exact) {
  CpuBackendOptions o;
  o.threads = 2;
  o.f32_order = order;
  auto be = make_cpu_backend(o);
  Data d = make_data(c, seed);
  auto kv = filled_kv(*be, c, d);
  const auto out = run_op(*be, *kv, c, d, 0, c.total);  // the whole prefill in one batch
  const int qw = c.n_head * c.hd;
  for (int p = 0; p < c.total; ++p) {
    const auto ref = ref_row(c, d, p);
    for (int i = 0; i < qw; ++i)
      ASSERT_NEAR(out[(size_t)(p * qw + i)], ref[(size_t)i], 1e-5) << "position " << p << " element " << i;
  }
}

TEST(BlockSparseAttention, PrefillMatchesF64) { check_against_f64({}, 100); }
TEST(BlockSparseAttention, PrefillMatchesF64GgmlOrder) { check_against_f64({}, 101, F32Order::Ggml); }
TEST(BlockSparseAttention, TwoLocalBlocks) {
  Case c;
  c.local = 2;
  c.top_k = 3;
  c.total = 30;
  check_against_f64(c, 200);
}
TEST(BlockSparseAttention, TopKOfOneIsTheLocalBlockAlone) {
  Case c;
  c.top_k = 1;
  check_against_f64(c, 300);
}
TEST(BlockSparseAttention, OddSizesAndMoreHeadsPerGroup) {
  Case c;
  c.n_head = 6;
  c.n_head_kv = 2;
  c.hd = 12;
  c.idx_dim = 20;  // not a multiple of 8: the Ggml order falls back to the exact dot
  c.block = 3;
  c.top_k = 2;
  c.total = 26;
  check_against_f64(c, 400);
  check_against_f64(c, 401, F32Order::Ggml);
}

// top_k covering every block: plain causal attention, to the exact path's rounding.
TEST(BlockSparseAttention, EnoughBlocksIsDenseAttention) {
  Case c;
  c.top_k = 64;
  auto be = make_cpu_backend({2, false});
  Data d = make_data(c, 500);
  auto kv = filled_kv(*be, c, d);
  const auto sparse = run_op(*be, *kv, c, d, 0, c.total);
  const int qw = c.n_head * c.hd;
  std::vector<float> dense((size_t)c.total * qw);
  be->attention(view(d.Q, c.total, qw), *kv, 0, 0, attn_params(c), view(dense, c.total, qw));
  for (size_t i = 0; i < dense.size(); ++i) ASSERT_NEAR(sparse[i], dense[i], 2e-6) << i;
}

// One-token steps (the decode path) give the bits of the batch.
TEST(BlockSparseAttention, DecodeRowsEqualTheBatch) {
  Case c;
  c.total = 27;
  auto be = make_cpu_backend({2, false});
  Data d = make_data(c, 600);
  auto kv = filled_kv(*be, c, d);
  const auto batch = run_op(*be, *kv, c, d, 5, c.total - 5);
  const int qw = c.n_head * c.hd;
  for (int p = 5; p < c.total; ++p) {
    const auto one = run_op(*be, *kv, c, d, p, 1);
    EXPECT_EQ(std::memcmp(one.data(), batch.data() + (size_t)(p - 5) * qw, (size_t)qw * sizeof(float)), 0) << p;
  }
}

// Hand-checked: zero indexer queries tie every block at score 0 (ties go to the lower block), zero
// queries give uniform attention, and V = the key's block index makes the output the mean block
// index over the attended keys. Position 13 (own block 3 holds keys 12, 13; key 14 and 15 are in
// the cache but in the future), top_k 2: blocks 0 and 3, (4 x 0 + 2 x 3) / 6 = 1. Position 7, top_k
// 2: blocks 0 and 1 (all 8 keys), mean 0.5. Position 2: block 0 alone, keys 0..2, mean 0.
TEST(BlockSparseAttention, TiesGoToTheLowerBlockAndFutureKeysStayMasked) {
  Case c;
  c.n_head = 2;
  c.n_head_kv = 1;
  c.top_k = 2;
  c.total = 16;
  auto be = make_cpu_backend({1, false});
  Data d = make_data(c, 700);
  std::fill(d.Q.begin(), d.Q.end(), 0.0f);
  std::fill(d.IQ.begin(), d.IQ.end(), 0.0f);
  for (int j = 0; j < c.total; ++j)
    for (int i = 0; i < c.hd; ++i) d.V[(size_t)(j * c.hd + i)] = (float)(j / c.block);
  auto kv = filled_kv(*be, c, d);
  const auto out = run_op(*be, *kv, c, d, 0, c.total);
  const int qw = c.n_head * c.hd;
  EXPECT_FLOAT_EQ(out[(size_t)13 * qw], 1.0f);
  EXPECT_FLOAT_EQ(out[(size_t)13 * qw + c.hd], 1.0f);  // the second head of the group: the same blocks
  EXPECT_FLOAT_EQ(out[(size_t)7 * qw], 0.5f);
  EXPECT_FLOAT_EQ(out[(size_t)2 * qw], 0.0f);
  // An indexer query that prefers block 2 (its keys alone point along it) keeps block 2, not 0.
  for (int j = 8; j < 12; ++j) d.IK[(size_t)j * c.idx_dim] = 100.0f;
  d.IQ[(size_t)13 * c.idx_dim] = 1.0f;
  auto kv2 = filled_kv(*be, c, d);
  const auto out2 = run_op(*be, *kv2, c, d, 13, 1);
  EXPECT_FLOAT_EQ(out2[0], (4 * 2.0f + 2 * 3.0f) / 6.0f);
}

// The local block is kept even where its score is the lowest.
TEST(BlockSparseAttention, LocalBlockKeptWhateverItsScore) {
  Case c;
  c.n_head = 1;
  c.n_head_kv = 1;
  c.top_k = 2;
  c.total = 18;
  auto be = make_cpu_backend({1, false});
  Data d = make_data(c, 800);
  std::fill(d.Q.begin(), d.Q.end(), 0.0f);
  std::fill(d.IQ.begin(), d.IQ.end(), 0.0f);
  std::fill(d.IK.begin(), d.IK.end(), 0.0f);
  for (int j = 0; j < c.total; ++j) {
    for (int i = 0; i < c.hd; ++i) d.V[(size_t)(j * c.hd + i)] = (float)(j / c.block);
    d.IK[(size_t)j * c.idx_dim] = j < 16 ? (float)(j / c.block) : -50.0f;  // block 4 (the own block) lowest
  }
  d.IQ[(size_t)17 * c.idx_dim] = 1.0f;
  auto kv = filled_kv(*be, c, d);
  const auto out = run_op(*be, *kv, c, d, 17, 1);
  EXPECT_FLOAT_EQ(out[0], (4 * 3.0f + 2 * 4.0f) / 6.0f);  // block 3 (best other) and block 4 (own)
}

TEST(BlockSparseAttention, RefusesWhatItCannotCompute) {
  Case c;
  auto be = make_cpu_backend({1, false});
  Data d = make_data(c, 900);
  auto kv = filled_kv(*be, c, d);
  const int qw = c.n_head * c.hd, iw = c.n_head_kv * c.idx_dim;
  std::vector<float> out((size_t)qw);
  View q = view(d.Q, 1, qw), iq = view(d.IQ, 1, iw), o = view(out, 1, qw);
  AttnParams windowed = attn_params(c);
  windowed.window = 4;
  EXPECT_THROW(be->block_sparse_attention(q, iq, *kv, 0, 3, windowed, params(c), o), Error);
  BlockSparseParams few = params(c);
  few.top_k = 0;
  EXPECT_THROW(be->block_sparse_attention(q, iq, *kv, 0, 3, attn_params(c), few, o), Error);
  BlockSparseParams heads = params(c);
  heads.n_idx_head = 1;
  EXPECT_THROW(be->block_sparse_attention(q, view(d.IQ, 1, c.idx_dim), *kv, 0, 3, attn_params(c), heads, o), Error);
  // Past the cached positions (K/V and indexer keys hold 23).
  EXPECT_THROW(be->block_sparse_attention(q, iq, *kv, 0, c.total, attn_params(c), params(c), o), Error);
  // K/V written but no indexer keys.
  kv::KvShape shape;
  kv::KvLayerShape ls{c.n_head_kv, c.hd, c.hd};
  ls.idx_dim = c.idx_dim;
  shape.layers = {ls};
  auto kv2 = be->create_kv(shape, {64, QType::F32, QType::F32});
  be->kv_write(*kv2, 0, 0, view(d.K, 4, c.n_head_kv * c.hd), view(d.V, 4, c.n_head_kv * c.hd));
  EXPECT_THROW(be->block_sparse_attention(q, iq, *kv2, 0, 3, attn_params(c), params(c), o), Error);
  // A layer without indexer keys.
  kv::KvShape plain;
  plain.layers = {{c.n_head_kv, c.hd, c.hd}};
  auto kv3 = be->create_kv(plain, {64, QType::F32, QType::F32});
  EXPECT_THROW(be->kv_write_index(*kv3, 0, 0, view(d.IK, 1, c.idx_dim)), Error);
}

// ---------------------------------------------------------------- F32Order::Ggml
// tinyBLAS's order written out: 8 FMA lanes, then ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
float tinyblas_dot(const float* a, const float* b, int n) {
  float lane[8] = {};
  for (int i = 0; i < n; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] = std::fma(a[i + l], b[i + l], lane[l]);
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

TEST(F32OrderGgml, F32MatmulInTinyBlasOrder) {
  CpuBackendOptions o;
  o.threads = 2;
  o.f32_order = F32Order::Ggml;
  auto be = make_cpu_backend(o);
  const int in = 96, out = 5, n = 3;
  auto w = randv((size_t)in * out, 1000), x = randv((size_t)in * n, 1001);
  Weight wt = be->upload_weight("w", QType::F32, std::vector<int64_t>{in, out}, w.data(), nullptr);
  std::vector<float> y((size_t)n * out), y_exact((size_t)n * out);
  be->matmul(wt, view(x, n, in), view(y, n, out));
  make_cpu_backend({2, false})->matmul(wt, view(x, n, in), view(y_exact, n, out));
  bool differs = false;
  for (int t = 0; t < n; ++t)
    for (int r = 0; r < out; ++r) {
      const float want = tinyblas_dot(w.data() + (size_t)r * in, x.data() + (size_t)t * in, in);
      EXPECT_EQ(y[(size_t)(t * out + r)], want) << t << " " << r;
      differs |= y_exact[(size_t)(t * out + r)] != want;
    }
  EXPECT_TRUE(differs);  // the option changes something: the exact order rounds otherwise somewhere
}

TEST(F32OrderGgml, RopeRotationsFused) {
  CpuBackendOptions o;
  o.threads = 1;
  o.f32_order = F32Order::Ggml;
  auto be = make_cpu_backend(o), exact = make_cpu_backend({1, false});
  RopeParams p;
  p.mode = RopeMode::Neox;
  p.head_dim = 16;
  p.n_rot = 8;
  p.freq_base = 10000.0f;
  auto x = randv(64, 1100), y = x, orig = x;
  be->rope(view(x, 2, 32), 2, 7, p);
  exact->rope(view(y, 2, 32), 2, 7, p);
  // The pass-through dims are untouched; the rotated ones within an ulp or two of the exact path.
  for (size_t i = 0; i < x.size(); ++i) {
    if (i % 16 >= 8) {
      EXPECT_EQ(x[i], orig[i]);
    }
    EXPECT_NEAR(x[i], y[i], 4e-7f * std::max(1.0f, std::fabs(y[i])));
  }
  // Position 0 (one row): cos 1, sin 0, so fma(x0, 1, -(x1 * 0)) = x0 exactly.
  auto z = orig;
  be->rope(view(z, 1, 32), 2, 0, p);
  EXPECT_EQ(std::memcmp(z.data(), orig.data(), 32 * sizeof(float)), 0);
}

// GgmlFlashAttnF32Cache on an F32 cache rounds K/V to f16 first (llama.cpp casts them for flash
// attention): the same bits as an F16 cache, for the one-chunk rows and the 64-row batches alike.
TEST(AttentionGgmlF32Cache, EqualsTheF16Cache) {
  CpuBackendOptions o;
  o.threads = 2;
  o.attention_numerics = AttentionNumerics::GgmlFlashAttnF32Cache;
  auto be = make_cpu_backend(o);
  const int nh = 4, nkv = 2, hd = 16, kvw = nkv * hd;
  for (int n_new : {5, 70}) {
    const int total = 3 + n_new;
    auto K = randv((size_t)total * kvw, 1200), V = randv((size_t)total * kvw, 1201);
    auto Q = randv((size_t)n_new * nh * hd, 1202);
    std::vector<float> out[2];
    int i = 0;
    for (QType t : {QType::F32, QType::F16}) {
      kv::KvShape shape;
      shape.layers = {{nkv, hd, hd}};
      auto kv = be->create_kv(shape, {128, t, t});
      be->kv_write(*kv, 0, 0, view(K, total, kvw), view(V, total, kvw));
      out[i].resize((size_t)n_new * nh * hd);
      be->attention(view(Q, n_new, nh * hd), *kv, 0, 3, {nh, nkv, hd, hd, 0.25f, 0, 0.0f},
                    view(out[i], n_new, nh * hd));
      ++i;
    }
    EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)), 0) << n_new;
  }
}

}  // namespace
}  // namespace memra::backend
