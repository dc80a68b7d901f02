// The CUDA backend: memory, weights, the device KV cache, variant records and the decode-step
// graph (begin_step / end_step). The ops are in cuda_ops.cpp and cuda_norm_ops.cpp.
#include "backend/cuda/cuda_backend.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_internal.h"
#include "core/error.h"
#include "common/launch.cuh"
#include "attn/attn_i8_tile.h"
#include "kv/kv_kernels.h"
#include "quant/types.h"
#include "matvec/matvec.h"
#include "matvec/mmvs.h"
#include "matvec/split_layout.h"
#include "quant/quant_kernels.h"
#include "sample/sample_kernels.h"

namespace memra::backend {

std::unique_ptr<Backend> make_cuda_backend(const Config& cfg) {
  return std::make_unique<cuda_impl::CudaBackend>(cfg);
}

kv::KvOptions cuda_kv_options(const kv::KvShape& shape, const kv::KvOptions& o) {
  kv::KvOptions r = o;
  r.planes_auto = false;
  if (!o.planes_auto) return r;
  MEMRA_CHECK(!o.planes, "internal: KvOptions with both planes and planes_auto");
  bool fit = o.type_k == QType::Q8_0 && (o.type_v == QType::Q8_0 || o.type_v_auto);
  bool any = false;
  for (const auto& ls : shape.layers) {
    if (ls.recurrent()) continue;
    any = true;
    const int64_t rb = cuda::kv_planes_row_bytes(ls.k_row());
    fit = fit && ls.head_dim_k == ls.head_dim_v && cuda::attn_planes_group(ls.n_head, ls.n_head_kv, ls.head_dim_k) > 0 &&
          !ls.sinks && ls.idx_dim == 0 && (uint64_t)rb * (uint64_t)o.n_ctx < (uint64_t{1} << 32);
  }
  if (!fit || !any) return r;
  r.planes = true;
  r.type_v = QType::Q8_0;
  return r;
}

namespace cuda_impl {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Keeps a pool block (and the pool's context) alive for as long as a Buffer/Weight shares it.
struct BufferHolder {
  std::shared_ptr<Shared> sh;
  cuda::DeviceBuffer buf;
};
struct WeightHolder {
  std::shared_ptr<Shared> sh;
  cuda::DeviceBuffer buf;
  cuda::DeviceBuffer mirror;  // split-plane decode copy (kernels/matvec/split_layout.h), or empty
  cuda::DeviceBuffer f16;     // prefill GEMM copy (kernels.prefill_f16_weights), or empty
  uint64_t bytes = 0;
  ~WeightHolder() {
    sh->weight_gen.fetch_add(1);
    sh->weight_bytes.fetch_sub(bytes);
  }
};

int64_t even_row_bytes(QType t, int64_t n) {
  const auto rb = qtype_row_bytes(t, (uint64_t)n);
  MEMRA_CHECK(rb.has_value(), "KV cache: row of {} elements is not a multiple of the {} block size {}", n,
              qtype_name(t), qtype_traits(t).block_elems);
  return (int64_t)((*rb + 1) & ~uint64_t{1});
}

}  // namespace

// ---------------------------------------------------------------- KV store

CudaKv::CudaKv(std::shared_ptr<Shared> s, const kv::KvShape& shp, const kv::KvOptions& o, uint64_t ser)
    : sh(std::move(s)), shape_(shp), opts_(o), serial(ser) {
  MEMRA_CHECK(o.n_ctx > 0, "KV cache: n_ctx must be positive, got {}", o.n_ctx);
  for (QType t : {o.type_k, o.type_v})
    MEMRA_CHECK(cuda::kv_type_supported(t), "KV cache type {} has no CUDA kernels (use f32, f16, q8_0, q5_1, "
                "q5_0, q4_0 or q4_1)", qtype_name(t));
  MEMRA_CHECK(!o.planes || (o.type_k == QType::Q8_0 && o.type_v == QType::Q8_0),
              "kv.planes needs q8_0 K and V (kv.type_k = q8_0, kv.type_v = q8_0 or auto), got K {} / V {}",
              qtype_name(o.type_k), qtype_name(o.type_v));
  for (const auto& ls : shp.layers)
    MEMRA_CHECK(ls.idx_dim == 0, "sparse-attention indexer keys (MiniMax-M3) have no CUDA path yet: run this "
                "model with run.backend = cpu");
  uint64_t total = 0;
  std::vector<std::pair<int64_t, int64_t>> rbs;
  for (const auto& ls : shp.layers) {
    MEMRA_CHECK(ls.state_floats >= 0 && (!ls.recurrent() || ls.n_head_kv == 0),
                "KV cache: a recurrent layer ({} state floats) with {} kv heads", ls.state_floats, ls.n_head_kv);
    int64_t kb = even_row_bytes(o.type_k, ls.k_row()), vb = even_row_bytes(o.type_v, ls.v_row());
    if (o.planes && !ls.recurrent()) {  // split-plane rows: 16-byte aligned quants (cuda::kv_planes_row_bytes)
      kb = cuda::kv_planes_row_bytes(ls.k_row());
      vb = cuda::kv_planes_row_bytes(ls.v_row());
    }
    rbs.emplace_back(kb, vb);
    total += (uint64_t)(kb + vb) * (uint64_t)o.n_ctx + (uint64_t)ls.state_floats * sizeof(float);
  }
  sh->ctx->require_free(total, fmt::format("the KV cache ({} layers, n_ctx={}, K {} / V {})",
                                           shp.layers.size(), o.n_ctx, qtype_name(o.type_k),
                                           qtype_name(o.type_v)));
  auto& pool = sh->ctx->pool();
  for (size_t l = 0; l < rbs.size(); ++l) {
    const auto [kb, vb] = rbs[l];
    Layer L;
    L.k_row_bytes = kb;
    L.v_row_bytes = vb;
    if (o.planes && !shp.layers[l].recurrent()) {
      // Split-plane rows: the quants (one byte per element), then the scales from this byte on.
      // The int8 tile decode form's offsets are 32-bit.
      MEMRA_CHECK((uint64_t)std::max(kb, vb) * (uint64_t)o.n_ctx < (uint64_t{1} << 32),
                  "kv.planes: n_ctx={} gives a layer's cache {} bytes, over the 4 GiB its decode kernel addresses",
                  o.n_ctx, (uint64_t)std::max(kb, vb) * (uint64_t)o.n_ctx);
      L.k_scale_plane = (int)shp.layers[l].k_row();
      L.v_scale_plane = (int)shp.layers[l].v_row();
    }
    if (shp.layers[l].recurrent()) {
      // A recurrent layer (kv::KvLayerShape::state_floats): its state, zero at the start.
      L.state = cuda::DeviceBuffer(pool, (size_t)shp.layers[l].state_floats * sizeof(float), "recurrent state");
      cuda::fill_bytes(L.state.get(), 0, L.state.bytes(), sh->ctx->compute_stream());
    } else {
      L.k = cuda::DeviceBuffer(pool, (size_t)kb * (size_t)o.n_ctx, "kv cache");
      L.v = cuda::DeviceBuffer(pool, (size_t)vb * (size_t)o.n_ctx, "kv cache");
      // Zeroed so a kernel bug reading unwritten rows sees zeros, not stale data.
      cuda::fill_bytes(L.k.get(), 0, L.k.bytes(), sh->ctx->compute_stream());
      cuda::fill_bytes(L.v.get(), 0, L.v.bytes(), sh->ctx->compute_stream());
    }
    layers.push_back(std::move(L));
  }
  state_pos.assign(layers.size(), 0);
}

void CudaKv::truncate(int n) {
  MEMRA_CHECK(n >= 0, "KV cache: truncate to negative length {}", n);
  if (n < ckpt_n) ckpt_n = -1;  // a checkpoint past the new end would describe positions no longer held
  if (n >= n_written) return;
  bool recurrent = false;
  for (const auto& L : layers) recurrent |= L.state.get() != nullptr;
  if (recurrent) {
    MEMRA_CHECK(n == 0, "KV cache: cannot roll a recurrent layer's state back from position {} to {} (only a "
                "reset to 0 is possible)", n_written, n);
    for (auto& L : layers)
      if (L.state.get()) cuda::fill_bytes(L.state.get(), 0, L.state.bytes(), sh->ctx->compute_stream());
    std::fill(state_pos.begin(), state_pos.end(), 0);
  }
  n_written = n;
}

bool CudaKv::has_recurrent_state() const {
  for (const auto& L : layers)
    if (L.state.get()) return true;
  return false;
}

// The copies run on the compute stream, ordered with the kernels that read and advance the states.
void CudaKv::save_checkpoint() {
  for (auto& L : layers) {
    if (!L.state.get()) continue;
    if (!L.ckpt.get()) L.ckpt = cuda::DeviceBuffer(sh->ctx->pool(), L.state.bytes(), "recurrent state checkpoint");
    cuda::copy_d2d(L.ckpt.get(), L.state.get(), L.state.bytes(), sh->ctx->compute_stream());
  }
  ckpt_state_pos = state_pos;
  ckpt_n = n_written;
}

void CudaKv::rollback_to_checkpoint() {
  MEMRA_CHECK(ckpt_n >= 0 && ckpt_n <= n_written, "KV cache: no checkpoint at or before position {} to roll back to",
              n_written);
  for (auto& L : layers)
    if (L.state.get()) cuda::copy_d2d(L.state.get(), L.ckpt.get(), L.state.bytes(), sh->ctx->compute_stream());
  state_pos = ckpt_state_pos;
  n_written = ckpt_n;
}

// ---------------------------------------------------------------- backend

namespace {
constexpr QType kMmvsTypeList[] = {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS};
// The mixed-type q/k/v pairs with mmvs instances (kernels/matvec/mmvs.cu by_pair).
constexpr std::pair<QType, QType> kMmvsPairList[] = {
    {QType::Q4_K, QType::Q6_K}, {QType::Q5_K, QType::Q6_K}, {QType::IQ4_XS, QType::Q5_K}};
}  // namespace

int CudaBackend::mmvs_pair_cap(QType t, QType t2) const {
  static_assert(std::size(kMmvsPairList) == kMmvsPairs);
  for (int i = 0; i < kMmvsPairs; ++i)
    if (kMmvsPairList[i] == std::pair<QType, QType>{t, t2}) return mmvs_pair_cap_[i];
  return 0;
}

int CudaBackend::mmvs_type_index(QType t) {
  static_assert(std::size(kMmvsTypeList) == kMmvsTypes);
  for (int i = 0; i < kMmvsTypes; ++i)
    if (kMmvsTypeList[i] == t) return i;
  return -1;
}

int CudaBackend::mmvs_cap(QType t, int glu) const {
  const int ti = mmvs_type_index(t);
  return ti < 0 || glu < 0 || glu > 2 ? 0 : mmvs_cap_[ti][glu];
}

CudaBackend::CudaBackend(const Config& cfg) : cfg_(cfg), sh_(std::make_shared<Shared>()) {
  for (const auto& [key, v] : {std::pair<const char*, int>{"kernels.mmvs_min_blocks", cfg_.kernels.mmvs_min_blocks},
                               {"kernels.mmvs_min_blocks_glu", cfg_.kernels.mmvs_min_blocks_glu},
                               {"kernels.mmvs_cap_fallback", cfg_.kernels.mmvs_cap_fallback}})
    if (!cuda::mmvs_min_blocks_valid(v)) throw Error(fmt::format("{} = {}: must be 0, 5, 6, 8 or 12", key, v));
  if (cfg_.kernels.mmvf_rows_per_warp != 1 && cfg_.kernels.mmvf_rows_per_warp != 2 && cfg_.kernels.mmvf_rows_per_warp != 4)
    throw Error(fmt::format("kernels.mmvf_rows_per_warp = {}: must be 1, 2 or 4", cfg_.kernels.mmvf_rows_per_warp));
  if (cfg_.kernels.attn_planes_copy != "async" && cfg_.kernels.attn_planes_stages != 1)
    throw Error(fmt::format("kernels.attn_planes_copy = \"{}\" needs kernels.attn_planes_stages = 1 (it is {})",
                            cfg_.kernels.attn_planes_copy, cfg_.kernels.attn_planes_stages));
  if (cfg_.kernels.mmvs_split_max_warps != 2 && cfg_.kernels.mmvs_split_max_warps != 4)
    throw Error(fmt::format("kernels.mmvs_split_max_warps = {}: must be 2 or 4", cfg_.kernels.mmvs_split_max_warps));
  sh_->ctx = cuda::Context::create();
  const auto& cap_types = kMmvsTypeList;
  for (int ti = 0; ti < kMmvsTypes; ++ti)
    for (int glu = 0; glu < 3; ++glu) {
      const int want = glu ? cfg_.kernels.mmvs_min_blocks_glu : cfg_.kernels.mmvs_min_blocks;
      bool spills = false;
      if (want && cfg_.kernels.mmvs_cap_no_spill)  // of the instance the one-token launches take
        MEMRA_CUDA_CHECK(cuda::mmvs_cap_spills(cap_types[ti], glu, want, &spills, cfg_.kernels.mmvs_act_il));
      int take = spills ? 0 : want;
      // kernels.mmvs_cap_fallback: the next cap tried where the named one spills.
      const int fb = cfg_.kernels.mmvs_cap_fallback;
      if (spills && fb && fb != want) {
        bool fb_spills = true;
        MEMRA_CUDA_CHECK(cuda::mmvs_cap_spills(cap_types[ti], glu, fb, &fb_spills, cfg_.kernels.mmvs_act_il));
        if (!fb_spills) take = fb;
      }
      mmvs_cap_[ti][glu] = take;
    }
  for (int pi = 0; pi < kMmvsPairs; ++pi) {
    // The pair instances exist uncapped and at 6 CTAs per SM; other caps take them uncapped.
    const int want = cfg_.kernels.mmvs_min_blocks == 6 ? 6 : 0;
    bool spills = false;
    if (want && cfg_.kernels.mmvs_cap_no_spill)
      MEMRA_CUDA_CHECK(cuda::mmvs_pair_cap_spills(kMmvsPairList[pi].first, kMmvsPairList[pi].second, want, &spills,
                                                  cfg_.kernels.mmvs_act_il));
    mmvs_pair_cap_[pi] = spills ? 0 : want;
  }
  {
    // The plain Q6_K instance reading the Q6_K order (kernels.mmvs_act_il_q6k): the same rule.
    const int want = cfg_.kernels.mmvs_min_blocks;
    bool spills = false;
    if (want && cfg_.kernels.mmvs_cap_no_spill && cfg_.kernels.mmvs_act_il && cfg_.kernels.mmvs_act_il_q6k)
      MEMRA_CUDA_CHECK(cuda::mmvs_cap_spills(QType::Q6_K, 0, want, &spills, true, true));
    mmvs_q6k_cap_ = spills ? 0 : want;
  }
  {
    // The row-pair instances (kernels.mmvs_row_pairs) exist uncapped and at 5 and 6 CTAs per SM.
    const int want = cfg_.kernels.mmvs_min_blocks_rp, want_head = cfg_.kernels.mmvs_min_blocks_rp_head;
    for (const auto& [key, v] : {std::pair<const char*, int>{"kernels.mmvs_min_blocks_rp", want}, {"kernels.mmvs_min_blocks_rp_head", want_head}})
      if (v != 0 && v != 5 && v != 6) throw Error(fmt::format("{} = {}: must be 0, 5 or 6", key, v));
    const auto type_index = [](const char* key, const std::string& name) {
      const auto t = qtype_from_name(name);
      const int ti = t ? mmvs_type_index(*t) : -1;
      if (ti < 0) throw Error(fmt::format("{}: unknown weight type '{}' (q4_k, q6_k, q8_0, q4_0, q5_k, iq4_xs)", key, name));
      return ti;
    };
    for (const std::string& name : cfg_.kernels.mmvs_row_pairs) mmvs_rp_[type_index("kernels.mmvs_row_pairs", name)] = true;
    // A one-task type that is not paired (kernels.mmvs_row_pairs = [] turns every pair off) has no effect.
    for (const std::string& name : cfg_.kernels.mmvs_row_pairs_one_task)
      mmvs_rp_one_[type_index("kernels.mmvs_row_pairs_one_task", name)] = true;
    for (const std::string& name : cfg_.kernels.mmvs_glu_pairs) mmvs_glu_pairs_[type_index("kernels.mmvs_glu_pairs", name)] = true;
    for (const std::string& name : cfg_.kernels.mmvs_glu_emit) mmvs_glu_emit_[type_index("kernels.mmvs_glu_emit", name)] = true;
    for (const std::string& name : cfg_.kernels.mmvs_glu_emit_w8)
      mmvs_glu_emit_w8_[type_index("kernels.mmvs_glu_emit_w8", name)] = true;
    for (const std::string& name : cfg_.kernels.mmvs_emit_norm_short_w8)
      mmvs_emit_short_w8_[type_index("kernels.mmvs_emit_norm_short_w8", name)] = true;
    for (const std::string& name : cfg_.kernels.mmvs_glu_one_task)
      mmvs_glu_one_[type_index("kernels.mmvs_glu_one_task", name)] = true;
    for (int ti = 0; ti < kMmvsTypes; ++ti)
      for (int g = 1; g <= 2 && mmvs_glu_one_[ti]; ++g) {
        int take = 0;
        for (const int c : {cfg_.kernels.mmvs_min_blocks_glu, cfg_.kernels.mmvs_cap_fallback}) {
          if (c != 5 && c != 6) continue;
          bool spills = false;
          if (cfg_.kernels.mmvs_cap_no_spill) MEMRA_CUDA_CHECK(cuda::mmvs_glu_one_task_cap_spills(cap_types[ti], g, c, &spills));
          if (!spills) {
            take = c;
            break;
          }
        }
        mmvs_glu_one_cap_[ti][g - 1] = take;
      }
    for (int ti = 0; ti < kMmvsTypes; ++ti) {
      if (!mmvs_glu_pairs_[ti]) continue;
      int take = 0;
      for (const int c : {cfg_.kernels.mmvs_min_blocks_glu, cfg_.kernels.mmvs_cap_fallback}) {
        if (c != 5 && c != 6) continue;
        bool spills = false;
        if (cfg_.kernels.mmvs_cap_no_spill) MEMRA_CUDA_CHECK(cuda::mmvs_row_pairs_cap_spills(cap_types[ti], c, &spills, true, true));
        if (!spills) {
          take = c;
          break;
        }
      }
      mmvs_glu_pair_cap_[ti] = take;
    }
    for (int ti = 0; ti < kMmvsTypes; ++ti)
      for (int one = 0; one < 2; ++one) {
        const auto take = [&](int c) {
          bool spills = false;
          if (mmvs_rp_[ti] && c && cfg_.kernels.mmvs_cap_no_spill)
            MEMRA_CUDA_CHECK(cuda::mmvs_row_pairs_cap_spills(cap_types[ti], c, &spills, one != 0));
          return spills ? 0 : c;
        };
        mmvs_rp_cap_[ti][one] = take(want);
        mmvs_rp_head_cap_[ti][one] = take(want_head);
      }
  }
  const auto& info = ctx().info();
  // Fails here (not at the first launch) on a device the kernels are not built for.
  // (The compute-capability rule only: a forced kernels.matvec name is checked per weight type.)
  cuda::set_pdl(cfg_.kernels.pdl);
  cuda::set_smem_carveout(cfg_.kernels.smem_carveout);
  KernelsSection probe = cfg_.kernels;
  probe.matvec = "auto";
  (void)cuda::choose_matmul_variant(info.cc(), info.sm_count, {1, 32, 32, QType::F16}, probe);
  d_step_cap_ = 1;
  d_step_ = cuda::DeviceBuffer(ctx().pool(), sizeof(int32_t) * 2, "step ids");
  d_adhoc_pos_ = cuda::DeviceBuffer(ctx().pool(), sizeof(int32_t), "step pos");
  MEMRA_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&h_step_), sizeof(int32_t) * 2));
  MEMRA_CUDA_CHECK(cudaEventCreateWithFlags(&step_done_, cudaEventDisableTiming));
  MEMRA_CUDA_CHECK(cudaEventCreate(&step_t0_));
  MEMRA_CUDA_CHECK(cudaEventCreate(&step_t1_));
}

double CudaBackend::last_step_device_us() {
  if (!step_timed_) return -1.0;
  MEMRA_CUDA_CHECK(cudaEventSynchronize(step_t1_));
  float ms = 0.0f;
  MEMRA_CUDA_CHECK(cudaEventElapsedTime(&ms, step_t0_, step_t1_));
  return (double)ms * 1e3;
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream());
  for (auto& g : graphs_.clear()) cudaGraphExecDestroy(g.exec);
  if (step_done_) cudaEventDestroy(step_done_);
  if (step_t0_) cudaEventDestroy(step_t0_);
  if (step_t1_) cudaEventDestroy(step_t1_);
  if (h_step_) cudaFreeHost(h_step_);
}

std::map<std::string, std::string> CudaBackend::variants() const {
  std::map<std::string, std::string> out;
  for (const auto& [op, names] : variants_) {
    std::string joined;
    for (const auto& n : names) joined += (joined.empty() ? "" : ",") + n;
    out[op] = joined;
  }
  return out;
}

void CudaBackend::note(const std::string& op, const std::string& variant) {
  auto& s = variants_[op];
  if (!s.count(variant)) s.insert(variant);
}

void* CudaBackend::workspace(Slot slot, size_t bytes) {
  static const char* names[kNumSlots] = {"q8_1 activations", "GEMM scratch",      "attention workspace",
                                         "ids",              "q8s activations",   "GEMM input (f16)",
                                         "norm partial sums", "DeltaNet conv output", "MoE scratch",
                                         "q8s activations (second)"};
  auto& b = ws_[slot];
  if (b.bytes() < bytes) {
    MEMRA_CHECK(!capturing_, "internal: {} grows during graph capture", names[slot]);
    if (b.get()) retired_.push_back(std::move(b));
    b = cuda::DeviceBuffer(ctx().pool(), bytes + bytes / 4 + 256, names[slot]);
  }
  return b.get();
}

void CudaBackend::drop_graphs() {
  for (auto& g : graphs_.clear()) cudaGraphExecDestroy(g.exec);
  seen_.clear();
  if (!capturing_) retired_.clear();
}

// ---------------------------------------------------------------- memory

Buffer CudaBackend::alloc(int64_t n_floats) {
  MEMRA_CHECK(n_floats >= 0, "alloc: negative size {}", n_floats);
  const size_t bytes = (size_t)std::max<int64_t>(n_floats, 1) * sizeof(float);
  auto h = std::make_shared<BufferHolder>();
  h->sh = sh_;
  h->buf = cuda::DeviceBuffer(ctx().pool(), bytes, "activations");
  if (!capturing_) cuda::fill_bytes(h->buf.get(), 0, bytes, stream());
  Buffer b;
  b.mem = std::shared_ptr<float>(h, h->buf.as<float>());
  b.size = n_floats;
  return b;
}

Weight CudaBackend::upload_weight(const std::string& name, QType type, std::span<const int64_t> ne,
                                  const void* host, std::shared_ptr<const void> keep_alive) {
  MEMRA_CHECK(!ne.empty() && ne.size() <= 4, "tensor '{}': {} dims not supported", name, ne.size());
  MEMRA_CHECK(cuda::cuda_weight_type_supported(type),
              "tensor '{}' has type {}, which has no CUDA kernels yet (supported: F32 F16 BF16 Q4_0 Q4_1 "
              "Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS)", name, qtype_name(type));
  Weight w;
  w.name = name;
  w.type = type;
  w.n_dims = (int)ne.size();
  for (size_t i = 0; i < ne.size(); ++i) w.ne[i] = ne[i];
  const auto rb = qtype_row_bytes(type, (uint64_t)w.ne[0]);
  MEMRA_CHECK(rb.has_value(), "tensor '{}': row length {} is not a multiple of the {} block size {}", name,
              w.ne[0], qtype_name(type), qtype_traits(type).block_elems);
  w.row_bytes = *rb;
  const size_t bytes = (size_t)w.row_bytes * (size_t)w.n_rows();
  const uint64_t so_far = sh_->weight_bytes.load();
  ctx().require_free(bytes, fmt::format("model weights (tensor '{}', {:.1f} MiB, after {:.1f} MiB already "
                                        "uploaded)", name, bytes / kMiB, so_far / kMiB));
  auto h = std::make_shared<WeightHolder>();
  h->sh = sh_;
  h->buf = cuda::DeviceBuffer(ctx().pool(), std::max<size_t>(bytes, 1), "weights");
  h->bytes = bytes;
  sh_->weight_bytes.fetch_add(bytes);
  if (bytes) {
    cuda::copy_h2d(h->buf.get(), host, bytes, ctx().copy_stream());
    cuda::stream_sync(ctx().copy_stream());
  }
  w.data = h->buf.get();
  // The split-plane copy for the mmvs decode matvec: 2-D matrices of the repacked types, except
  // the embedding table (gathered, not multiplied, unless the output is tied to it; a tied
  // output then takes the GGUF-layout matvec).
  const bool il = cfg_.kernels.mmvs_interleave;
  const auto plan = cuda::sp::plan(type, w.n_rows(), w.ne[0], il);
  if (cfg_.kernels.split_mirror && cuda::mmvs_type_on(type, cfg_.kernels) && plan.total_bytes > 0 && w.n_dims == 2 &&
      name != "token_embd.weight") {
    ctx().require_free(plan.total_bytes, fmt::format("the split-plane decode copy of '{}' ({:.1f} MiB; "
                                                     "kernels.split_mirror = false skips it)", name,
                                                     plan.total_bytes / kMiB));
    std::vector<uint8_t> packed(plan.total_bytes);
    cuda::sp::repack(type, static_cast<const uint8_t*>(host), w.row_bytes, w.n_rows(), w.ne[0], il, packed.data());
    h->mirror = cuda::DeviceBuffer(ctx().pool(), plan.total_bytes, "weights (split-plane copy)");
    h->bytes += plan.total_bytes;
    sh_->weight_bytes.fetch_add(plan.total_bytes);
    cuda::copy_h2d(h->mirror.get(), packed.data(), plan.total_bytes, ctx().copy_stream());
    cuda::stream_sync(ctx().copy_stream());
    w.decode_data = h->mirror.get();
  }
  // The f16 copy for the prefill GEMM: the bytes launch_gemm would dequantize into its scratch
  // on every call, made once here by the same kernel (so the GEMM sees the same values). Only
  // while kernels.prefill_f16_reserve_mib stays free after it: a matrix without a copy takes the
  // per-call dequantization (same values, slower prefill), never an out-of-memory error.
  const size_t f16_bytes = (size_t)w.n_rows() * (size_t)w.ne[0] * 2;
  const size_t reserve = (size_t)cfg_.kernels.prefill_f16_reserve_mib << 20;
  const bool f16_wanted = cfg_.kernels.prefill_f16_weights && qtype_traits(type).quantized && w.n_dims == 2 &&
                          bytes && name != "token_embd.weight";
  if (f16_wanted && ctx().free_bytes() < f16_bytes + reserve) {
    if (sh_->f16_skipped++ == 0)
      spdlog::warn("f16 prefill copies stop at '{}' ({:.1f} MiB): less than kernels.prefill_f16_reserve_mib = {} "
                   "MiB would stay free; the matrices from here on are dequantized per prefill call", name,
                   f16_bytes / kMiB, cfg_.kernels.prefill_f16_reserve_mib);
  } else if (f16_wanted) {
    h->f16 = cuda::DeviceBuffer(ctx().pool(), f16_bytes, "weights (f16 prefill copy)");
    h->bytes += f16_bytes;
    sh_->weight_bytes.fetch_add(f16_bytes);
    cuda::DequantizeParams dq;
    dq.type = type;
    dq.w = h->buf.get();
    dq.row_bytes = w.row_bytes;
    dq.rows = w.n_rows();
    dq.cols = w.ne[0];
    dq.out = h->f16.get();
    dq.out_f16 = true;
    cuda::check_status(cuda::launch_dequantize(dq, ctx().copy_stream()), "launch_dequantize (f16 prefill copy)");
    cuda::stream_sync(ctx().copy_stream());
    w.gemm_data = h->f16.get();
  }
  w.storage = std::shared_ptr<const void>(h, h->buf.get());
  return w;
}

void CudaBackend::to_host(View src, float* dst) {
  settle_deferred_norm(src);  // kernels.norm_defer: a deferred norm's output is written first
  if (src.rows == 0 || src.cols == 0) return;
  MEMRA_CHECK(!capturing_, "to_host inside a captured decode step");
  MEMRA_CUDA_CHECK(cudaMemcpy2DAsync(dst, (size_t)src.cols * 4, src.data, (size_t)src.ld * 4,
                                     (size_t)src.cols * 4, (size_t)src.rows, cudaMemcpyDeviceToHost, stream()));
  cuda::stream_sync(stream());
}

int CudaBackend::max_verify_rows() const {
  return std::max(1, std::min(cfg_.kernels.gemm_min_batch - 1, cuda::kMatvecMaxM));
}

void CudaBackend::argmax_rows(View src, std::span<int32_t> out) {
  settle_deferred_norm(src);
  MEMRA_CHECK((int64_t)out.size() == src.rows, "argmax_rows: {} outputs for {} rows", out.size(), src.rows);
  if (src.rows == 0) return;
  MEMRA_CHECK(src.cols > 0 && src.cols <= INT32_MAX && src.rows <= INT32_MAX, "argmax_rows: a [{} x {}] view",
              src.rows, src.cols);
  MEMRA_CHECK(!capturing_, "argmax_rows inside a captured decode step");
  const size_t bytes = (size_t)src.rows * sizeof(int32_t);
  if (d_argmax_.bytes() < bytes) d_argmax_ = cuda::DeviceBuffer(ctx().pool(), bytes, "argmax ids");
  cuda::ArgmaxParams p;
  p.logits = src.data;
  p.ld = src.ld;
  p.n_rows = (int)src.rows;
  p.n_vocab = (int)src.cols;
  p.out = d_argmax_.as<int32_t>();
  cuda::check_status(cuda::launch_argmax(p, stream()), "launch_argmax");
  cuda::copy_d2h(out.data(), p.out, bytes, stream());
}

void CudaBackend::from_host(const float* src, View dst) {
  forget_q8s();
  if (dst.rows == 0 || dst.cols == 0) return;
  MEMRA_CHECK(!capturing_, "from_host inside a captured decode step");
  MEMRA_CUDA_CHECK(cudaMemcpy2DAsync(dst.data, (size_t)dst.ld * 4, src, (size_t)dst.cols * 4,
                                     (size_t)dst.cols * 4, (size_t)dst.rows, cudaMemcpyHostToDevice, stream()));
}

void CudaBackend::synchronize() { cuda::stream_sync(stream()); }

// ---------------------------------------------------------------- KV cache

std::unique_ptr<KvStore> CudaBackend::create_kv(const kv::KvShape& shape, const kv::KvOptions& opts) {
  return std::make_unique<CudaKv>(sh_, shape, cuda_kv_options(shape, opts), ++kv_serial_);
}

void CudaBackend::kv_append_params(KvStore& kvs, int layer, int pos0, View k, View v,
                                   cuda::KvAppendParams (&kv)[2]) {
  auto& c = dynamic_cast<CudaKv&>(kvs);
  MEMRA_CHECK(layer >= 0 && layer < (int)c.layers.size(), "KV cache: layer {} out of range [0, {})", layer,
              c.layers.size());
  const auto& ls = c.shape_.layers[(size_t)layer];
  MEMRA_CHECK(k.cols == ls.k_row() && v.cols == ls.v_row() && k.rows == v.rows,
              "kv_write: layer {} expects K [n, {}] and V [n, {}], got [{}, {}] and [{}, {}]", layer,
              ls.k_row(), ls.v_row(), k.rows, k.cols, v.rows, v.cols);
  MEMRA_CHECK(pos0 >= 0 && (int64_t)pos0 + k.rows <= c.n_ctx(),
              "KV cache full: writing positions [{}, {}) exceeds context n_ctx={}", pos0, pos0 + k.rows,
              c.n_ctx());
  const int32_t* dpos = device_pos(pos0);
  auto& L = c.layers[(size_t)layer];
  for (int which = 0; which < 2; ++which) {
    const View src = which ? v : k;
    cuda::KvAppendParams& p = kv[which];
    p.src = src.data;
    p.ld_src = src.ld;
    p.n_tokens = (int)src.rows;
    p.row_elems = (int)src.cols;
    p.cache = which ? L.v.get() : L.k.get();
    p.type = which ? c.opts_.type_v : c.opts_.type_k;
    p.row_bytes = which ? L.v_row_bytes : L.k_row_bytes;
    p.scale_plane = which ? L.v_scale_plane : L.k_scale_plane;
    p.pos0 = dpos;
    p.n_ctx = c.n_ctx();
  }
}

void CudaBackend::kv_write(KvStore& kvs, int layer, int pos0, View k, View v) {
  forget_q8s();
  auto& c = dynamic_cast<CudaKv&>(kvs);
  cuda::KvAppendParams kv[2];
  kv_append_params(kvs, layer, pos0, k, v, kv);
  if (cfg_.kernels.fuse) {
    cuda::check_status(cuda::launch_kv_append_pair(kv[0], kv[1], stream()), "launch_kv_append_pair");
  } else {
    for (const auto& p : kv) cuda::check_status(cuda::launch_kv_append(p, stream()), "launch_kv_append");
  }
  kv_appended(c, pos0, (int)k.rows, "");
}

void CudaBackend::kv_appended(CudaKv& c, int pos0, int rows, const char* how) {
  note("kv_append", fmt::format("{}k_{}_v_{}{}", how, qtype_name(c.opts_.type_k), qtype_name(c.opts_.type_v),
                                 c.opts_.planes ? "_planes" : ""));
  c.n_written = std::max(c.n_written, pos0 + rows);
}

// ---------------------------------------------------------------- step staging and graphs

const int32_t* CudaBackend::device_pos(int pos0) {
  if (in_step_ && pos0 == step_pos0_) return d_step_.as<int32_t>();
  MEMRA_CHECK(!capturing_, "op at position {} inside a captured step at position {}", pos0, step_pos0_);
  if (adhoc_pos_ != pos0) {
    cuda::copy_h2d(d_adhoc_pos_.get(), &pos0, sizeof(int32_t), stream());
    adhoc_pos_ = pos0;
  }
  return d_adhoc_pos_.as<int32_t>();
}

const int32_t* CudaBackend::device_ids(std::span<const int32_t> ids) {
  if (in_step_ && ids.size() == step_ids_.size() &&
      std::equal(ids.begin(), ids.end(), step_ids_.begin()))
    return d_step_.as<int32_t>() + 1;
  MEMRA_CHECK(!capturing_, "embed of ids other than the captured step's");
  auto* d = static_cast<int32_t*>(workspace(kAdhocIds, ids.size_bytes()));
  cuda::copy_h2d(d, ids.data(), ids.size_bytes(), stream());
  return d;
}

void CudaBackend::stage_step_eager(std::span<const int32_t> ids, int pos0) {
  if ((int)ids.size() > d_step_cap_) {
    // Captured graphs read (through their own copy node) the buffer they were captured with.
    retired_.push_back(std::move(d_step_));
    d_step_cap_ = (int)ids.size();
    d_step_ = cuda::DeviceBuffer(ctx().pool(), sizeof(int32_t) * (size_t)(d_step_cap_ + 1), "step ids");
  }
  std::vector<int32_t> v(ids.size() + 1);
  v[0] = pos0;
  std::copy(ids.begin(), ids.end(), v.begin() + 1);
  cuda::copy_h2d(d_step_.get(), v.data(), v.size() * sizeof(int32_t), stream());
}

bool CudaBackend::begin_step(const Step& s) {
  // The launch policy is process-wide: another backend of this process (pp-bench's interleaved
  // arms, a draft model) may have set its own kernels.pdl / smem_carveout since this one last ran.
  cuda::set_pdl(cfg_.kernels.pdl);
  cuda::set_smem_carveout(cfg_.kernels.smem_carveout);
  forget_q8s();
  MEMRA_CHECK(!in_step_ && !capturing_, "begin_step: the previous step was not ended");
  MEMRA_CHECK(!s.ids.empty(), "forward: empty batch");
  auto* kv = dynamic_cast<CudaKv*>(s.kv);
  if (kv)
    MEMRA_CHECK(s.pos0 >= 0 && (int64_t)s.pos0 + (int64_t)s.ids.size() <= kv->n_ctx(),
                "context full: positions [{}, {}) exceed the configured n_ctx={}", s.pos0,
                s.pos0 + (int64_t)s.ids.size(), kv->n_ctx());
  const uint64_t gen = sh_->weight_gen.load();
  if (gen != graphs_weight_gen_) {
    drop_graphs();
    graphs_weight_gen_ = gen;
  }
  cuda::StepKey key{s.owner, s.scratch, s.logits.data, s.logits.rows, s.logits.cols, s.logits.ld,
                    kv ? kv->serial : 0, gen, (int)s.ids.size(),
                    attn_head_split_at(s.pos0, (int)s.ids.size()), attn_one_split_at(s.pos0, (int)s.ids.size()),
                    attn_grid_key_at(s.pos0, (int)s.ids.size())};
  GraphEntry* g = graphs_.find(key);
  const auto mode = cuda::choose_step_mode(cfg_.kernels.cuda_graph && kv && s.owner, (int)s.ids.size(),
                                           g != nullptr, seen_.contains(key));
  step_pos0_ = s.pos0;
  step_timed_ = false;
  step_ids_.assign(s.ids.begin(), s.ids.end());
  cur_key_ = key;
  cur_kv_ = kv;
  if (mode == cuda::StepMode::Eager) {
    stage_step_eager(s.ids, s.pos0);
    if (s.ids.size() == 1) {
      if (cfg_.kernels.cuda_graph && kv && s.owner) seen_.add(key);
      else note("decode_step", "eager");
    }
    in_step_ = true;
    return false;
  }
  // The previous replay may still read the pinned slot through its copy node.
  MEMRA_CUDA_CHECK(cudaEventSynchronize(step_done_));
  h_step_[0] = s.pos0;
  h_step_[1] = s.ids[0];
  if (mode == cuda::StepMode::Replay) {
    MEMRA_CHECK(s.ids[0] >= 0 && s.ids[0] < g->id_limit, "embed: token id {} out of range [0, {})", s.ids[0],
                g->id_limit);
    MEMRA_CUDA_CHECK(cudaEventRecord(step_t0_, stream()));
    MEMRA_CUDA_CHECK(cudaGraphLaunch(g->exec, stream()));
    MEMRA_CUDA_CHECK(cudaEventRecord(step_t1_, stream()));
    MEMRA_CUDA_CHECK(cudaEventRecord(step_done_, stream()));
    step_timed_ = true;
    kv->n_written = std::max(kv->n_written, s.pos0 + 1);
    for (size_t l = 0; l < kv->layers.size(); ++l)  // the replayed step advanced every recurrent state
      if (kv->layers[l].state.get()) kv->state_pos[l] = s.pos0 + 1;
    graph_ran_ = true;
    in_step_ = true;
    return true;
  }
  MEMRA_CUDA_CHECK(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeRelaxed));
  capturing_ = true;
  in_step_ = true;
  capture_id_limit_ = 0;
  const cudaError_t e = cudaMemcpyAsync(d_step_.get(), h_step_, 2 * sizeof(int32_t), cudaMemcpyHostToDevice,
                                        stream());
  if (e != cudaSuccess) {
    end_step(false);
    cuda::check_status(e, "cudaMemcpyAsync (staging the captured step's ids)");
  }
  return false;
}

void CudaBackend::end_step(bool ok) {
  forget_q8s();
  in_step_ = false;
  if (!capturing_) return;
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream(), &graph);
  if (!ok) {  // an op threw: its error is the one the caller sees; this must not throw
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    return;
  }
  cuda::check_status(e, "cudaStreamEndCapture (decode step)");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t ie = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  cuda::check_status(ie, "cudaGraphInstantiate (decode step)");
  for (auto& old : graphs_.insert(cur_key_, GraphEntry{exec, capture_id_limit_})) cudaGraphExecDestroy(old.exec);
  // Capture recorded the step without running it.
  MEMRA_CUDA_CHECK(cudaGraphLaunch(exec, stream()));
  MEMRA_CUDA_CHECK(cudaEventRecord(step_done_, stream()));
  graph_ran_ = true;
  note("decode_step", "cuda_graph");
}

}  // namespace cuda_impl
}  // namespace memra::backend
