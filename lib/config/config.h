#pragma once
// The one typed, immutable run configuration. Loaded from TOML files (later files override
// earlier ones) plus `--set section.key=value` overrides, validated strictly against the schema
// in schema.cpp: an unknown key, a wrong type, an out-of-range value or a missing file is a
// memra::Error naming the file, line and key path. configs/defaults.toml is generated from the
// same schema (`defaults_toml()`), and a test keeps the two identical.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace memra {

struct ModelSection {
  std::string path;  // GGUF file; apps also take it as a positional argument
};

struct RunSection {
  int n_predict = 128;
  int n_ctx = 4096;
  int64_t seed = 0;
  std::string backend = "auto";  // auto | cpu | cuda
  bool chat = false;
  std::string system;            // system prompt for chat mode
};

struct ThreadsSection {
  int n = 0;  // 0 = all hardware threads
};

struct LoggingSection {
  std::string level = "info";  // trace | debug | info | warn | error | off
};

struct ReceiptSection {
  bool enabled = true;
  std::string path = "memra-receipts.jsonl";
  bool hash_model = true;  // sha256 of the model file (slow for very large files)
};

struct KvSection {
  // auto: f16 on the CPU backend (llama.cpp's default, the numeric class of the references),
  // K q8_0 / V q5_1 on CUDA (the bytes a decode step reads at depth), V q8_0 where kv.planes
  // takes the cache.
  std::string type_k = "auto";  // auto | f32 | f16 | q8_0
  std::string type_v = "auto";  // auto | f32 | f16 | q8_0 | q5_1
  // CUDA: K and V rows as q8_0 split planes (quants, then scales) for the int8 tile decode form.
  // auto: where the model's attention layers and the cache types allow it; on: required; off.
  std::string planes = "auto";  // auto | on | off
};

struct CpuSection {
  bool quantize_activations = true;  // q8_0/q8_1/q8_K activations like llama.cpp's CPU path
  // llamacpp: ggml's CPU flash-attention rounding on an F16 cache (llama.cpp's default run);
  // measured closer to llama.cpp's default logits on 7 of 8 reference records and 1906 vs 1847
  // greedy tokens matched (tests/engine/test_llamacpp_fa.cpp). exact: f32/f64 attention.
  std::string attention = "llamacpp";  // exact | llamacpp | llamacpp_fa (also f32 caches)
  // llamacpp: ggml's CPU GELU (argument and result through f16, its table); exact: f32 GELU.
  std::string gelu = "llamacpp";  // exact | llamacpp
};

struct SampleSection {
  double temperature = 0.0;  // 0 = greedy
  int top_k = 40;
  double top_p = 0.95;
  double min_p = 0.05;
  double typical_p = 1.0;
  double repeat_penalty = 1.0;
  int repeat_last_n = 64;
  double frequency_penalty = 0.0;
  double presence_penalty = 0.0;
  std::vector<std::string> stop;  // stop strings
  bool on_backend = true;  // sampled generation draws where the logits are (Backend::make_sampler)
};

struct KernelsSection {
  std::string matvec = "auto";  // variant name or auto
  std::string gemm = "auto";    // auto | cublaslt | mma
  int gemm_min_batch = 9;       // batches >= this use the GEMM path
  bool cuda_graph = true;       // capture the decode step as a CUDA graph
  bool split_mirror = true;     // keep a split-plane copy of Q4_0/Q8_0/Q6_K/Q5_K/IQ4_XS (and interleaved Q4_K) matrices for mmvs
  std::vector<std::string> mmvs_types = {"q4_k", "q6_k", "q8_0", "q4_0", "q5_k", "iq4_xs"};  // weight types the mmvs decode matvec serves
  bool mmvs_interleave = true;  // split copies in the interleaved task order (512-byte runs per load)
  bool mmvs_split_k = true;     // mmvs rows longer than 4096 weights served by 2-4 warps
  int mmvs_split_max_warps = 2; // the most warps per row with mmvs_split_k (2 or 4)
  int64_t mmvs_split_min_k = 5184;  // with mmvs_split_k: rows of at least this many weights split
  bool mmvs_mixed_types = true;  // one-token q/k/v in one mmvs launch across weight types (Q4_K + Q6_K)
  int mmvs_min_blocks = 6;       // mmvs m = 1 plain launches: register cap for >= 6 CTAs per SM (0 / 8 / 12)
  int mmvs_min_blocks_glu = 6;   // the same for the fused GLU launches (where it does not spill)
  int mmvs_cap_max_rows = 65536; // plain matrices with more rows than this (the output head) uncapped; 0: no limit
  bool mmvs_cap_no_spill = true;  // a capped instance that spills is not used (the default instance runs)
  int mmvs_cap_fallback = 5;      // with mmvs_cap_no_spill: where the named cap spills, this cap if it does not (0: none)
  bool mmvs_preload = true;       // mmvs: the first tasks' weights requested before the PDL wait
  bool mmvs_preload_residual = true;  // with mmvs_preload: also the residual launches (o, down)
  bool mmvs_act_il = true;        // one-token q8s activations in the interleaved order (q8s_order.h)
  bool mmvs_act_il_q6k = false;   // with mmvs_act_il: the Q6_K variant for launches of Q6_K rows only
  std::vector<std::string> mmvs_row_pairs = {"q4_k", "q8_0", "q6_k", "q5_k"};  // weight types whose one-token plain mmvs launches take two rows per warp
  int mmvs_min_blocks_rp = 0;     // the row-pair instances' cap (0, 5 or 6; uncapped where it spills)
  int mmvs_min_blocks_rp_head = 6;  // the same for matrices over kernels.mmvs_cap_max_rows rows (the output head)
  std::vector<std::string> mmvs_row_pairs_one_task = {"q6_k", "q5_k"};  // of those types, the ones whose pairs hold one task per row in flight
  int64_t mmvs_row_pairs_one_task_min_k = 8192;  // the other pair types' rows of at least this many weights: one task too (0: never)
  std::vector<std::string> mmvs_glu_one_task = {"q8_0", "q5_k", "iq4_xs"};  // weight types whose one-token GLU launches hold one task per matrix in flight
  bool mmvf_v2 = true;  // float-weight decode matvecs on mmvf2 (kernels/matvec/mmvf.h)
  bool moe_device_route = true;  // MoE batches of <= 8 tokens routed on the device (graph-captured decode)
  bool moe_routed_v2 = false;    // device-routed MoE: the expert matvecs on the v2 kernel (GGUF bytes in 16-byte windows)
  bool moe_glu_q8_1 = true;      // device-routed MoE: the GLU writes the down projection's q8_1 input (no quantize launch)
  bool moe_gate_up_one_launch = true;  // device-routed MoE decode: the gate and up experts in one routed launch
  bool moe_router_fused = true;  // device-routed MoE decode: the FFN norm, router and top-k in one launch
  bool moe_combine_residual = true;  // fused-router MoE decode: the combine adds into the residual stream
  bool moe_device_route_prefill = true;   // device-routed MoE for batches over 8 tokens too (slots grouped by expert)
  bool moe_grouped_mma = false;  // with moe_device_route_prefill: Q8_0 expert groups on the int8 tensor cores
  int mmvf_rows_per_warp = 1;  // mmvf2: rows per warp (1, 2 or 4)
  bool mmvs_row_pairs_qkv = true;   // the one-type q/k/v launches (extra segments) take the row pairs too
  int mmvs_qkv_quads = 1;  // 1 / 2: the one-token q/k/v launches as row quads, one / two tasks per row in flight (0: off)
  bool mmvs_row_pairs_verify = true;  // verify rows (m = 2..8) of the paired types take the row pairs too
  std::vector<std::string> mmvs_glu_pairs = {"q4_k", "q4_0"};  // weight types whose one-token SiLU GLU launches take two rows per warp
  int64_t mmvs_glu_pairs_min_k = 5120;  // those launches on rows of at least this many weights only (0: every length)
  bool fuse_residual = true;      // decode: the residual add in the o / down matvec's epilogue
  int norm_split = 8;             // decode RMSNorm: blocks per row (each sums the whole row)
  bool norm_bulk_load = true;     // decode RMSNorm: the row copied to shared memory by one bulk copy
  bool norm_defer = true;         // decode RMSNorm before matvecs: planes of x * w, the scale applied by the matvecs
  int64_t norm_defer_max_cols = 0;  // with norm_defer: only rows of at most this many columns (0: any width)
  std::string norm_defer_scale = "matvecs";  // with norm_defer: who sums the partials and takes the root ("matvecs" or "norm")
  bool mmvs_emit_norm = true;     // decode: the residual launch before a deferred norm computes that norm itself
  int mmvs_emit_norm_warps = 16;  // with mmvs_emit_norm: warps per 32-row CTA (8, 16 or 32)
  std::vector<std::string> mmvs_emit_norm_short_w8 = {"q4_0"};  // with mmvs_emit_norm: types whose rows of at most 4096 weights take 8-warp CTAs, whole row in flight
  int mmvs_emit_norm_warps_wide = 8;  // with mmvs_emit_norm: warps where mmvs_emit_norm_warps is past one wave (0: none, 8)
  std::vector<std::string> mmvs_glu_emit = {"q4_k", "q4_0"};  // weight types whose one-token gate + up launch writes its output's q8s planes
  std::vector<std::string> mmvs_glu_emit_w8 = {"q4_0"};  // with mmvs_glu_emit: types whose emitting GLU takes 8-warp CTAs (two per SM)
  bool quantize_bulk_load = true;   // one-token q8s quantize: each block's values by one bulk copy
  bool prefill_f16_weights = true;   // f16 copy of each quantized matrix for the prefill GEMM
  int prefill_f16_reserve_mib = 8192;  // f16 copies stop where less than this would stay free
  bool fuse = true;             // fused decode ops (shared activation quantization, gate+up+GLU)
  bool pdl = true;              // programmatic dependent launch between decode kernels
  int smem_carveout = -1;       // preferred L1 / shared split of the decode kernels (% of max shared; -1 driver)
  bool fuse_kv_append = true;     // decode: K/V append inside the q/k norm + RoPE launch
  bool attn_q8_scores = true;     // decode attention on a q8_0 K cache: int8 q . k per block
  bool attn_v_stage = true;       // decode attention: V tiles through shared memory (cp.async)
  bool attn_rope_fold = true;     // decode: q/k norm + RoPE + K/V append inside the split attention kernel
  bool attn_pv_mma = true;        // decode attention: P x V on tensor cores (f16 P and V, f32 sums)
  bool attn_f16_mma = true;       // decode attention on an f16 K/V cache: scores and P x V on tensor cores
  bool attn_fold_k_stage = true;    // with attn_fold_prefetch: every later tile's K staged in shared memory
  bool attn_fold_prefetch = true;   // decode attention with the RoPE fold: first tile's K/V requested before the PDL wait
  bool attn_fold_loads_first = true;   // the int8 tile form's fold: q / new K / new V heads requested at once after the wait
  bool attn_softmax_interleave = true;   // with attn_fold_k_stage: the heads' softmax shuffle trees side by side
  bool attn_mma_scores = false;   // with attn_softmax_interleave, 4 heads per block: tile scores on int8 tensor cores
  bool attn_combine_preload = true;   // decode attention combine: the first 96 splits' values requested at once
  int attn_max_splits = 96;          // decode attention: the most key splits per row (attn_decode_splits)
  int attn_grid_round = 8;           // decode attention: the grid's splits trimmed to the used ones, rounded up to this (0: all)
  int attn_blocks_per_sm = 4;        // decode attention: split count aimed at this many blocks per SM
  int attn_planes_stages = 1;        // kv.planes decode: each warp's 16-key tiles in flight (1 or 2)
  std::string attn_planes_copy = "async";  // kv.planes decode: async | tensor (the tiles' quant copies)
  int attn_f16_split_keys = 128;     // attn_f16_mma: the fewest keys per split of a row past 128 keys
  int attn_head_split_keys = 1024;   // decode attention with the fold: one block per query head up to this many keys
  int attn_head_pair_keys = 4608;    // ... then blocks of 2 query heads up to this many keys
  int attn_head_pair_max_group = 4;  // ... for groups of at most this many query heads per kv head
  bool attn_planes_head_pairs = false;  // kv.planes: the tile form takes that pair form too
  bool attn_one_split_direct = true;   // decode attention: one-split rows written by the split kernel (no combine pass)
  bool attn_one_split_no_combine = true;  // decode attention: no combine launch in a step whose rows are all one split
  bool attn_combine_smem = true;  // decode attention combine: split maxima/sums once per block via smem
  int probe_boundaries = 0;       // diagnostic: empty kernels after each decode attention (A/B runs)
  int probe_attn_delay_cycles = 0;  // diagnostic: the split-plane decode attention's blocks held this many cycles (A/B runs)
  bool attn_prefill_staged = true;  // prefill attention: K/V staged as f16, cp.async + ldmatrix kernel
  bool gemm_x_reuse = true;       // prefill GEMM: one f16 rounding of an input shared by consecutive GEMMs
};

struct SpecSection {  // run-spec
  int draft_tokens = 4;
  std::string draft_model;
  std::string drafter = "auto";  // auto | model | ngram
  int ngram_min = 1;
  int ngram_max = 3;
  double draft_p_min = 0.0;      // a draft model stops proposing below this top probability (0: off)
  bool check = false;            // compare with plain greedy decoding after the run
};

struct BenchSection {
  std::vector<int64_t> n_prompt = {512};
  std::vector<int64_t> n_gen = {128};
  std::vector<int64_t> depth = {0};
  int repetitions = 5;
  int warmup = 1;
  bool interleave = true;  // pp-bench --arm: every arm resident, repetitions rotate over the arms
  bool aa_copy = false;    // pp-bench with interleave: a second copy of the first arm joins the rotation
};

struct SweepSection {
  double decode_tolerance = 0.05;   // relative median drop that fails the sweep
  double prefill_tolerance = 0.08;
};

struct SynthSection {  // gguf-synth
  std::string preset = "qwen3-8b-tiny";
  std::string mix = "q4_k_m";
  std::string out;                 // output GGUF path
  int64_t seed = 1234;
  std::vector<std::string> dims;   // "key=value" overrides of the preset's dimensions
};

struct Config {
  ModelSection model;
  RunSection run;
  ThreadsSection threads;
  LoggingSection logging;
  ReceiptSection receipt;
  KvSection kv;
  CpuSection cpu;
  SampleSection sample;
  KernelsSection kernels;
  SpecSection spec;
  BenchSection bench;
  SweepSection sweep;
  SynthSection synth;
};

// One --set override: "section.key=value" (value in TOML syntax; a bare word is taken as a string
// for string keys).
struct ConfigOverride {
  std::string assignment;
};

// Loads defaults, then each file in order, then each override. Throws memra::Error.
Config load_config(const std::vector<std::string>& files, const std::vector<std::string>& overrides);

// The resolved config as TOML (every key, canonical order) and its sha256.
std::string to_toml(const Config& c);
std::string config_hash(const Config& c);
// configs/defaults.toml content: every key with its default and documentation.
std::string defaults_toml();
// Every key path in schema order ("run.n_predict", ...).
std::vector<std::string> config_keys();

}  // namespace memra
