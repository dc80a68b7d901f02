#pragma once
// Shared between the CUDA backend's translation units (not a public header).
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attn/attn_kernels.h"
#include "backend/backend.h"
#include "backend/cuda/runtime.h"
#include "backend/cuda/step_graph.h"
#include "backend/cuda/variant.h"
#include "config/config.h"
#include "rope/rope_kernels.h"

namespace memra::cuda {
struct MmvsParams;  // matvec/mmvs.h
}  // namespace memra::cuda

namespace memra::backend::cuda_impl {

// What outlives the backend object: Buffers and Weights handed to callers free into this pool
// from their deleters, whenever they die.
struct Shared {
  std::unique_ptr<cuda::Context> ctx;
  std::atomic<uint64_t> weight_gen{0};  // bumped when a weight is freed (StepKey)
  std::atomic<uint64_t> weight_bytes{0};
  std::atomic<uint64_t> f16_skipped{0};  // matrices left without an f16 prefill copy (memory reserve)
};

class DeviceTokenSampler;

class CudaKv final : public KvStore {
 public:
  CudaKv(std::shared_ptr<Shared> sh, const kv::KvShape& s, const kv::KvOptions& o, uint64_t serial);
  int n_ctx() const override { return opts_.n_ctx; }
  const kv::KvShape& shape() const override { return shape_; }
  const kv::KvOptions& options() const override { return opts_; }
  void truncate(int n) override;
  bool has_recurrent_state() const override;
  void save_checkpoint() override;
  void rollback_to_checkpoint() override;

  struct Layer {
    cuda::DeviceBuffer k, v;
    int64_t k_row_bytes = 0, v_row_bytes = 0;
    int k_scale_plane = 0, v_scale_plane = 0;  // kv.planes: the rows' scale plane offsets (AttnParams::k_scale_plane)
    cuda::DeviceBuffer state;  // recurrent layers only (kv::KvLayerShape::state_floats f32)
    cuda::DeviceBuffer ckpt;   // save_checkpoint's copy of state (allocated at the first save)
  };
  std::shared_ptr<Shared> sh;
  kv::KvShape shape_;
  kv::KvOptions opts_;
  std::vector<Layer> layers;
  int n_written = 0;
  std::vector<int> state_pos;  // per layer: tokens its recurrent state has consumed
  std::vector<int> ckpt_state_pos;
  int ckpt_n = -1;  // save_checkpoint's length (-1: none)
  uint64_t serial = 0;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const Config& cfg);
  ~CudaBackend() override;
  std::string name() const override { return "cuda"; }
  std::map<std::string, std::string> variants() const override;
  bool decode_graph() const override { return graph_ran_; }
  // The matvec and the split-K decode attention take a batch below kernels.gemm_min_batch and up to
  // kMatvecMaxM rows (variant.h; CudaBackend::attention): the decode kernels, per row the same bits.
  int max_verify_rows() const override;
  double last_step_device_us() override;

  bool begin_step(const Step& s) override;
  void end_step(bool ok) override;

  Buffer alloc(int64_t n_floats) override;
  Weight upload_weight(const std::string& name, QType type, std::span<const int64_t> ne,
                       const void* host, std::shared_ptr<const void> keep_alive) override;
  void to_host(View src, float* dst) override;
  void argmax_rows(View src, std::span<int32_t> out) override;
  std::unique_ptr<TokenSampler> make_sampler(const SamplerOptions& o) override;  // cuda_sample_ops.cpp
  void from_host(const float* src, View dst) override;
  void synchronize() override;

  std::unique_ptr<KvStore> create_kv(const kv::KvShape& shape, const kv::KvOptions& opts) override;
  void kv_write(KvStore& kv, int layer, int pos0, View k, View v) override;

  void embed(const Weight& table, std::span<const int32_t> ids, View out) override;
  void matmul(const Weight& w, View x, View y, const Weight* bias) override;
  bool fuses_residual(const Weight& w, View x, const Weight* bias) override;
  void matmul_residual(const Weight& w, View x, View residual) override;
  void expect_norm_after_residual(const Weight* w, float eps, View out) override {
    norm_hint_ = {w, eps, out};
    norm_emitted_ = false;
  }
  void rms_norm(View x, const Weight* w, float eps, View out) override;
  void rms_norm_into_matvecs(View x, const Weight* w, float eps, View out) override;
  void add_rms_norm(View residual, View delta, const Weight* w, float eps, View out) override;
  void head_rms_norm(View x, int n_head, int head_dim, const Weight* w, float eps) override;
  void rope(View x, int n_head, int pos0, const RopeParams& p) override;
  void qk_norm_rope(View q, View k, int n_head, int n_head_kv, const Weight* q_norm, const Weight* k_norm, float eps,
                    int pos0, const RopeParams& p) override;
  void qk_norm_rope_kv(View q, View k, View v, int n_head, int n_head_kv, const Weight* q_norm, const Weight* k_norm,
                       float eps, int pos0, const RopeParams& p, KvStore& kv, int layer) override;
  void attention(View q, const KvStore& kv, int layer, int pos0, const AttnParams& p,
                 View out) override;
  void qk_norm_rope_kv_attention(View q, View k, View v, int n_head, int n_head_kv, const Weight* q_norm,
                                 const Weight* k_norm, float eps, int pos0, const RopeParams& rp, KvStore& kv, int layer,
                                 const AttnParams& ap, View out) override;
  void glu(View gate, View up, Activation act, View out) override;
  void matmul_glu(const Weight& gate, const Weight& up, View x, Activation act, View out, View up_tmp) override;
  void matmul_n(View x, std::span<const MatmulOut> outs) override;
  void activate(View x, Activation act) override;
  void add(View a, View b) override;
  void scale(View x, float s) override;
  void softcap(View x, float cap) override;
  void sigmoid_head_gate(View x, int n_head, int head_dim, View gate) override;
  void moe_ffn(View x, const MoeWeights& w, const MoeParams& p, View out) override;
  bool rms_norm_moe_ffn(View x, const Weight* norm_w, float eps, View h, const MoeWeights& w, const MoeParams& p,
                        View out, bool may_add) override;
  bool moe_on_device(const MoeWeights& w, const MoeParams& p, int64_t n) const override;
  void gated_delta_net(View qkv, View alpha, View beta, const DeltaNetWeights& w, const DeltaNetParams& p, KvStore& kv,
                       int layer, int pos0, View out) override;

 private:
  friend class DeviceTokenSampler;  // cuda_sample_ops.cpp: the stream, the pool, settle_deferred_norm
  enum Slot { kQ8Act, kGemm, kAttn, kAdhocIds, kQ8s, kX16, kNormSs, kDeltaNet, kMoe, kQ8s2, kNumSlots };
  cuda::Context& ctx() const { return *sh_->ctx; }
  cudaStream_t stream() const { return sh_->ctx->compute_stream(); }
  // Backend-owned scratch that only grows; the outgrown buffer is retired (kept alive) while a
  // captured graph may still reference it.
  void* workspace(Slot slot, size_t bytes);
  // Device pointer holding pos0 / the ids for the current op: the step's staged values inside a
  // step, else staged here (pageable async copy; not allowed under capture).
  const int32_t* device_pos(int pos0);
  const int32_t* device_ids(std::span<const int32_t> ids);
  void note(const std::string& op, const std::string& variant);
  void drop_graphs();
  void stage_step_eager(std::span<const int32_t> ids, int pos0);
  const cuda::MatmulVariant& matmul_variant(const Weight& w, int64_t m);
  // The kernel-side RoPE parameters of an in-place rope on x (shape checks with the op's errors).
  cuda::RopeParams rope_params(View x, int n_head, int pos0, const RopeParams& rp);
  // x as q8s planes (kernels/matvec/mmvs.h) in the kQ8s slot: quantized here, or reused when the
  // last quantized input is the same view and nothing has written memory since (kernels.fuse).
  struct Q8s {
    const int8_t* xq;
    const void* xds;
    bool il;   // xq in the interleaved order (kernels.mmvs_act_il, one-token rows; q8s_order.h)
    bool q6k;  // with il: its Q6_K variant (kernels.mmvs_act_il_q6k)
    // The planes of a deferred norm (kernels.norm_defer): the launch applies the scale of these
    // partials (MmvsParams::norm_ss) or asks for the norm in full (settle_deferred_norm).
    const float* norm_ss = nullptr;
    int norm_ss_n = 0;
    float norm_eps = 0.0f;
    bool norm_ss_final = false;  // norm_ss holds the scale (kernels.norm_defer_scale = "norm")
  };
  // kernels.norm_defer (rms_norm_into_matvecs): the norm whose planes are held deferred (live), or
  // whose output was given up (not live: nothing may read it until a norm writes it again).
  struct DeferredNorm {
    View x{}, out{};
    const Weight* w = nullptr;
    float eps = 0.0f;
    const float* ss = nullptr;
    int n_ss = 0;
    bool live = false;
    bool final = false;  // ss holds the rows' scales (kernels.norm_defer_scale = "norm")
  };
  // Whether rms_norm_into_matvecs(x, ., ., out) takes the deferred form (kernels.norm_defer).
  bool defers_norm(View x, View out) const;
  // kernels.mmvs_emit_norm: the one-token residual launch p (y: the stream it adds to) with the
  // hinted norm of y in the same launch (cuda::launch_mmvs_emit_norm), leaving the state
  // rms_norm_into_matvecs(y, hint) would; false (nothing launched) where it does not apply.
  struct NormHint {
    const Weight* w = nullptr;
    float eps = 0.0f;
    View out{};
  };
  bool launch_emit_norm(const cuda::MmvsParams& p, View y, const NormHint& h);
  // kernels.mmvs_glu_emit: the one-token GLU launch p with the q8s planes of its output y (the next
  // matvec's input) in the same launch (cuda::launch_mmvs_glu_emit); false (nothing launched) where
  // it does not apply.
  bool launch_glu_emit(const cuda::MmvsParams& p, View y);
  // Before a read of x that is not a launch taking the deferred planes: a live deferred norm of x is
  // computed in full (out and its planes written); one given up is an internal error.
  void settle_deferred_norm(View x);
  // The FFN norm fused with the router (kernels.moe_router_fused): x_stream normed by norm_w into the
  // x of moe_ffn_device.
  struct MoeFusedNorm {
    View x_stream;
    const Weight* norm_w = nullptr;
    float eps = 0.0f;
  };
  // moe_ffn's shape checks (errors naming the op).
  void check_moe_ffn(View x, const MoeWeights& w, const MoeParams& p, View out) const;
  bool moe_router_fused_applies(View x, const Weight* norm_w, View h, const MoeWeights& w, const MoeParams& p) const;
  // residual (kernels.moe_combine_residual): the combine adds its rows to this view (out then unused).
  void moe_ffn_device(View x, const MoeWeights& w, const MoeParams& p, View out, const MoeFusedNorm* fused = nullptr,
                      View residual = {});
  // q6k: the consumer is a launch of Q6_K rows only, which reads the Q6_K variant of the
  // interleaved order when the planes are quantized here (planes that a producer emitted keep
  // their order; planes in the Q6_K variant are not reused for another consumer).
  Q8s q8s_input(View x, bool q6k = false);
  // Where the q8s planes of an m x k input live in the current planes slot (kQ8s or kQ8s2, grown
  // as needed); q6k: in the Q6_K variant where the order is interleaved. other: in the other slot
  // (a launch that reads the current planes while it writes the next ones: launch_emit_norm).
  Q8s q8s_planes(int64_t m, int64_t k, bool q6k = false, bool other = false);
  // The kQ8s slot now holds the planes of src (q6k: in the Q6_K variant of the order).
  void hold_q8s(View src, bool q6k = false) {
    q8s_src_ = src;
    q8s_src_q6k_ = q6k;
  }
  // A launch wrote src's planes into the other slot (q8s_planes(..., other = true)) while it read the
  // current one: the other slot becomes the current one, holding them (nothing else is held).
  Slot other_q8s_slot() const { return q8s_slot_ == kQ8s ? kQ8s2 : kQ8s; }
  void hold_emitted_q8s(View src) {
    q8s_slot_ = other_q8s_slot();
    forget_q8s();
    hold_q8s(src);
  }
  // Whether an op producing `out` should also emit its q8s planes for the next mmvs matvec.
  bool emit_q8s_for(View out) const;
  // kernels.attn_head_split_keys / attn_head_pair_keys: the query heads per attention block of a
  // one-token decode at pos0 (AttnParams::RopeFold::head_split: 1 while its row has at most
  // attn_head_split_keys keys, else 2 up to attn_head_pair_keys, else 0: the group's block); part
  // of the step graph's key. A layer whose group exceeds kernels.attn_head_pair_max_group takes
  // the group's block where this says 2 (qk_norm_rope_kv_attention).
  // kernels.attn_one_split_no_combine: a decode step at pos0 of n_tokens rows whose rows all have
  // at most cuda::kAttnMinSplitKeys keys (or, given the launch's n_splits, a cache of one split)
  // takes no combine kernel; the position part (n_splits 0) is in the step graph's key.
  bool attn_one_split_at(int64_t pos0, int n_tokens, int n_splits = 0) const {
    const auto& k = cfg_.kernels;
    return k.attn_one_split_no_combine && k.attn_one_split_direct &&
           (pos0 + n_tokens <= cuda::kAttnMinSplitKeys || n_splits == 1);
  }
  // kernels.attn_grid_round: the step-graph key of the decode attention's trimmed grid for a step
  // at pos0 of n_tokens rows (cuda::attn_decode_grid_key of its longest row; 0: the full grid).
  int64_t attn_grid_key_at(int64_t pos0, int n_tokens) const {
    return cuda::attn_decode_grid_key(pos0 + n_tokens, cfg_.kernels.attn_grid_round);
  }
  int attn_head_split_at(int64_t pos0, int n_tokens) const {
    if (n_tokens != 1) return 0;
    const auto& k = cfg_.kernels;
    if (k.attn_head_split_keys > 0 && pos0 + 1 <= k.attn_head_split_keys) return 1;
    if (k.attn_head_pair_keys > 0 && pos0 + 1 <= k.attn_head_pair_keys) return 2;
    return 0;
  }
  // Every op but matmul may write anywhere: the q8s planes (and the GEMM's rounded input in the
  // kX16 slot) no longer match their source.
  void forget_q8s() {
    q8s_src_.data = nullptr;
    x16_src_.data = nullptr;
    defer_.live = false;  // the deferred norm's output is given up (Backend::rms_norm_into_matvecs)
  }
  // Whether two views' spans of memory (rows x ld floats from data) intersect; a null view none.
  static bool overlaps(const View& a, const View& b) {
    return a.data && b.data && a.data < b.data + b.rows * b.ld && b.data < a.data + a.rows * a.ld;
  }
  // A matmul output that overlaps the planes' (or the rounded input's) source invalidates them.
  void forget_q8s_if_overlaps(View y) {
    if (overlaps(y, q8s_src_)) q8s_src_.data = nullptr;
    if (overlaps(y, x16_src_)) x16_src_.data = nullptr;
    if (overlaps(y, defer_.x)) defer_.live = false;
    if (overlaps(y, defer_.out)) defer_ = {};  // written: a plain buffer again
  }
  // x rounded to the prefill GEMM's operand type (f16, bf16 if `bf16`) in the kX16 slot: converted
  // here, or reused when the last converted input is the same view and nothing has written memory
  // since (kernels.gemm_x_reuse).
  const void* gemm_x_input(View x, bool bf16);
  // Whether an op producing `rows` rows should also write its output's f16 rounding into the
  // kX16 slot for the next GEMM (kernels.gemm_x_reuse, prefill-sized batches), and the record
  // that the slot now holds `out` so rounded.
  bool prefill_f16_copy(int64_t rows) const {
    return cfg_.kernels.gemm_x_reuse && rows >= cfg_.kernels.gemm_min_batch;
  }
  void set_x16_src(View out) {
    x16_src_ = out;
    x16_bf16_ = false;
  }
  // One mmvs launch: w (and its GLU partner w2), or w plus up to two same-type matrices `extra`.
  // attention(); rf (or null): the q/k norm + RoPE + K/V append folded into the decode kernel
  // (qk_norm_rope_kv_attention, which has appended the cache bookkeeping already).
  void attention_impl(View q, const KvStore& kv, int layer, int pos0, const AttnParams& p, View out,
                      const cuda::AttnParams::RopeFold* rf);
  // attention_impl's decode over a kv.planes cache (p from attn_params).
  void attention_planes(cuda::AttnParams& p, const CudaKv& c, int pos0, View out);
  // The split-K decode's settings shared by its forms (p from attn_params, p.min_split_keys set):
  // split count, workspace, the q8s planes of out for the next matvec (returns whether emitted),
  // the combine's form, the one-split rule, the grid trim.
  bool decode_setup(cuda::AttnParams& p, const CudaKv& c, int pos0, View out);
  // The fast attention kernels' parameters of a layer (cache, q, out, heads, scale, window);
  // the path-specific fields are the caller's.
  cuda::AttnParams attn_params(View q, const CudaKv& c, int layer, const int32_t* dpos, const AttnParams& ap,
                               View out) const;
  // qk_norm_rope's fused form: whether it applies, and its launch parameters (no append).
  bool qk_norm_rope_fusable(View q, View k, int n_head_kv, const RopeParams& rp) const;
  cuda::QkNormRopeParams qk_norm_rope_params(View q, View k, int n_head, int n_head_kv, const Weight* q_norm,
                                             const Weight* k_norm, float eps, int pos0, const RopeParams& rp);
  // After an append of rows at pos0 (kv_write or the fused form): the variant note, n_written.
  void kv_appended(CudaKv& c, int pos0, int rows, const char* how);
  // The append parameters of kv_write (its checks included) for K and V of layer.
  void kv_append_params(KvStore& kvs, int layer, int pos0, View k, View v, cuda::KvAppendParams (&kv)[2]);
  // residual: y += the product (MmvsParams::residual = y; plain launches only).
  // kernels.mmvf_v2: whether the float-weight matvec of w on x runs mmvf2 (kernels/matvec/mmvf.h), and
  // its launch (w2 / glu: the fused GLU pair; residual: y += the product).
  bool mmvf2_applies(const Weight& w, View x);
  void launch_mmvf2(const Weight& w, const Weight* w2, int glu, View x, View y, bool residual = false);
  // next_norm (residual launches only): the norm the caller takes of y next (launch_emit_norm).
  // True where the launch also wrote the q8s planes of y (launch_emit_norm, launch_glu_emit): they
  // are held.
  bool launch_split_matvec(const Weight& w, const Weight* w2, int glu, View x, View y,
                           std::span<const MatmulOut> extra = {}, bool residual = false,
                           const NormHint* next_norm = nullptr);

  // The weight types with mmvs kernels, in mmvs_type_index order (kMmvsTypeList).
  static constexpr int kMmvsTypes = 6;
  // The mmvs m = 1 instance cap per weight type (Q4_K, Q6_K, Q8_0, Q4_0, Q5_K, IQ4_XS) and GLU kind (none, SiLU,
  // GELU-tanh): kernels.mmvs_min_blocks[_glu], or 0 where that instance spills and
  // kernels.mmvs_cap_no_spill is on. Set once at construction (a host query per instance).
  int mmvs_cap_[kMmvsTypes][3] = {};
  int mmvs_cap(QType t, int glu) const;
  // kernels.mmvs_split_min_k in 64-weight tasks (MmvsParams::split_min_tasks), and its note in the
  // launch variants ("" at the default).
  int split_min_tasks() const { return (int)((cfg_.kernels.mmvs_split_min_k + 63) / 64); }
  std::string split_min_note() const {
    return split_min_tasks() == 65 ? std::string() : "_splitmin" + std::to_string(split_min_tasks());
  }
  // The index of those per-type tables (Q4_K, Q6_K, Q8_0, Q4_0, Q5_K, IQ4_XS), -1 for another type.
  static int mmvs_type_index(QType t);
  // The same for the mixed-type pair instances (Q4_K then Q6_K, Q5_K then Q6_K, IQ4_XS then Q5_K;
  // kernels.mmvs_mixed_types), by pair.
  static constexpr int kMmvsPairs = 3;
  int mmvs_pair_cap_[kMmvsPairs] = {};
  int mmvs_pair_cap(QType t, QType t2) const;
  // The same for the plain Q6_K instance reading the Q6_K order (kernels.mmvs_act_il_q6k).
  int mmvs_q6k_cap_ = 0;
  // The row-pair launches (kernels.mmvs_row_pairs) per weight type (as mmvs_cap_), and their cap
  // (kernels.mmvs_min_blocks_rp, 0 where that instance spills).
  bool mmvs_rp_[kMmvsTypes] = {};
  bool mmvs_rp_one_[kMmvsTypes] = {};  // kernels.mmvs_row_pairs_one_task
  int mmvs_rp_cap_[kMmvsTypes][2] = {};  // [type][one task]
  int mmvs_rp_head_cap_[kMmvsTypes][2] = {};  // the same for matrices over kernels.mmvs_cap_max_rows rows (kernels.mmvs_min_blocks_rp_head)
  // The SiLU GLU row pairs (kernels.mmvs_glu_pairs) per weight type, and their cap (the GLU's rule:
  // kernels.mmvs_min_blocks_glu, else kernels.mmvs_cap_fallback, else 0, of the instances at 0, 5, 6).
  bool mmvs_glu_pairs_[kMmvsTypes] = {};
  bool mmvs_glu_emit_[kMmvsTypes] = {};  // kernels.mmvs_glu_emit
  bool mmvs_glu_emit_w8_[kMmvsTypes] = {};  // kernels.mmvs_glu_emit_w8
  bool mmvs_emit_short_w8_[kMmvsTypes] = {};  // kernels.mmvs_emit_norm_short_w8
  int mmvs_glu_pair_cap_[kMmvsTypes] = {};
  // The one-task GLU launches (kernels.mmvs_glu_one_task) per weight type, and their cap per GLU kind
  // (SiLU, GELU-tanh) by the GLU's rule over the instances at 0, 5 and 6.
  bool mmvs_glu_one_[kMmvsTypes] = {};
  int mmvs_glu_one_cap_[kMmvsTypes][2] = {};

  Config cfg_;
  std::shared_ptr<Shared> sh_;
  uint64_t kv_serial_ = 0;
  cuda::DeviceBuffer ws_[kNumSlots];
  std::vector<cuda::DeviceBuffer> retired_;
  std::map<std::string, std::set<std::string>> variants_;
  // (weight data, type, rows, cols, m): a freed weight's address may come back with another type.
  std::map<std::tuple<const void*, int, int64_t, int64_t, int64_t>, cuda::MatmulVariant> matmul_variants_;

  // Step state. d_step_ = [pos0, ids...] (device); h_step_ = pinned mirror for the captured copy.
  cuda::DeviceBuffer d_step_;
  int d_step_cap_ = 0;  // ids capacity of d_step_
  int32_t* h_step_ = nullptr;
  cudaEvent_t step_done_ = nullptr;
  cudaEvent_t step_t0_ = nullptr, step_t1_ = nullptr;  // timed, around a replay (last_step_device_us)
  bool step_timed_ = false;
  bool in_step_ = false;
  bool capturing_ = false;
  cuda::StepKey cur_key_{};
  CudaKv* cur_kv_ = nullptr;
  int step_pos0_ = 0;
  std::vector<int32_t> step_ids_;
  struct GraphEntry {
    cudaGraphExec_t exec = nullptr;
    int64_t id_limit = 0;  // rows of the embedding table the graph gathers from
  };
  cuda::StepCache<GraphEntry> graphs_{8};
  int64_t capture_id_limit_ = 0;
  cuda::SeenKeys seen_{16};
  uint64_t graphs_weight_gen_ = 0;
  bool graph_ran_ = false;
  int adhoc_pos_ = -1;  // value last staged in the adhoc pos slot (-1: none)
  cuda::DeviceBuffer d_adhoc_pos_;
  cuda::DeviceBuffer d_argmax_;  // argmax_rows' ids (grown on demand)
  cuda::DeviceBuffer moe_ticket_;  // launch_moe_router_fused's counter (0 between launches)
  View q8s_src_{};  // the view the kQ8s slot holds (data == nullptr: none)
  bool q8s_src_q6k_ = false;  // ... in the Q6_K variant of the interleaved order
  View x16_src_{};  // the view the kX16 slot holds rounded (data == nullptr: none)
  bool x16_bf16_ = false;
  DeferredNorm defer_;
  Slot q8s_slot_ = kQ8s;  // the slot holding the current q8s planes (kQ8s or kQ8s2)
  NormHint norm_hint_;   // Backend::expect_norm_after_residual (out.data == nullptr: none)
  bool norm_emitted_ = false;  // the hinted norm was made by the residual launch (launch_emit_norm)
};

}  // namespace memra::backend::cuda_impl
