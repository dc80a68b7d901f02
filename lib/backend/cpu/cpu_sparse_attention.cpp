// Block-sparse attention with an indexer (BlockSparseParams in backend.h): the indexer-key cache
// and, per query and kv head, the block selection followed by exact attention over the kept keys.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"

namespace memra::backend::cpu {

void CpuBackend::kv_write_index(KvStore& kvs, int layer, int pos0, View ik) {
  auto& c = dynamic_cast<CpuKv&>(kvs).cache;
  const auto& ls = c.shape().layers.at((size_t)layer);
  MEMRA_CHECK(ls.idx_dim > 0 && ik.cols == ls.idx_dim,
              "kv_write_index: layer {} keeps {} indexer-key floats per position, got rows of {}", layer, ls.idx_dim,
              ik.cols);
  c.write_index(layer, pos0, (int)ik.rows, ik.data, ik.ld);
}

namespace {

// The blocks kept for one query at position pos and one indexer head (qi: its idx_dim query),
// ascending, into kept (cleared first). ik: the cached indexer keys from position 0; tinyblas:
// the scores in llama.cpp's f32 mul_mat order (F32Order::Ggml), else dot_f32. score:
// scratch of at least pos / block_size + 1 entries.
void select_blocks(const float* qi, const float* ik, int pos, const BlockSparseParams& bp, bool tinyblas,
                   std::vector<float>& score, std::vector<int>& order, std::vector<int>& kept) {
  const int bs = bp.block_size;
  const int own = pos / bs;                                // the query's own block
  const int first_local = std::max(0, own - bp.local_blocks + 1);  // blocks [first_local, own] always kept
  kept.clear();
  order.clear();
  for (int b = 0; b < first_local; ++b) {
    float m = -INFINITY;
    for (int j = b * bs; j < (b + 1) * bs; ++j)  // every position of an earlier block is <= pos
      m = std::max(m, tinyblas ? dot_f32_tinyblas(qi, ik + (int64_t)j * bp.idx_dim, bp.idx_dim)
                               : dot_f32(qi, ik + (int64_t)j * bp.idx_dim, bp.idx_dim));
    score[(size_t)b] = m;
    order.push_back(b);
  }
  const int n_other = std::max(0, bp.top_k - (own - first_local + 1));
  const size_t take = std::min(order.size(), (size_t)n_other);
  std::partial_sort(order.begin(), order.begin() + (ptrdiff_t)take, order.end(), [&](int a, int b) {
    return score[(size_t)a] > score[(size_t)b] || (score[(size_t)a] == score[(size_t)b] && a < b);
  });
  kept.assign(order.begin(), order.begin() + (ptrdiff_t)take);
  for (int b = first_local; b <= own; ++b) kept.push_back(b);
  std::sort(kept.begin(), kept.end());
}

}  // namespace

void CpuBackend::block_sparse_attention(View q, View iq, const KvStore& kvs, int layer, int pos0, const AttnParams& p,
                                        const BlockSparseParams& bp, View out) {
  const auto& c = dynamic_cast<const CpuKv&>(kvs).cache;
  const auto& ls = c.shape().layers.at((size_t)layer);
  MEMRA_CHECK(p.n_head > 0 && p.n_head_kv > 0 && p.n_head % p.n_head_kv == 0,
              "block_sparse_attention: n_head {} is not a multiple of n_head_kv {}", p.n_head, p.n_head_kv);
  MEMRA_CHECK(ls.n_head_kv == p.n_head_kv && ls.head_dim_k == p.head_dim_k && ls.head_dim_v == p.head_dim_v &&
                  ls.idx_dim == bp.idx_dim,
              "block_sparse_attention: layer {} cache holds {} kv heads of {}/{} dims and {} indexer-key floats, op "
              "asks {} of {}/{} and {}", layer, ls.n_head_kv, ls.head_dim_k, ls.head_dim_v, ls.idx_dim, p.n_head_kv,
              p.head_dim_k, p.head_dim_v, bp.idx_dim);
  MEMRA_CHECK(bp.n_idx_head == p.n_head_kv && bp.idx_dim > 0,
              "block_sparse_attention: {} indexer heads of {} dims for {} kv heads (one indexer head per kv head)",
              bp.n_idx_head, bp.idx_dim, p.n_head_kv);
  MEMRA_CHECK(bp.block_size > 0 && bp.local_blocks >= 1 && bp.top_k >= bp.local_blocks,
              "block_sparse_attention: block size {}, top_k {}, local blocks {}: needs block size > 0 and "
              "top_k >= local blocks >= 1", bp.block_size, bp.top_k, bp.local_blocks);
  MEMRA_CHECK(p.window == 0 && p.softcap == 0.0f && !p.sinks,
              "block_sparse_attention: sliding window, softcap and sinks are not supported");
  MEMRA_CHECK(q.cols == (int64_t)p.n_head * p.head_dim_k && out.cols == (int64_t)p.n_head * p.head_dim_v &&
                  out.rows == q.rows && iq.rows == q.rows && iq.cols == (int64_t)bp.n_idx_head * bp.idx_dim,
              "block_sparse_attention: q [{} x {}] / iq [{} x {}] / out [{} x {}] do not match {} heads of {}/{} "
              "and {} indexer heads of {}", q.rows, q.cols, iq.rows, iq.cols, out.rows, out.cols, p.n_head,
              p.head_dim_k, p.head_dim_v, bp.n_idx_head, bp.idx_dim);
  const int n_kv = pos0 + (int)q.rows;
  MEMRA_CHECK(n_kv <= c.n_written() && n_kv <= c.index_written(layer),
              "block_sparse_attention: positions up to {} requested, cache holds {} (indexer keys {})", n_kv,
              c.n_written(), c.index_written(layer));

  const int64_t kr = ls.k_row(), vr = ls.v_row();
  CacheRows rows;
  cache_rows_f32(c, layer, n_kv, rows);
  const float* K = rows.K;
  const float* V = rows.V;
  const float* IK = c.index_keys(layer);
  const int group = p.n_head / p.n_head_kv;
  const bool tinyblas = opts_.f32_order == F32Order::Ggml && bp.idx_dim % 8 == 0;
  const size_t jobs = (size_t)q.rows * (size_t)p.n_head_kv;  // one (query row, kv head) each
  pool_.parallel_for(jobs, [&](size_t b, size_t e) {
    std::vector<float> bscore((size_t)(n_kv / bp.block_size + 1)), score((size_t)n_kv);
    std::vector<int> order, kept;
    std::vector<double> acc((size_t)p.head_dim_v);
    for (size_t job = b; job < e; ++job) {
      const int64_t t = (int64_t)(job / (size_t)p.n_head_kv);
      const int g = (int)(job % (size_t)p.n_head_kv);
      const int pos = pos0 + (int)t;
      select_blocks(iq.row(t) + (int64_t)g * bp.idx_dim, IK, pos, bp, tinyblas, bscore, order, kept);
      for (int h = g * group; h < (g + 1) * group; ++h) {
        const float* qh = q.row(t) + (int64_t)h * p.head_dim_k;
        float mx = -INFINITY;
        for (int blk : kept)
          for (int j = blk * bp.block_size; j < std::min((blk + 1) * bp.block_size, pos + 1); ++j) {
            const float s = dot_f32(qh, K + (int64_t)j * kr + (int64_t)g * p.head_dim_k, p.head_dim_k) * p.scale;
            score[(size_t)j] = s;
            mx = std::max(mx, s);
          }
        double sum = 0.0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int blk : kept)
          for (int j = blk * bp.block_size; j < std::min((blk + 1) * bp.block_size, pos + 1); ++j) {
            const double w = std::exp((double)score[(size_t)j] - mx);
            sum += w;
            const float* vj = V + (int64_t)j * vr + (int64_t)g * p.head_dim_v;
            for (int d = 0; d < p.head_dim_v; ++d) acc[(size_t)d] += w * vj[d];
          }
        float* o = out.row(t) + (int64_t)h * p.head_dim_v;
        for (int d = 0; d < p.head_dim_v; ++d) o[d] = (float)(acc[(size_t)d] / sum);
      }
    }
  });
}

}  // namespace memra::backend::cpu
