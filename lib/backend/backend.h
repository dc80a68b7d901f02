#pragma once
// The op interface the models call. One implementation per device: lib/backend/cpu (the
// reference: f32 on dequantized rows, f64 sums where cheap) and lib/backend/cuda.
//
// Conventions shared by every op:
// - Activations are row-major 2-D f32 views in backend memory, one row per token; the caller
//   allocates them (alloc) and passes non-owning views for inputs and outputs.
// - A batch is a run of consecutive positions of one sequence: row i sits at position pos0 + i.
//   That keeps the decode step (n = 1) and the prefill batch the same code path, and lets a
//   CUDA backend keep pos0 in device memory so a captured graph replays unchanged.
// - Weights keep their GGUF block layout (uploaded once); ne[0] is the row (input) length.
// - Ops are coarse where a GPU wants to fuse (add_rms_norm, attention over the cache, moe_ffn)
//   and plain everywhere else.
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "kv/kv.h"
#include "quant/types.h"
#include "sample/sampler.h"

namespace memra::backend {

struct View {
  float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;  // floats between consecutive rows (>= cols)

  float* row(int64_t r) const { return data + r * ld; }
  View rows_slice(int64_t r0, int64_t n) const { return {data + r0 * ld, n, cols, ld}; }
  View cols_slice(int64_t c0, int64_t n) const { return {data + c0, rows, n, ld}; }
  bool contiguous() const { return ld == cols; }
};

// Backend-owned f32 memory; copies share the allocation.
struct Buffer {
  std::shared_ptr<float> mem;
  int64_t size = 0;  // floats
  View view(int64_t rows, int64_t cols) const;
};

// An uploaded tensor in its GGUF layout. 1-D tensors (norm weights, biases) are F32 rows.
struct Weight {
  std::string name;
  QType type = QType::F32;
  std::array<int64_t, 4> ne{1, 1, 1, 1};
  int n_dims = 0;
  const void* data = nullptr;  // backend memory
  uint64_t row_bytes = 0;      // bytes of one ne[0] row
  // A second layout of the same values a backend keeps for one kernel (the CUDA backend: the
  // split-plane decode copy of kernels/matvec/split_layout.h), or null. Owned by `storage`.
  const void* decode_data = nullptr;
  // The CUDA backend's f16 [n_rows][ne[0]] copy of a quantized matrix for the prefill GEMM
  // (kernels.prefill_f16_weights), or null. Owned by `storage`.
  const void* gemm_data = nullptr;
  std::shared_ptr<const void> storage;

  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  const uint8_t* row_ptr(int64_t r) const {
    return static_cast<const uint8_t*>(data) + (uint64_t)r * row_bytes;
  }
};

enum class RopeMode { Normal, Neox };  // Normal: pairs (x[2i], x[2i+1]); Neox: (x[i], x[i+d/2])

struct RopeParams {
  RopeMode mode = RopeMode::Normal;
  int head_dim = 0;
  int n_rot = 0;  // rotated dims (<= head_dim); the rest pass through
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;               // 1 / linear or YaRN factor
  const Weight* freq_factors = nullptr;  // [n_rot/2] divisors of the frequencies, or null
  // YaRN (ext_factor 0 disables the ramp; attn_factor scales cos/sin).
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int n_ctx_orig = 0;
};

struct AttnParams {
  int n_head = 0;
  int n_head_kv = 0;  // query head h reads kv head h / (n_head / n_head_kv)
  int head_dim_k = 0;
  int head_dim_v = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim_k)
  int window = 0;      // >0: sliding window, key j visible from position p iff p - j < window
  float softcap = 0.0f;  // >0: scores = softcap * tanh(scores / softcap)
  // F32 [n_head] or null: per-head sink logits (gpt-oss), in the softmax's maximum and denominator
  // with no value row.
  const Weight* sinks = nullptr;
};

// Block-sparse attention with an indexer (MiniMax Sparse Attention, MiniMax-M3). Key positions
// are grouped into blocks of block_size (block b = positions [b * block_size, (b + 1) *
// block_size)). Per query row t at position p = pos0 + t and indexer head g (one per kv head):
// - score(j) = iq[t, g] . ik[j], unscaled, for the cached indexer keys j <= p;
// - a block's score is the largest score(j) over its positions j <= p (blocks past p have none);
// - the query's own block p / block_size and the local_blocks - 1 blocks before it are always
//   kept; the remaining top_k - (those kept) places go to the other blocks with a key <= p, by
//   descending score (ties to the lower block);
// - the query heads of kv head g attend (softmax(scale q.k), causal) to exactly the positions
//   j <= p of the blocks kept for (t, g).
// top_k >= local_blocks >= 1 (with fewer, llama.cpp's choice among the local blocks is arbitrary).
struct BlockSparseParams {
  int n_idx_head = 0;  // indexer heads (== n_head_kv: indexer head g selects for kv head g)
  int idx_dim = 0;     // indexer head size (the cache's KvLayerShape::idx_dim)
  int block_size = 0;
  int top_k = 0;         // blocks kept per (query, indexer head), the local ones included
  int local_blocks = 0;  // always-kept blocks ending at the query's own block
};

// SwigluOai (gpt-oss's GLU, only as a GLU): with g = min(gate, 7) and u = clamp(up, -7, 7),
// g * sigmoid(1.702 g) * (u + 1).
// Sigmoid: 1 / (1 + exp(-x)) (qwen35's attention output gate, as a GLU: sigmoid(gate) * x).
enum class Activation { Silu, GeluTanh, SwigluOai, Sigmoid };
const char* activation_name(Activation a);

// Softmax / Sigmoid: probabilities over all experts, the top k selected (by probability plus the
// selection bias), their weights those probabilities (renormalized when norm_topk, by their sum
// clamped to >= 2^-14).
// SoftmaxWeight (gpt-oss): the top k selected by logit, their weights the softmax of those k
// logits.
enum class MoeGating { Softmax, Sigmoid, SoftmaxWeight };

struct MoeParams {
  int n_expert = 0;
  int n_expert_used = 0;
  MoeGating gating = MoeGating::Softmax;
  bool norm_topk = true;         // renormalize the selected weights to sum to 1
  float weights_scale = 1.0f;    // applied after renormalization
  const Weight* selection_bias = nullptr;  // added to the probabilities for selection only
  Activation act = Activation::Silu;
};

struct MoeWeights {
  const Weight* router = nullptr;     // [n_embd, n_expert]
  const Weight* gate_exps = nullptr;  // [n_embd, n_ff_exp, n_expert]
  const Weight* up_exps = nullptr;    // [n_embd, n_ff_exp, n_expert]
  const Weight* down_exps = nullptr;  // [n_ff_exp, n_embd, n_expert]
  // Optional F32 biases (gpt-oss): router [n_expert], gate/up [n_ff_exp, n_expert],
  // down [n_embd, n_expert]; added to the products in f32.
  const Weight* router_bias = nullptr;
  const Weight* gate_bias = nullptr;
  const Weight* up_bias = nullptr;
  const Weight* down_bias = nullptr;
};

// Gated DeltaNet (qwen35's linear attention), one layer over n tokens. Channels of qkv: q
// (n_k_heads x head_k_dim), k (the same), v (n_v_heads x head_v_dim). Per token: the causal
// depthwise convolution over the last d_conv inputs (the layer's conv state holds the previous
// d_conv - 1), SiLU; q and k L2-normalized per head (x / max(|x|, eps)); per value head h (key
// head h % n_k_heads) with decay exp(g), g = softplus(alpha + dt_bias) * a, and beta =
// sigmoid(beta_logit): S = exp(g) S; S += beta (v - S k) k^T; out = S q / sqrt(head_k_dim).
struct DeltaNetParams {
  int n_k_heads = 0;
  int n_v_heads = 0;
  int head_k_dim = 0;
  int head_v_dim = 0;
  int d_conv = 0;
  float eps = 1e-6f;  // the L2 norm's floor
  int64_t channels() const { return 2LL * n_k_heads * head_k_dim + (int64_t)n_v_heads * head_v_dim; }
  // The layer's state: the conv inputs [(d_conv - 1) x channels], then S per value head
  // [head_v_dim x head_k_dim].
  int64_t state_floats() const {
    return (int64_t)(d_conv - 1) * channels() + (int64_t)n_v_heads * head_v_dim * head_k_dim;
  }
};
struct DeltaNetWeights {
  const Weight* conv = nullptr;     // [d_conv, channels]
  const Weight* dt_bias = nullptr;  // [n_v_heads]
  const Weight* a = nullptr;        // [n_v_heads] (negative)
};

// Routing, as a pure function both backends must reproduce: from router logits of one token,
// the selected expert ids (descending probability, ties to the lower id) and their weights.
void moe_route(const float* logits, const MoeParams& p, int32_t* ids, float* weights);

// Opaque per-sequence KV store living in backend memory.
class KvStore {
 public:
  virtual ~KvStore() = default;
  virtual int n_ctx() const = 0;
  virtual const kv::KvShape& shape() const = 0;
  virtual const kv::KvOptions& options() const = 0;
  // Forget positions >= n (n = 0 clears). A store with recurrent layers can only be cleared.
  virtual void truncate(int n) = 0;
  // Recurrent layers (qwen35's Gated DeltaNet) keep a state with no history, which truncate()
  // cannot take back to an earlier position. save_checkpoint() copies every recurrent state aside
  // (replacing an earlier checkpoint) at the current length; rollback_to_checkpoint() puts it back
  // and forgets every position written since, so that the caller re-runs the tokens it keeps
  // (speculative decoding). Without recurrent layers the rollback is a truncate to that length.
  virtual bool has_recurrent_state() const = 0;
  virtual void save_checkpoint() = 0;
  virtual void rollback_to_checkpoint() = 0;
};

// One forward pass as the model announces it (the decode-step graph hooks). The model calls
// begin_step after sizing its scratch and before its first op, and end_step after its last op.
// A backend may stage ids and pos0 into device memory there, so that captured kernels read them
// from device memory and a captured decode step replays unchanged; when begin_step returns true
// the backend has already run the whole step (replayed a graph captured for the same memory) and
// the caller must skip its ops. end_step(false) (an op threw) must not throw. The CPU backend
// keeps the no-op defaults. StepScope below is the exception-safe way to call them.
struct Step {
  std::span<const int32_t> ids;  // host; row i at position pos0 + i
  int pos0 = 0;
  KvStore* kv = nullptr;
  // What identifies the memory the step's ops touch besides weights and kv: the caller (model),
  // its scratch base and its logits view. A replay is valid only for the same three.
  const void* owner = nullptr;
  const void* scratch = nullptr;
  View logits;
};

// One product of a matmul_n call: y = x * w^T (+ bias).
struct MatmulOut {
  const Weight* w = nullptr;
  View y;
  const Weight* bias = nullptr;
};

class Backend;

class StepScope {
 public:
  StepScope(Backend& be, const Step& s);
  ~StepScope();
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;
  bool replayed() const { return replayed_; }
  void finish();  // end_step(true); may throw (graph instantiation)

 private:
  Backend& be_;
  bool replayed_ = false;
  bool done_ = false;
};

// Draws tokens from logits that stay on the backend: sampled generation without the vocabulary's
// round trip to the host. It runs the CPU sampler's chain (memra::Sampler, lib/sample/chain.h) with
// the same options, penalty window and counter-based draws, so on the same logits it picks
// Sampler::sample's token (a device's documented exception: the last ulp of exp / log in double,
// chain.h). Made by Backend::make_sampler; it must not outlive that backend.
class TokenSampler {
 public:
  virtual ~TokenSampler() = default;
  // The token drawn from one row of logits (a 1-row view). A device sampler applies the penalties
  // to the row in place: the row is the step's scratch.
  virtual int32_t sample(View logits) = 0;
  // Adds a token (prompt or generated) to the penalty window, as Sampler::accept.
  virtual void accept(int32_t token) = 0;
  // Where the chain runs: "host" (the row copied to the host) or "device".
  virtual std::string where() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual bool begin_step(const Step& s) { return false; }
  virtual void end_step(bool ok) {}
  virtual std::string name() const = 0;
  // Which kernel variant ran for each op class ("matvec" -> "q4_K.dp4a.rows4", ...), and whether
  // the decode step ran as a captured graph: recorded in every benchmark receipt.
  virtual std::map<std::string, std::string> variants() const { return {}; }
  virtual bool decode_graph() const { return false; }
  // The largest batch of tokens whose every row is computed as a one-token step at the same
  // position would be, bit for bit (decode == verify); larger batches may take other kernels (a
  // GEMM, the prefill attention). Speculative decoding caps its verify batches here.
  virtual int max_verify_rows() const { return std::numeric_limits<int>::max(); }
  // Device time of the last replayed decode-step graph (events around the launch, after the
  // caller synchronized), in microseconds; negative when the last step was not a replay or the
  // backend has no such measure. The difference to the host's time per step is the host gap.
  virtual double last_step_device_us() { return -1.0; }

  // ---- memory
  virtual Buffer alloc(int64_t n_floats) = 0;
  // Uploads a tensor in its GGUF layout. `host` must hold rows * row_bytes bytes. When the
  // host memory stays valid as long as `keep_alive` does (an mmap), a host backend may borrow
  // it instead of copying.
  virtual Weight upload_weight(const std::string& name, QType type, std::span<const int64_t> ne,
                               const void* host, std::shared_ptr<const void> keep_alive) = 0;
  virtual void to_host(View src, float* dst) = 0;  // dst: src.rows * src.cols floats
  // out[r] = the column of row r's largest value (memra::argmax: ties to the smallest column, NaN
  // never wins, an all-NaN row gives 0), for every row of src (out.size() == src.rows). The
  // default copies the rows to the host and picks there; a device backend picks on the device
  // and copies only the ids back (greedy decoding without the logits' round trip).
  virtual void argmax_rows(View src, std::span<int32_t> out);
  // A token sampler for these options (validated: memra::validate). The default copies each row to
  // the host and draws there with memra::Sampler; the CUDA backend draws on the device where its
  // sampling kernel can (kernels/sample: top_k in [1, 1024] when temperature > 0) and otherwise
  // falls back to the default. where() says which was made.
  virtual std::unique_ptr<TokenSampler> make_sampler(const SamplerOptions& o);
  virtual void from_host(const float* src, View dst) = 0;
  virtual void synchronize() = 0;

  // ---- KV cache
  virtual std::unique_ptr<KvStore> create_kv(const kv::KvShape& shape, const kv::KvOptions& opts) = 0;
  // k: [n, n_head_kv * head_dim_k] at positions pos0..; v likewise.
  virtual void kv_write(KvStore& kv, int layer, int pos0, View k, View v) = 0;

  // ---- ops
  // out[i] = dequantized row ids[i] of table (ids checked against the table's row count).
  virtual void embed(const Weight& table, std::span<const int32_t> ids, View out) = 0;
  // y[n, out] = x[n, in] * W^T (+ bias), W = [in, out] (ne[0] = in).
  virtual void matmul(const Weight& w, View x, View y, const Weight* bias = nullptr) = 0;
  // Several products of one input (the q, k, v projections). The default runs matmul for each;
  // a backend may batch them (the CUDA decode path: same-type matrices in one launch, each row's
  // arithmetic unchanged, so the results are bit-identical to the separate products).
  virtual void matmul_n(View x, std::span<const MatmulOut> outs);
  // Whether matmul_residual takes this product (x * W^T, bias as given) on this backend. The
  // default: never (the caller runs matmul into a delta and add_rms_norm).
  virtual bool fuses_residual(const Weight& w, View x, const Weight* bias) { return false; }
  // residual += x * W^T, one rounded f32 add per element of the same two values add_rms_norm
  // would add, so the same bits as matmul then add_rms_norm's add. Only where fuses_residual
  // (the default throws). The CUDA decode path: the add in the matvec's epilogue, so the next
  // norm reads the residual alone.
  virtual void matmul_residual(const Weight& w, View x, View residual);
  // A hint before a sublayer: its last op will be matmul_residual into the residual stream and the
  // caller's next op rms_norm_into_matvecs(that stream, w, eps, out). A backend may compute that
  // norm inside the product's launch (the CUDA decode path, kernels.mmvs_emit_norm); the norm call
  // then finds its output made and does nothing. Results are those of the two ops either way. The
  // hint is dropped by the next matmul_residual or norm whether taken or not. Default: ignored.
  virtual void expect_norm_after_residual(const Weight* w, float eps, View out) {}
  // out = x / rms(x) * w (w may be null = ones). out may alias x.
  virtual void rms_norm(View x, const Weight* w, float eps, View out) = 0;
  // rms_norm where out is read afterwards only as the input x of matmul / matmul_n / matmul_glu /
  // moe_ffn calls, and nothing writes x or out in between (the decoder's norms before the q/k/v,
  // the FFN and the output head). A backend may then leave out's values unwritten and give those
  // consumers a deferred form (the CUDA decode path, kernels.norm_defer: the matvecs apply the
  // norm's scale); any other read of out is an error. The default is rms_norm.
  virtual void rms_norm_into_matvecs(View x, const Weight* w, float eps, View out) { rms_norm(x, w, eps, out); }
  // residual += delta; out = rms_norm(residual) * w. The fused form of the residual stream.
  virtual void add_rms_norm(View residual, View delta, const Weight* w, float eps, View out) = 0;
  // out = (x - mean(x)) / sqrt(var(x) + eps) * w + b (w, b may be null). out may alias x.
  // Not used by llama/qwen*; the default throws an error naming the backend (no silent fallback).
  virtual void layer_norm(View x, const Weight* w, const Weight* b, float eps, View out);
  // In place per head: x viewed as [rows, n_head, head_dim], each head RMS-normed, times w.
  virtual void head_rms_norm(View x, int n_head, int head_dim, const Weight* w, float eps) = 0;
  // In place on x viewed as [rows, n_head, head_dim]; row i at position pos0 + i.
  virtual void rope(View x, int n_head, int pos0, const RopeParams& p) = 0;
  // The q/k preparation of an attention layer, in place: head_rms_norm of q and k where q_norm /
  // k_norm is set, then rope of q and k. The default is those four ops; a backend may fuse them
  // (CUDA: one launch, bit-identical).
  virtual void qk_norm_rope(View q, View k, int n_head, int n_head_kv, const Weight* q_norm, const Weight* k_norm,
                            float eps, int pos0, const RopeParams& p);
  // qk_norm_rope, then kv_write(kv, layer, pos0, k, v). The default is those two ops; a backend
  // may fuse them (CUDA decode: the append in the same launch, bit-identical).
  virtual void qk_norm_rope_kv(View q, View k, View v, int n_head, int n_head_kv, const Weight* q_norm,
                               const Weight* k_norm, float eps, int pos0, const RopeParams& p, KvStore& kv,
                               int layer);
  // q: [n, n_head * head_dim_k] at positions pos0..; attends to cache positions [0, pos0+i]
  // (causal, optionally windowed); out: [n, n_head * head_dim_v].
  virtual void attention(View q, const KvStore& kv, int layer, int pos0, const AttnParams& p,
                         View out) = 0;
  // qk_norm_rope_kv, then attention(q, kv, layer, pos0, ap, out): an attention layer from its
  // q/k/v projections. The default is those two calls; a backend may fold them (CUDA decode,
  // kernels.attn_rope_fold: the attention kernel prepares q and appends K/V itself, the same
  // bytes). q and k are left unspecified (normed and rotated, or not).
  virtual void qk_norm_rope_kv_attention(View q, View k, View v, int n_head, int n_head_kv, const Weight* q_norm,
                                         const Weight* k_norm, float eps, int pos0, const RopeParams& rp, KvStore& kv,
                                         int layer, const AttnParams& ap, View out);
  // out = act(gate) * up (SwiGLU / GEGLU). out may alias gate.
  virtual void glu(View gate, View up, Activation act, View out) = 0;
  // out = act(x * gate^T) * (x * up^T), the first half of a gated FFN. up_tmp ([n, n_ff]) is
  // scratch. The default is matmul(gate), matmul(up), glu; a backend may fuse the three (the CUDA
  // decode path: both rows of one index in one warp, bit-identical to the unfused chain).
  virtual void matmul_glu(const Weight& gate, const Weight& up, View x, Activation act, View out, View up_tmp);
  // In place: x = act(x).
  virtual void activate(View x, Activation act) = 0;
  // a += b.
  virtual void add(View a, View b) = 0;
  // x *= s.
  virtual void scale(View x, float s) = 0;
  // x = cap * tanh(x / cap).
  virtual void softcap(View x, float cap) = 0;
  // In place, a head-wise gate (step35's attention gate): x viewed as [rows, n_head, head_dim],
  // head h of row r multiplied by sigmoid(gate[r, h]); gate is [rows, n_head].
  virtual void sigmoid_head_gate(View x, int n_head, int head_dim, View gate) = 0;
  // Routed mixture of experts: out = sum_k w_k * down_k(act(gate_k x) * up_k x).
  virtual void moe_ffn(View x, const MoeWeights& w, const MoeParams& p, View out) = 0;
  // h = rms_norm(x) * norm_w (written, read afterwards by anything), then out = moe_ffn(h): a MoE
  // layer's FFN norm of the residual stream x and its routed experts. The default is those two
  // ops; a backend may fuse the norm with the router (CUDA decode, kernels.moe_router_fused: the
  // norm's bits, the router logits in another f32 order).
  // may_add: the backend may instead add the experts' output to x itself (the one f32 add per
  // element add_rms_norm would make, so the same stream) and return true; out is then scratch. The
  // default returns false (out written, x unchanged).
  virtual bool rms_norm_moe_ffn(View x, const Weight* norm_w, float eps, View h, const MoeWeights& w,
                                const MoeParams& p, View out, bool may_add = false) {
    (void)may_add;
    rms_norm(x, norm_w, eps, h);
    moe_ffn(h, w, p, out);
    return false;
  }
  // Whether moe_ffn of n tokens with these weights runs without a host round trip, so that a step
  // of such layers may be captured (Step::owner); the models ask before each step. Default: yes
  // (a backend without graphs captures nothing anyway).
  virtual bool moe_on_device(const MoeWeights& w, const MoeParams& p, int64_t n) const { return true; }
  // Appends the indexer keys ik [n, idx_dim] of positions pos0.. to the layer's indexer-key cache
  // (KvLayerShape::idx_dim). The default refuses (no silent fallback).
  virtual void kv_write_index(KvStore& kv, int layer, int pos0, View ik);
  // Block-sparse attention (BlockSparseParams above): q [n, n_head * head_dim_k] and the indexer
  // queries iq [n, n_idx_head * idx_dim] at positions pos0..; K/V and indexer keys of positions
  // [0, pos0 + n) must be cached. out: [n, n_head * head_dim_v]. p.window, p.softcap and p.sinks
  // must be unset. The default refuses (no silent fallback to dense attention).
  virtual void block_sparse_attention(View q, View iq, const KvStore& kv, int layer, int pos0, const AttnParams& p,
                                      const BlockSparseParams& bp, View out);
  // qkv [n, channels], alpha / beta [n, n_v_heads] (the raw projections) -> out
  // [n, n_v_heads * head_v_dim]; updates the layer's recurrent state in kv (DeltaNetParams).
  // The tokens are positions [pos0, pos0 + n); the layer's state must have consumed exactly pos0.
  virtual void gated_delta_net(View qkv, View alpha, View beta, const DeltaNetWeights& w, const DeltaNetParams& p,
                               KvStore& kv, int layer, int pos0, View out);
};

}  // namespace memra::backend
