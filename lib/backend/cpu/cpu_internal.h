#pragma once
// Shared between the CPU backend's translation units (not a public header).
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/parallel.h"
#include "kv/kv.h"

namespace memra::backend::cpu {

// f32 dot product with 32 independent lanes (vectorizes), summed in f64 at the end.
float dot_f32(const float* a, const float* b, int64_t n);
// The dot product in the order of llama.cpp's tinyBLAS f32 sgemm on AVX2/FMA (F32Order::Ggml):
// lane l (of 8) accumulates a[i] b[i] for i = l, l + 8, ... with FMA in f32, then the lanes are
// summed as its hsum does ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). n % 8 == 0.
float dot_f32_tinyblas(const float* a, const float* b, int64_t n);
// Decode-path dot of one quantized weight row with f32 x, bit-identical to dequant_row + dot_f32
// (cpu_dot.cpp); only for the types has_fused_dot accepts.
bool has_fused_dot(QType t);
float fused_dot(QType t, const uint8_t* w, const float* x, int64_t n);
// Dequantizes one row of any weight type into dst (n floats).
void dequant_row(QType t, const void* src, float* dst, int64_t n);

// llama.cpp's CPU flash-attention rounding for one query row of one head over keys [lo, hi]
// (inclusive) of an F16 cache read back as f32 rows (exact: every f16 is an f32). K row j of this
// head starts at K + j * k_stride, V row j at V + j * v_stride (cpu_attention_ggml.cpp).
// Query batches of at least kGgmlFaTiledRows rows take ggml's tiled f32 kernel instead.
constexpr int64_t kGgmlFaTiledRows = 64;
// sink: the head's sink logit (attention sinks) or nullptr.
void ggml_fa_f16_row(const float* q, const float* K, int64_t k_stride, const float* V, int64_t v_stride,
                     int lo, int hi, int dk, int dv, float scale, float softcap, const float* sink, float* out);

// The f32 K and V rows [0, n_kv) of one layer: the cache's own rows when it holds f32, else
// dequantized into kbuf / vbuf.
struct CacheRows {
  const float* K = nullptr;
  const float* V = nullptr;
  std::vector<float> kbuf, vbuf;
};
void cache_rows_f32(const kv::KvCache& c, int layer, int n_kv, CacheRows& out);

class CpuKv final : public KvStore {
 public:
  CpuKv(const kv::KvShape& s, const kv::KvOptions& o) : cache(s, o) {}
  int n_ctx() const override { return cache.n_ctx(); }
  const kv::KvShape& shape() const override { return cache.shape(); }
  const kv::KvOptions& options() const override { return cache.options(); }
  void truncate(int n) override { cache.truncate(n); }
  bool has_recurrent_state() const override { return cache.has_state(); }
  void save_checkpoint() override { cache.save_checkpoint(); }
  void rollback_to_checkpoint() override { cache.rollback_to_checkpoint(); }
  kv::KvCache cache;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& o) : opts_(o), pool_(o.threads) {}
  std::string name() const override { return "cpu"; }

  Buffer alloc(int64_t n_floats) override;
  Weight upload_weight(const std::string& name, QType type, std::span<const int64_t> ne,
                       const void* host, std::shared_ptr<const void> keep_alive) override;
  void to_host(View src, float* dst) override;
  void from_host(const float* src, View dst) override;
  void synchronize() override {}

  std::unique_ptr<KvStore> create_kv(const kv::KvShape& shape, const kv::KvOptions& opts) override;
  void kv_write(KvStore& kv, int layer, int pos0, View k, View v) override;

  void embed(const Weight& table, std::span<const int32_t> ids, View out) override;
  void matmul(const Weight& w, View x, View y, const Weight* bias) override;
  void rms_norm(View x, const Weight* w, float eps, View out) override;
  void add_rms_norm(View residual, View delta, const Weight* w, float eps, View out) override;
  void layer_norm(View x, const Weight* w, const Weight* b, float eps, View out) override;
  void head_rms_norm(View x, int n_head, int head_dim, const Weight* w, float eps) override;
  void rope(View x, int n_head, int pos0, const RopeParams& p) override;
  void attention(View q, const KvStore& kv, int layer, int pos0, const AttnParams& p,
                 View out) override;
  void glu(View gate, View up, Activation act, View out) override;
  void activate(View x, Activation act) override;
  void add(View a, View b) override;
  void scale(View x, float s) override;
  void softcap(View x, float cap) override;
  void sigmoid_head_gate(View x, int n_head, int head_dim, View gate) override;
  void moe_ffn(View x, const MoeWeights& w, const MoeParams& p, View out) override;
  void kv_write_index(KvStore& kv, int layer, int pos0, View ik) override;
  void block_sparse_attention(View q, View iq, const KvStore& kv, int layer, int pos0, const AttnParams& p,
                              const BlockSparseParams& bp, View out) override;
  void gated_delta_net(View qkv, View alpha, View beta, const DeltaNetWeights& w, const DeltaNetParams& p, KvStore& kv,
                       int layer, int pos0, View out) override;

  ThreadPool& pool() { return pool_; }

 private:
  // One expert's (or a whole 2-D weight's) rows [row0, row0 + n_out) as a matmul operand.
  void matmul_rows(const Weight& w, int64_t row0, int64_t n_out, View x, View y, const Weight* bias);

  CpuBackendOptions opts_;
  ThreadPool pool_;
};

}  // namespace memra::backend::cpu
