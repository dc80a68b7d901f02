#include "config/config.h"

#include <toml++/toml.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/sha256.h"

namespace memra {
namespace {

enum class Kind { Int, Float, Bool, String, StringList, IntList };

// A value as it was read: the TOML node plus where it came from (for error messages).
struct Source {
  std::string where;  // "file.toml:12" or "--set run.n_ctx=..."
};

struct Field {
  std::string path;  // "section.key"
  Kind kind;
  std::string doc;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // allowed strings (empty: any)
  std::function<void(Config&, const toml::node&, const Source&)> set;
  std::function<std::string(const Config&)> show;  // TOML literal of the current value
};

std::string quote(const std::string& s) {
  std::ostringstream o;
  o << toml::value<std::string>(s);
  return o.str();
}

std::string kind_name(Kind k) {
  switch (k) {
    case Kind::Int: return "integer";
    case Kind::Float: return "float";
    case Kind::Bool: return "boolean";
    case Kind::String: return "string";
    case Kind::StringList: return "array of strings";
    case Kind::IntList: return "array of integers";
  }
  return "?";
}

[[noreturn]] void bad(const Source& s, const std::string& path, const std::string& what) {
  throw Error(fmt::format("{}: config key '{}': {}", s.where, path, what));
}

int64_t read_int(const toml::node& n, const Field& f, const Source& s) {
  if (!n.is_integer()) bad(s, f.path, fmt::format("expected {}, got {}", kind_name(f.kind), toml::impl::node_type_friendly_names[(int)n.type()]));
  const int64_t v = *n.value<int64_t>();
  if ((double)v < f.min || (double)v > f.max)
    bad(s, f.path, fmt::format("value {} out of range [{}, {}]", v, f.min, f.max));
  return v;
}

double read_float(const toml::node& n, const Field& f, const Source& s) {
  if (!n.is_floating_point() && !n.is_integer())
    bad(s, f.path, fmt::format("expected {}, got {}", kind_name(f.kind), toml::impl::node_type_friendly_names[(int)n.type()]));
  const double v = *n.value<double>();
  if (!std::isfinite(v) || v < f.min || v > f.max)
    bad(s, f.path, fmt::format("value {} out of range [{}, {}]", v, f.min, f.max));
  return v;
}

std::string read_string(const toml::node& n, const Field& f, const Source& s) {
  if (!n.is_string()) bad(s, f.path, fmt::format("expected {}, got {}", kind_name(f.kind), toml::impl::node_type_friendly_names[(int)n.type()]));
  std::string v = *n.value<std::string>();
  if (!f.choices.empty()) {
    bool ok = false;
    for (const auto& c : f.choices) ok = ok || c == v;
    if (!ok) {
      std::string all;
      for (const auto& c : f.choices) all += (all.empty() ? "" : " | ") + c;
      bad(s, f.path, fmt::format("value '{}' not one of: {}", v, all));
    }
  }
  return v;
}

template <class S, class T>
Field make(std::string path, S Config::*sec, T S::*mem, std::string doc, double lo = -INFINITY,
           double hi = INFINITY, std::vector<std::string> choices = {}) {
  Field f;
  f.path = std::move(path);
  f.doc = std::move(doc);
  f.min = lo;
  f.max = hi;
  f.choices = std::move(choices);
  if constexpr (std::is_same_v<T, bool>) {
    f.kind = Kind::Bool;
    f.set = [sec, mem, p = f.path](Config& c, const toml::node& n, const Source& s) {
      if (!n.is_boolean()) bad(s, p, fmt::format("expected boolean, got {}", toml::impl::node_type_friendly_names[(int)n.type()]));
      c.*sec.*mem = *n.value<bool>();
    };
    f.show = [sec, mem](const Config& c) { return std::string(c.*sec.*mem ? "true" : "false"); };
  } else if constexpr (std::is_integral_v<T>) {
    f.kind = Kind::Int;
    if (f.min < (double)std::numeric_limits<T>::min()) f.min = (double)std::numeric_limits<T>::min();
    if (f.max > (double)std::numeric_limits<T>::max()) f.max = (double)std::numeric_limits<T>::max();
    f.set = [sec, mem, f](Config& c, const toml::node& n, const Source& s) { c.*sec.*mem = (T)read_int(n, f, s); };
    f.show = [sec, mem](const Config& c) { return std::to_string(c.*sec.*mem); };
  } else if constexpr (std::is_floating_point_v<T>) {
    f.kind = Kind::Float;
    f.set = [sec, mem, f](Config& c, const toml::node& n, const Source& s) { c.*sec.*mem = read_float(n, f, s); };
    f.show = [sec, mem](const Config& c) {
      std::ostringstream o;
      o << toml::value<double>(c.*sec.*mem);
      return o.str();
    };
  } else if constexpr (std::is_same_v<T, std::string>) {
    f.kind = Kind::String;
    f.set = [sec, mem, f](Config& c, const toml::node& n, const Source& s) { c.*sec.*mem = read_string(n, f, s); };
    f.show = [sec, mem](const Config& c) { return quote(c.*sec.*mem); };
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    f.kind = Kind::StringList;
    f.set = [sec, mem, f](Config& c, const toml::node& n, const Source& s) {
      if (!n.is_array()) bad(s, f.path, "expected array of strings");
      std::vector<std::string> out;
      for (const auto& e : *n.as_array()) out.push_back(read_string(e, f, s));
      c.*sec.*mem = out;
    };
    f.show = [sec, mem](const Config& c) {
      std::string r = "[";
      for (size_t i = 0; i < (c.*sec.*mem).size(); ++i) r += (i ? ", " : "") + quote((c.*sec.*mem)[i]);
      return r + "]";
    };
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    f.kind = Kind::IntList;
    f.set = [sec, mem, f](Config& c, const toml::node& n, const Source& s) {
      if (!n.is_array()) bad(s, f.path, "expected array of integers");
      std::vector<int64_t> out;
      for (const auto& e : *n.as_array()) out.push_back(read_int(e, f, s));
      if (out.empty()) bad(s, f.path, "array must not be empty");
      c.*sec.*mem = out;
    };
    f.show = [sec, mem](const Config& c) {
      std::string r = "[";
      for (size_t i = 0; i < (c.*sec.*mem).size(); ++i) r += (i ? ", " : "") + std::to_string((c.*sec.*mem)[i]);
      return r + "]";
    };
  }
  return f;
}

// The schema: every key, its type, range and meaning. Adding a key = a struct member in
// config.h + one line here + regenerating configs/defaults.toml (scripts/gen-defaults.sh).
const std::vector<Field>& schema() {
  static const std::vector<Field> fields = [] {
    using C = Config;
    std::vector<Field> v;
    v.push_back(make("model.path", &C::model, &ModelSection::path, "GGUF model file (apps also take it as the first positional argument)"));
    v.push_back(make("run.n_predict", &C::run, &RunSection::n_predict, "tokens to generate", 0, 1 << 24));
    v.push_back(make("run.n_ctx", &C::run, &RunSection::n_ctx, "context length in tokens (KV cache size); a prompt that does not fit is an error", 1, 1 << 24));
    v.push_back(make("run.seed", &C::run, &RunSection::seed, "sampling seed (same seed + config -> same tokens)", 0, 9.0e18));
    v.push_back(make("run.backend", &C::run, &RunSection::backend, "compute backend: auto = cuda when a GPU is present", -INFINITY, INFINITY, {"auto", "cpu", "cuda"}));
    v.push_back(make("run.chat", &C::run, &RunSection::chat, "render the prompt through the model's chat template"));
    v.push_back(make("run.system", &C::run, &RunSection::system, "system message for chat mode (empty: none)"));
    v.push_back(make("threads.n", &C::threads, &ThreadsSection::n, "CPU threads for the CPU backend and tools; 0 = all hardware threads", 0, 4096));
    v.push_back(make("logging.level", &C::logging, &LoggingSection::level, "log level", -INFINITY, INFINITY, {"trace", "debug", "info", "warn", "error", "off"}));
    v.push_back(make("receipt.enabled", &C::receipt, &ReceiptSection::enabled, "append one JSON Lines receipt per run"));
    v.push_back(make("receipt.path", &C::receipt, &ReceiptSection::path, "receipt file (appended); receipts/ holds only receipts committed on purpose"));
    v.push_back(make("receipt.hash_model", &C::receipt, &ReceiptSection::hash_model, "record the sha256 of the model file"));
    v.push_back(make("kv.type_k", &C::kv, &KvSection::type_k, "KV cache type for K; auto = f16 on the CPU backend (llama.cpp's default), q8_0 on CUDA", -INFINITY, INFINITY, {"auto", "f32", "f16", "q8_0"}));
    v.push_back(make("kv.type_v", &C::kv, &KvSection::type_v, "KV cache type for V; auto = f16 on the CPU backend (llama.cpp's default), q5_1 on CUDA", -INFINITY, INFINITY, {"auto", "f32", "f16", "q8_0", "q5_1"}));
    v.push_back(make("cpu.quantize_activations", &C::cpu, &CpuSection::quantize_activations, "CPU backend: quantize matmul activations to q8_0/q8_1/q8_K (f16 for F16 weights) like llama.cpp's CPU path, the numeric class of llama.cpp's output and of the integer GPU kernels; false = exact f32 activations"));
    v.push_back(make("cpu.attention", &C::cpu, &CpuSection::attention, "CPU backend attention numerics: exact = f32 scores, f64 softmax sums and V accumulation; llamacpp = llama.cpp's CPU flash-attention rounding (Q rounded to f16, online softmax in f32, V accumulated in f16), used where K and V are cached as f16 and the batch has < 64 rows (batches of 64 rows or more: exact math); llamacpp_fa = the same, and an f32 cache rounded to f16 first as llama.cpp does with flash attention forced on; other cache types exact", -INFINITY, INFINITY, {"exact", "llamacpp", "llamacpp_fa"}));
    v.push_back(make("cpu.gelu", &C::cpu, &CpuSection::gelu, "CPU backend GELU (tanh approximation; gemma's FFN) numerics: exact = f32; llamacpp = llama.cpp's CPU GELU, which rounds the argument to f16 and returns its table entry (the GELU of that f16 value rounded to f16; arguments <= -10 give 0, >= 10 pass through): on the gemma3 reference file the exact GELU is 3.4e-4 of max|logit| from llama.cpp, the f16 one 7.8e-5 (tests/engine/test_arch.cpp)", -INFINITY, INFINITY, {"exact", "llamacpp"}));
    v.push_back(make("sample.temperature", &C::sample, &SampleSection::temperature, "sampling temperature; 0 = greedy", 0, 100));
    v.push_back(make("sample.top_k", &C::sample, &SampleSection::top_k, "keep the k most likely tokens; 0 = off", 0, 1 << 24));
    v.push_back(make("sample.top_p", &C::sample, &SampleSection::top_p, "nucleus sampling mass; 1 = off", 0, 1));
    v.push_back(make("sample.min_p", &C::sample, &SampleSection::min_p, "drop tokens below min_p * p(max); 0 = off", 0, 1));
    v.push_back(make("sample.typical_p", &C::sample, &SampleSection::typical_p, "locally typical sampling mass; 1 = off", 0, 1));
    v.push_back(make("sample.repeat_penalty", &C::sample, &SampleSection::repeat_penalty, "repetition penalty over the last repeat_last_n tokens; 1 = off", 0, 100));
    v.push_back(make("sample.repeat_last_n", &C::sample, &SampleSection::repeat_last_n, "window of recent tokens the penalties look at", 0, 1 << 24));
    v.push_back(make("sample.frequency_penalty", &C::sample, &SampleSection::frequency_penalty, "subtract count * frequency_penalty from a token's logit", -100, 100));
    v.push_back(make("sample.presence_penalty", &C::sample, &SampleSection::presence_penalty, "subtract presence_penalty from a token seen in the window", -100, 100));
    v.push_back(make("sample.stop", &C::sample, &SampleSection::stop, "stop strings: generation ends when the text ends with one of them"));
    v.push_back(make("sample.on_backend", &C::sample, &SampleSection::on_backend, "run-gen's sampled generation (temperature > 0 or a penalty): each token drawn where the logits are (Backend::make_sampler; on CUDA the sampling chain on the device, kernels/sample, when top_k is in [1, 1024]: only the token id comes back) instead of the row of logits copied to the host and drawn there by the CPU sampler. The same chain, options, window and counter-based draws, so the same tokens (lib/sample/chain.h: the documented exception is the last ulp of exp / log in double). The receipt's metrics.sampling says which ran. Default false until its GPU test (CudaModels.DeviceSamplerMatchesHostSampler) and timing have run on a device (forty-fourth session: built, device phase g44); the host path costs ~165 us per token on a 2-core build machine (151936-entry vocabulary, top_k 40) plus the 0.6 MB copy"));
    v.push_back(make("kernels.matvec", &C::kernels, &KernelsSection::matvec, "decode matvec variant name, or auto (a pure function of GPU, shape and config)"));
    v.push_back(make("kernels.gemm", &C::kernels, &KernelsSection::gemm, "prefill GEMM path", -INFINITY, INFINITY, {"auto", "cublaslt", "mma"}));
    v.push_back(make("kernels.gemm_min_batch", &C::kernels, &KernelsSection::gemm_min_batch, "token batches of at least this size use the GEMM path", 1, 1 << 20));
    v.push_back(make("kernels.cuda_graph", &C::kernels, &KernelsSection::cuda_graph, "capture the decode step as a CUDA graph"));
    v.push_back(make("kernels.split_mirror", &C::kernels, &KernelsSection::split_mirror, "CUDA: keep a split-plane copy of each Q4_0/Q8_0/Q6_K/Q5_K/IQ4_XS matrix, and of each Q4_K matrix when kernels.mmvs_interleave is on (same bytes again), so the mmvs decode matvec reads it with aligned 16-byte loads"));
    v.push_back(make("kernels.mmvs_types", &C::kernels, &KernelsSection::mmvs_types, "CUDA: the weight types whose decode matvecs (m <= 8) take the mmvs kernel on the split-plane copy (kernels.split_mirror; no copy is made for a type left out); the others take the GGUF-block matvec (mmvq). Default q4_k, q6_k, q8_0, q4_0, q5_k, iq4_xs: every type it is built for, each measured against mmvq (bench/notes/mmvs.md; Q5_K, the Q5_K_M mix's main type, and IQ4_XS since the forty-fourth session: device phases q5k34 / q5k34t on an H100, kernel-check mmvs + mmvs_id 801/801 for both types, CudaModels.MmvsQ5kIq4xsAgainstOracle, qwen3-8b tg128 at 0 keys q5_k_m 420.1 against 237.9 tok/s (1.766x) and iq4_xs 417.1 against 234.8 (1.777x) with kernels.mmvs_glu_one_task, A/A copies 1.000x / 1.001x; receipts/h100/pp-bench-q5k34t-a461eb3-20261205.jsonl.gz; bench/notes/mmvs-q5k.md). The arm configs/arm-mmvs-q5k-iq4xs-off.toml is the old list", -INFINITY, INFINITY, {"q4_k", "q6_k", "q8_0", "q4_0", "q5_k", "iq4_xs"}));
    v.push_back(make("kernels.prefill_f16_weights", &C::kernels, &KernelsSection::prefill_f16_weights, "CUDA: keep an f16 copy of each quantized 2-D matrix (2 bytes per weight, made at load) so the prefill GEMM reads it instead of dequantizing the matrix into scratch on every call (same values, same bytes out); measured pp512 1.47x, pp2048 1.11x on qwen3-8b q4_k_m (bench/notes/prefill-f16-weights.md)"));
    v.push_back(make("kernels.prefill_f16_reserve_mib", &C::kernels, &KernelsSection::prefill_f16_reserve_mib, "CUDA: an f16 prefill copy (kernels.prefill_f16_weights) is made only if at least this many MiB of device memory stay free after it (room for the KV cache and scratch); matrices past that point are dequantized per call as without the copy (same values), and the load logs a warning at the first matrix left without one", 0, 1 << 24));
    v.push_back(make("kernels.mmvs_split_k", &C::kernels, &KernelsSection::mmvs_split_k, "CUDA: the mmvs decode matvec serves a Q4_K/Q6_K/Q8_0 row longer than 4096 weights with 2 (up to 8192) or 4 warps, each summing part of the row (fixed order), instead of one warp walking it in several memory round trips (Q4_0 rows always one warp: measured slower split)"));
    v.push_back(make("kernels.mmvs_split_max_warps", &C::kernels, &KernelsSection::mmvs_split_max_warps, "CUDA decode matvec (mmvs) with kernels.mmvs_split_k: the most warps that share one row; rows of 65-128 tasks (4160-8192 weights) always take 2, longer rows (the 12288/25600-weight down projections) take this many (2 or 4). Each value is a fixed summation order per row length, the same at every m (decode == verify); the bits differ between the values. Default 2 (2026-12-02, interleaved arms, two runs): tg128 vs 4 1.028x / 1.026x qwen3-8b q4_k_m at depth 0, 1.022x / 1.021x at 4096, 1.026x at 16384, 1.006x qwen3-32b q4_k_m, 0.990x q8_0 (q4_0 rows never split); bench/notes/mmvs.md", 2, 4));
    v.push_back(make("kernels.mmvs_split_min_k", &C::kernels, &KernelsSection::mmvs_split_min_k, "CUDA decode matvec (mmvs) with kernels.mmvs_split_k: only rows of at least this many weights are split over warps (rounded up to whole 64-weight tasks; shorter rows take one warp). Another fixed summation order for the rows it moves, the same at every m (decode == verify). Default 5184 (thirty-fifth session): qwen3-32b's 5120-weight rows (q/k/v, gate/up, the head; 80 tasks, which split put two rounds on half of the first warp's lanes) on one warp each; qwen3-32b q4_k_m tg128 155.94 against 144.40 tok/s at 4160, 1.080x with an A/A copy at 1.001x (receipts/h200/pp-bench-sk33-e6aa55c-20261205.jsonl.gz), kernel-check --perf at the same commit: the Q4_K gate+up pairs at 25600x5120 45.7 against 52.1 us, the plain GLU 48.4 against 55.2, the Q6_K head 156.9 against 183.6; qwen3-8b's rows (4096 and 12288 weights) are not moved. 4160 (every row over 4096 weights, the earlier rule measured on qwen3-8b) is the arm configs/arm-mmvs-split-min-k-4160.toml; bench/notes/mmvs.md", 4160, 1073741824));
    v.push_back(make("kernels.mmvs_mixed_types", &C::kernels, &KernelsSection::mmvs_mixed_types, "CUDA decode matvec (mmvs) at one token: consecutive products of one input whose matrices differ in weight type (the q4_k_m mix's Q4_K q and k with a Q6_K v) share one launch, each row running its own type's code (the same bits as one launch per type). Pairs: Q4_K then Q6_K with the same warps per row; other runs keep one launch per type. Default true (2026-12-02, interleaved arms, qwen3-8b q4_k_m tg128, two runs): 1.012x / 1.010x / 1.015x at depth 0 / 4096 / 16384 against the arm turning it off, 0.997x / 1.012x / 1.009x as the arm turning it on; bench/notes/mmvs.md"));
    v.push_back(make("kernels.mmvs_min_blocks", &C::kernels, &KernelsSection::mmvs_min_blocks, "CUDA decode matvec (mmvs) at one token, plain matrices: 0 = the compiler's register choice; 6, 8 or 12 = the instance compiled for at least that many 4-warp CTAs per SM (fewer registers, more rows in flight per SM, perhaps spills); same bits. Default 6: measured tg128 1.005x qwen3-8b q4_k_m, 1.028x q8_0 (bench/notes/mmvs-register-cap.md)", 0, 12));
    v.push_back(make("kernels.mmvs_min_blocks_glu", &C::kernels, &KernelsSection::mmvs_min_blocks_glu, "CUDA decode matvec (mmvs) at one token, the fused gate+up+GLU launches: as kernels.mmvs_min_blocks (0, 6, 8 or 12); same bits. Default 6 with kernels.mmvs_cap_no_spill (Q4_K and Q4_0 capped; Q8_0, whose capped instance spills and lost 7%, not): tg128 vs no cap 1.014x qwen3-8b q4_k_m, 1.007x at depth 16384, 1.052x q4_0, 1.021x qwen3-32b; 8 lost 12% (bench/notes/mmvs-register-cap.md)", 0, 12));
    v.push_back(make("kernels.mmvs_cap_max_rows", &C::kernels, &KernelsSection::mmvs_cap_max_rows, "CUDA decode matvec (mmvs) at one token: a plain matrix with more rows than this (the output head: 151936 rows on qwen3) runs the compiler's register choice instead of kernels.mmvs_min_blocks; 0 = no limit. Same bits. Default 65536: tg128 vs 0, mean of two runs with the arms in opposite orders, 1.008x / 1.004x / 1.006x qwen3-8b q4_k_m at depth 0 / 4096 / 16384, 1.010x q4_0 (both runs), 1.00x q8_0 and qwen3-32b; single runs are within an arm-order effect of 1.5-2.5% (bench/notes/mmvs-register-cap.md)", 0, 1 << 30));
    v.push_back(make("kernels.mmvs_cap_no_spill", &C::kernels, &KernelsSection::mmvs_cap_no_spill, "CUDA: where the instance that kernels.mmvs_min_blocks[_glu] names for a weight type uses local memory (register spills, asked of the compiled kernel at start), the default instance runs instead (same bits either way). The capped instances measured so far lost wherever they spilled (bench/notes/mmvs-register-cap.md); at the default caps it keeps the Q8_0 GLU launches uncapped"));
    v.push_back(make("kernels.mmvs_cap_fallback", &C::kernels, &KernelsSection::mmvs_cap_fallback, "CUDA decode matvec (mmvs) at one token, with kernels.mmvs_cap_no_spill: where the instance that kernels.mmvs_min_blocks[_glu] names spills, the instance compiled for this many CTAs per SM runs if it does not spill (else the compiler's choice); 0 = no fallback, else 5, 6, 8 or 12. Same bits. Default 5 (at most 96 registers), the step the interleaved-activation Q4_K GLU fits without spilling (114 registers uncapped, spills at 6): tg128 vs 0 1.036x qwen3-32b q4_k_m, 1.005x qwen3-8b q4_k_m at depth 0 and 4096; kernel level the Q4_K GLU 22.75 -> 21.55 us (12288x4096), 58.98 -> 54.34 us (25600x5120) (bench/notes/mmvs-register-cap.md)", 0, 12));
    v.push_back(make("kernels.fuse_residual", &C::kernels, &KernelsSection::fuse_residual, "CUDA decode (the mmvs rows, m <= 8): the attention output and down projections add their result to the residual stream in the matvec's epilogue (one rounded f32 add of the same two values), so the next norm reads the stream alone instead of adding the delta and writing the stream back; the same bits (kernel-check mmvs_id mmvs_residual/*, CudaModels.ResidualAddAndNormSplitSameBytes). Default true: alone it measured 0.998x qwen3-8b q4_k_m, 1.035x q4_0, 0.989x q8_0 tg128, but it makes every decode norm an add-free one that kernels.norm_split can spread (bench/notes/norm-decode.md)"));
    v.push_back(make("kernels.norm_split", &C::kernels, &KernelsSection::norm_split, "CUDA decode RMSNorm without an add (the q8s-emitting norms; with kernels.fuse_residual every decode norm): blocks per row; each block sums the whole row's squares in the same order (the same bits) and quantizes and stores 1/norm_split of it, spreading the one-block norm's output half over several SMs. Default 8: with kernels.fuse_residual, tg128 vs neither 1.052x qwen3-8b q4_k_m (1.054x at depth 4096), 1.073x q4_0, 1.028x q8_0 (4: 1.048x / 1.046x / 1.069x / 1.033x; 2: 1.036x / 1.029x / 1.059x / 1.025x; bench/notes/norm-decode.md)", 1, 8));
    v.push_back(make("kernels.norm_bulk_load", &C::kernels, &KernelsSection::norm_bulk_load, "CUDA decode RMSNorm emitting the q8s planes (the norms before the q/k/v and gate/up matvecs and the output head): each block copies its row (up to 8192 columns, 16-byte aligned) into shared memory with one bulk copy (cp.async.bulk, completed on an mbarrier) after the PDL wait, instead of each thread loading its chunks. Why: the next matvec's blocks, resident beside the norm's, have their first weights requested before their own wait, and the norm's row loads queue behind them on the same SM (bench/notes/bulk-small-loads.md). The same values are read: the same bits (kernel-check mmvs_id rms_norm_q8s*_bulk*, CudaModels.SmallKernelBulkLoadSameBytes). Default true: tg128 qwen3-8b q4_k_m 1.007x alone, 1.010x with kernels.quantize_bulk_load at depth 0 and 4096, q4_0 1.010x, q8_0 1.002x (one call; the d0 timeline does not show the norm itself shorter)"));
    v.push_back(make("kernels.norm_defer", &C::kernels, &KernelsSection::norm_defer, "CUDA decode and verify rows (up to 8), the RMSNorms whose output only feeds matvecs (before q/k/v, gate/up and the output head; Backend::rms_norm_into_matvecs): the norm writes the q8s planes of x * w and per-warp partial sums of squares, with no row-wide sum, barrier or f32 output, and each mmvs launch reading those planes multiplies its dot products by 1 / sqrt(sum / n + eps) (MmvsParams::norm_ss). Mathematically the same product; the bits differ (a block's quants and f16 scale are those of x * w, not of the normed row), gated against the CPU oracle (kernel-check mmvs_id norm_defer/*, mmvs_norm_ss/*, CudaModels.NormDeferAgainstOracle). A consumer that cannot take the scale (a residual launch, another matvec kind, a GEMM) gets the norm computed in full first. Kernel level (defer30) 7.46 us against the split norm's 9.55 at 4096 columns. Verify batches (2 to 8 rows) take the same form (per-row partials, scaled m > 1 instances), so that decode == verify holds bit for bit with it on (CudaModels.NormDeferDecodeEqualsVerify, kernel-check mmvs_norm_ss_m3/*; H200 nd31c). Default true (forty-first session) for rows up to kernels.norm_defer_max_cols (4096) columns, once the whole GPU suite and the gates ran at it on (device phase fix41 on an H100, the same sm_90a code: CudaModels 58/58 with both flipped keys as the base configuration, kernel-check mmvs_rp_x3 36/36, mmvs_pair_rp 3/3, mmvs_rp 312/312; receipts/h100/kernel-check-fix41-d6f3b1f-20261205.jsonl.gz; on the H200 in s37a: the suite 59/59 at the defaults, reversed 0.960x / 0.974x / 0.991x at 0 / 4096 / 16384 keys, receipts/h200/pp-bench-s37a-7d9ab71-20261205.jsonl.gz) (thirty-sixth session, device phase s36d, interleaved arms with an A/A copy at 1.002x / 1.003x: qwen3-8b q4_k_m tg128 547.39 against 522.55 tok/s, 1.048x; q8_0 426.57 against 414.66, 1.029x; receipts/h200/pp-bench-s36d-4774b08-20261205.jsonl.gz); earlier 1.033x / 1.033x q4_k_m at 0 / 4096 keys, 1.059x q4_0 (nd31), but 0.985x / 0.977x qwen3-32b q4_k_m (nd31b / nd31c), whose 5120-column rows the bound leaves plain: the scaled matvecs take longer per wave of CTAs (every warp sums the partials and takes the root), which the 32B with its many waves pays more often than the norm saves (kernels.norm_defer_scale; bench/notes/norm-decode.md). The arm: configs/arm-norm-defer.toml"));
    v.push_back(make("kernels.norm_defer_max_cols", &C::kernels, &KernelsSection::norm_defer_max_cols, "With kernels.norm_defer: the deferred form only for rows of at most this many columns (the model's hidden size); wider rows get the norm in full (the bits of kernels.norm_defer = false). 0: any width. Why a width: the deferred norm's gain is the norm's own time, its cost is paid per wave of CTAs by every scaled launch, and the launches of a wider model have more waves: tg128 qwen3-8b (4096 columns, 2-5 waves per launch) 1.033-1.059x with it, qwen3-32b (5120, 6.5-9.7 waves) 0.977-0.990x (nd31 / nd31b / nd32b; bench/notes/norm-decode.md). Default 4096: only those two widths are measured, so the bound is the widest that won", 0, 1073741824));
    v.push_back(make("kernels.norm_defer_scale", &C::kernels, &KernelsSection::norm_defer_scale, "With kernels.norm_defer: who turns the deferred norm partial sums of squares into the scale 1 / sqrt(sum / n + eps). matvecs: every warp of every scaled launch sums the partials (a 5-level xor tree) and takes the root in its epilogue. norm: the norm runs as one block per row (kernels.norm_split x 128 threads doing the split blocks work), sums the same partials in the same order and writes the scale, and the launches only multiply (MmvsParams::norm_ss_final): the same bits (kernel-check mmvs_id norm_defer/*/scale, mmvs_norm_ss*/final). Default matvecs. norm measured on qwen3-8b q4_k_m (nd32, 2026-12-04): tg128 1.050x against arm-base where matvecs gave 1.057x in the same call (the norm 0.3 us longer per call, the launches back to their unscaled times), 1.055x q4_0, 1.030x q8_0; qwen3-32b, where matvecs loses, not yet run (bench/notes/norm-decode.md)", -INFINITY, INFINITY, {"matvecs", "norm"}));
    v.push_back(make("kernels.quantize_bulk_load", &C::kernels, &KernelsSection::quantize_bulk_load, "CUDA decode, the q8s quantization of a one-row activation (the GLU output before the down projection): each 256-value block of the kernel copies its values into shared memory with one bulk copy after the PDL wait instead of one load per thread (rows of n % 256 == 0, 16-byte aligned). The same values: the same bytes (kernel-check mmvs quantize_q8s*_bulk*, CudaModels.SmallKernelBulkLoadSameBytes). Default true: tg128 qwen3-8b q4_k_m 1.005x alone, 1.010x with kernels.norm_bulk_load (bench/notes/bulk-small-loads.md)"));
    v.push_back(make("kernels.mmvs_preload", &C::kernels, &KernelsSection::mmvs_preload, "CUDA decode matvec (mmvs): the weights of each lane's first tasks are requested before the PDL wait, while the previous kernel drains (false: after the wait, a diagnostic: tg128 0.90x qwen3-8b q4_k_m, 0.93x q4_0 and q8_0, 0.89x qwen3-32b). Same bits (bench/notes/mmvs-x-prefetch.md)"));
    v.push_back(make("kernels.mmvs_preload_residual", &C::kernels, &KernelsSection::mmvs_preload_residual, "With kernels.mmvs_preload: the one-token and verify launches with the residual add (the o projection, launched during the attention, and the down projection) request their first tasks' weights before the PDL wait too. false: those launches request them after the wait. A diagnostic (same bits): on the H200 the d0 attention takes 7.23 us per layer on qwen3-8b q8_0 against 6.03 on q4_k_m while the o projection's whole matrix (17.8 MB at Q8_0) is requested during it; requesting it after the wait instead loses (forty-third session, device phase pr42 on an H100, interleaved arms with an A/A copy at 0.982x / 0.999x: tg128 qwen3-8b q8_0 0.944x, q4_k_m 0.950x; receipts/h100/pp-bench-pr42-e0ca606-20261205.jsonl.gz, bench/notes/decode-persistent-plan.md). Default true. The arm: configs/arm-mmvs-preload-residual-off.toml"));
    v.push_back(make("kernels.mmvs_act_il", &C::kernels, &KernelsSection::mmvs_act_il, "CUDA decode at one token: the quantized (q8s) activation that the mmvs matvecs read is written by its producers (the norms, the attention output, the activation quantizer) in the interleaved order of kernels/matvec/q8s_order.h, so each activation load of a warp reads one contiguous 512-byte run instead of 32 pieces at a 64-byte stride (the one-token Q4_K/Q6_K matvecs were L1-bound on those loads, bench/notes/mmvs-act-il.md). Same values in another order: the same bits (CudaModels.MmvsActIlSameBytes). Verify batches keep the plain order. Default true: tg128 vs false 1.079x qwen3-8b q4_k_m (1.073x at depth 4096), 1.085x q4_0, 1.070x q8_0, 1.026x qwen3-32b q4_k_m (bench/notes/mmvs-act-il.md)"));
    v.push_back(make("kernels.mmvs_act_il_q6k", &C::kernels, &KernelsSection::mmvs_act_il_q6k, "CUDA decode at one token, with kernels.mmvs_act_il: when the activation is quantized for a launch of Q6_K rows only (the Q6_K down projections of the q4_k_m mix, every down of a q6_k file), it is written in the Q6_K variant of the interleaved order (kernels/matvec/q8s_order.h il_q6k), in which each warp load of the Q6_K tasks is one contiguous 512-byte run (in the interleaved order it touches two runs at half use). Activations written by the norms and the attention keep the interleaved order, so the output head and o projections are unchanged. Same values in another order: the same bits (CudaModels.MmvsActIlSameBytes). Default false: measured neutral, tg128 1.006x qwen3-8b q4_k_m (base sd 0.27%), 1.000x at depth 4096, 1.002x qwen3-32b q4_k_m; the 4096x12288 down 0.90x time at kernel level (bench/notes/mmvs-act-il.md)"));
    v.push_back(make("kernels.mmvs_row_pairs", &C::kernels, &KernelsSection::mmvs_row_pairs, "CUDA decode matvec (mmvs) at one token with kernels.mmvs_act_il: the weight types (q4_k, q6_k, q8_0, q4_0, q5_k, iq4_xs) whose plain launches (the o and down projections, separate q/k/v launches, the output head) serve two rows per warp (r and r + n/2) through the GLU launches' two-row loop: twice the weight bytes in flight per lane, one activation load for both rows' tasks, half the CTAs. Each row gets the same operations in the same order: the same bits (kernel-check mmvs_id mmvs_rp/*, CudaModels.MmvsRowPairsSameBytes). Default [\"q4_k\", \"q8_0\", \"q6_k\"] (the Q6_K pairs one task per row: kernels.mmvs_row_pairs_one_task). Q4_K and Q8_0 (2026-12-04, interleaved arms with an A/A copy): tg128 qwen3-8b q4_k_m 1.023x / 1.026x at 0 / 4096 keys, q8_0 1.021x and 1.023x (two calls); reversed (the off form as the arm, final28) 1.013x / 1.022x / 1.016x q4_k_m at 0 / 4096 / 16384 keys, 1.015x q8_0, but 0.994x qwen3-32b q4_k_m (its 8192- and 25600-weight rows); q4_0 0.993x (uncapped and at 5) and 0.981x (at 6): left out; every type with Q4_K capped at 5: q4_k_m 0.965x (the Q6_K down and output head slower at kernel level, Q4_K / Q8_0 o and down faster uncapped) (bench/notes/mmvs-row-pairs.md)", -INFINITY, INFINITY, {"q4_k", "q6_k", "q8_0", "q4_0", "q5_k", "iq4_xs"}));
    v.push_back(make("kernels.mmvs_min_blocks_rp", &C::kernels, &KernelsSection::mmvs_min_blocks_rp, "CUDA decode matvec (mmvs), the row-pair launches (kernels.mmvs_row_pairs): 0 = the compiler's register choice, 5 or 6 = the instance compiled for at least that many 4-warp CTAs per SM; where that instance spills (with kernels.mmvs_cap_no_spill), uncapped. Same bits. Default 0 (rp28: the Q4_K o and down 9.52 / 14.26 us uncapped, 10.43 / 15.17 at 5; bench/notes/mmvs-row-pairs.md)", 0, 6));
    v.push_back(make("kernels.mmvs_min_blocks_rp_head", &C::kernels, &KernelsSection::mmvs_min_blocks_rp_head, "CUDA decode matvec (mmvs), the row-pair launches of matrices with more rows than kernels.mmvs_cap_max_rows (the output head): as kernels.mmvs_min_blocks_rp (0, 5 or 6; uncapped where that instance spills). Same bits. Default 6 (gp30t, 2026-12-04, interleaved arms with an A/A copy 1.002x / 1.003x): tg128 qwen3-8b q4_k_m 1.007x / 1.007x at 0 / 4096 keys against 0 (uncapped, as the plain head); kernel level (rpk30) the one-task pairs at 6 took the Q6_K head 151936x4096 118.3 us against 126.1 uncapped, 151936x5120 185.3 against 208.0, the Q4_K 151936x5120 138.7 against 152.8 (bench/notes/mmvs-row-pairs.md)", 0, 6));
    v.push_back(make("kernels.mmvs_row_pairs_one_task", &C::kernels, &KernelsSection::mmvs_row_pairs_one_task, "CUDA decode matvec (mmvs): of the weight types in kernels.mmvs_row_pairs (others listed here have no effect), the ones whose row-pair launches hold one task per row in flight per lane instead of two: the plain launch's registers and bytes in flight for two rows, one activation load for both rows' tasks (the paired Q6_K instance holds 135 registers with two). Same bits. Default [\"q6_k\"] (rpone29, 2026-12-04, interleaved arms with an A/A copy 1.003x / 0.998x): tg128 qwen3-8b q4_k_m 1.022x / 1.014x at 0 / 4096 keys against the Q6_K rows plain (1.012x / 1.006x capped at 6); Q4_K one-task 0.962x / 0.948x qwen3-8b q4_k_m but 1.015x qwen3-32b (see kernels.mmvs_row_pairs_one_task_min_k); Q4_0 pairs one-task 0.989x (bench/notes/mmvs-row-pairs.md)", -INFINITY, INFINITY, {"q4_k", "q6_k", "q8_0", "q4_0", "q5_k", "iq4_xs"}));
    v.push_back(make("kernels.mmvs_row_pairs_one_task_min_k", &C::kernels, &KernelsSection::mmvs_row_pairs_one_task_min_k, "CUDA decode matvec (mmvs): the row-pair launches of the kernels.mmvs_row_pairs types not in kernels.mmvs_row_pairs_one_task hold one task per row in flight (as those do) for rows of at least this many weights, two for shorter rows; 0 = two at every length. Same bits. Default 8192 (rpk30b, 2026-12-04, interleaved arms with an A/A copy 0.999x-1.000x): tg128 against 0 1.021x qwen3-8b q8_0 (its 12288-weight downs), 1.001x / 1.003x qwen3-8b q4_k_m at 0 / 4096 keys; 16384 (the 25600-weight downs only) 1.013x qwen3-32b q4_k_m, every Q4_K row one task 1.015x there (rpone29) but 0.962x / 0.948x qwen3-8b q4_k_m (its 4096-weight o rows; the kernel times favour one task at every shape, rpk30; bench/notes/mmvs-row-pairs.md)", 0, 1073741824));
    v.push_back(make("kernels.mmvs_glu_one_task", &C::kernels, &KernelsSection::mmvs_glu_one_task, "CUDA decode matvec (mmvs) at one token with kernels.mmvs_act_il: the weight types whose fused gate+up+GLU launches hold one task per matrix in flight per lane instead of two (the plain launch's registers for the gate and up rows), capped as the GLU launches (kernels.mmvs_min_blocks_glu, else kernels.mmvs_cap_fallback where that spills, else uncapped; 5 or 6 only). For the types whose two-task GLU spills at every cap and runs uncapped at 3-4 CTAs per SM (Q8_0 at ~120 registers, Q5_K 144, IQ4_XS 155): the same task slots per SM at 6 CTAs, twice the warps. The GLU row pairs (kernels.mmvs_glu_pairs) take precedence. Same bits (kernel-check mmvs_id mmvs_glu1t/*). Default [\"q8_0\", \"q5_k\", \"iq4_xs\"]: Q8_0 since the thirty-fifth session (device phase g1t34: qwen3-8b q8_0 tg128 411.88 against 408.52 tok/s, 1.008x with an A/A copy at 0.998x and disjoint ranges, receipts/h200/pp-bench-g1t34-29cd8f1-20261205.jsonl.gz), Q5_K and IQ4_XS since the forty-fourth (q5k34t on an H100: with both types on mmvs, the one-task GLU 420.1 against 406.6 tok/s on qwen3-8b q5_k_m, 1.033x, and 417.1 against 390.3 on iq4_xs, 1.069x; receipts/h100/pp-bench-q5k34t-a461eb3-20261205.jsonl.gz); Q4_K measured twice within the noise and left out. [] is the arm configs/arm-mmvs-glu-one-task-off.toml; bench/notes/mmvs-q5k.md", -INFINITY, INFINITY, {"q4_k", "q6_k", "q8_0", "q4_0", "q5_k", "iq4_xs"}));
    v.push_back(make("kernels.moe_device_route", &C::kernels, &KernelsSection::moe_device_route, "CUDA MoE FFN of batches of up to 8 tokens without expert biases (decode, speculative verify): the experts picked by a router kernel on the device (backend::moe_route's rule: f64 probabilities, ties to the lower id) and each slot's gate / up / down product read through its expert id by the routed plain matvec (one launch per matrix for all slots), instead of the router logits copied to the host and one launch per (expert, matrix). No host round trip, so a one-token MoE step is captured into the decode-step CUDA graph. Larger batches and expert biases (gpt-oss) stay host-routed. Routing equal to the CPU oracle's (kernel-check section moe route/*); the expert products are the plain matvec's, not the grouped host-routed path's GEMMs. Default true (thirty-sixth session, device phase moe35, arms one at a time: qwen3-30b-a3b q8_0 tg128 322.60 (322.39..322.64) against host-routed 67.82 (57.34..70.44) tok/s, 4.76x; llama.cpp 283.2; receipts/h200/pp-bench-moe35b-e5c2745-20261205.jsonl.gz; CudaModels.Qwen3Moe_Q4_K_M both ways within the logit bound). false is the arm configs/arm-moe-host-route.toml; bench/notes/moe-device-route.md"));
    v.push_back(make("kernels.moe_routed_v2", &C::kernels, &KernelsSection::moe_routed_v2, "With kernels.moe_device_route: the routed expert matvecs (gate, up, down of every slot) on the v2 decode matvec (kernels/matvec/matvec_v2.h: each warp's row read as aligned 16-byte windows of the GGUF bytes through shared memory, the next window requested before the current one is decoded) instead of the plain one (2-byte loads of the same bytes), for the types v2 has (Q4_K, Q6_K, Q8_0, Q4_0; others keep the plain kernel). The same per-lane chunk order and shuffle tree: the same bits (kernel-check moe routed_matvec_v2/*). Why: the plain routed matvec runs at ~0.25 of the bandwidth at qwen3-30b-a3b's expert shapes (Q8_0 768x2048 x 8 slots 10.75 us, device phase moe35), the largest part of that model's 3.1 ms decode step. Default false: measured slower (forty-third session, device phase moe37 on the H200, arms one at a time): qwen3-30b-a3b q8_0 tg128 282.36 against 323.60 tok/s (0.873x), with kernels.moe_glu_q8_1 287.19 against 330.12; q4_k_m with both 292.80 against 332.59 (0.880x); kernel level the v2 routed matvec 13.98 against 13.15 us (Q8_0 768x2048 x 8 slots), 18.18 against 13.82 (2048x768); receipts/h200/pp-bench-moe37-79302c4-20261205.jsonl.gz, bench/notes/moe-device-route.md"));
    v.push_back(make("kernels.moe_glu_q8_1", &C::kernels, &KernelsSection::moe_glu_q8_1, "With kernels.moe_device_route and quantized down experts: the SiLU / GELU GLU of the routed gate and up outputs writes the down projection's q8_1 input itself (launch_glu's q8_1 output: the quantizer's block rule on the same values, so the same bytes) instead of an f32 GLU output and a separate quantize launch: one launch less per MoE layer (48 per qwen3-30b-a3b step, none of them PDL). Default true (forty-third session): qwen3-30b-a3b q8_0 tg128 330.12 against 323.60 tok/s (1.020x, beyond the base's spread of 321.59..324.47; device phase moe37 on the H200, arms one at a time, receipts/h200/pp-bench-moe37-79302c4-20261205.jsonl.gz); gates: CudaModels.Qwen3MoeRoutedV2SameBytes (H100, receipts/h100/logs/test_backend_cuda_gpu-moe-9-6a1bd6b-20261205.log.gz). The arm: configs/arm-moe-glu-q8-1-off.toml (bench/notes/moe-device-route.md)"));
    v.push_back(make("kernels.moe_gate_up_one_launch", &C::kernels, &KernelsSection::moe_gate_up_one_launch, "With kernels.moe_device_route, at decode and verify batches (up to 8 tokens): the gate and up expert matvecs of a MoE layer in one routed launch (MatvecParams::w2 / y2: the second half of the grid's slots on the up stack) instead of two, where both stacks have one quantized type and shape and kernels.moe_routed_v2 does not take them. The same rows' bits (kernel-check moe routed_pair/*: each matrix byte-identical to per-slot plain launches; CudaModels.Qwen3MoeGateUpOneLaunchSameBytes). One launch less per MoE layer (48 on qwen3-30b-a3b, whose routed launches have no PDL) and twice the CTAs in the launch. Default false: built in the forty-fourth session, not yet measured (device phase moe44; the arm configs/arm-moe-gate-up-one-launch.toml)"));
    v.push_back(make("kernels.moe_device_route_prefill", &C::kernels, &KernelsSection::moe_device_route_prefill, "With kernels.moe_device_route: batches over 8 tokens (prefill) routed on the device too, for quantized experts without biases: the router kernel, then one block groups the slots by expert (launch_moe_group: each expert's slots in slot order, eight to a group) and each expert matrix is one grouped launch (the plain routed matvec reading an expert row once for up to eight slots, each slot's row the bits of the one-token routed form), the GLU, the combine: ~9 launches per MoE layer and no host round trip, instead of the host-routed form's router logits copied to the host and one gather / GEMM / GLU launch per (expert, matrix), ~1000 launches per layer at 128 experts. Another numeric class than the host-routed GEMMs (q8_1 activations and int8 dot products, as the decode path), within the GPU test's bound of the CPU oracle (CudaModels.Qwen3Moe_Q4_K_M_DevicePrefill). Default true (forty-third session): qwen3-30b-a3b pp512 on the H200 (device phase moe37 / moe37b, arms one at a time) q8_0 2756 against 1845 tok/s host-routed (1.49x), q4_k_m 2900 against 2506 (1.16x); llama.cpp 11317 / 9522, so still 0.24x / 0.30x of it (receipts/h200/pp-bench-moe37-79302c4-20261205.jsonl.gz, pp-bench-moe37b-79302c4-20261205.jsonl.gz); gates kernel-check moe group/* and grouped_matvec/* (H200, moe37), CudaModels.Qwen3Moe_Q4_K_M_DevicePrefill (H100). The arm: configs/arm-moe-host-route-prefill.toml (bench/notes/moe-device-route.md)"));
    v.push_back(make("kernels.moe_grouped_mma", &C::kernels, &KernelsSection::moe_grouped_mma, "With kernels.moe_device_route_prefill: the grouped expert launches on the int8 tensor cores for Q8_0, Q4_K, Q6_K, Q4_0, Q5_K and IQ4_XS experts (mma m16n8k32: per 32-weight block, decoded by the shared block decoder, the exact integer dot products of 16 rows and a group's up to 8 slots, two MMAs for Q6_K's 16-weight scales; each block scaled as the dp4a form scales it, the blocks summed in order) instead of the dp4a grouped matvec (~20-60x fewer instructions per weight byte). Another summation order: not the decode path's bits (prefill only), within 1e-5 of f64 (kernel-check moe grouped_mma/*) and within the GPU test's bound of the CPU oracle (CudaModels.Qwen3Moe_Q8_0_DevicePrefillMma). Default false: measured slower than the dp4a grouped form (forty-third session, device phase moe37 / moe37b on the H200): qwen3-30b-a3b pp512 q8_0 1926 against 2756 tok/s, q4_k_m 2195 against 2900; kernel level Q8_0 768x2048 at 512 tokens 2375 against 1228 us, 2048x768 1305 against 1722 (receipts/h200/kernel-check-perf-moe37-79302c4-20261205.jsonl.gz; bench/notes/moe-device-route.md)"));
    v.push_back(make("kernels.mmvf_v2", &C::kernels, &KernelsSection::mmvf_v2, "CUDA decode matvec of float weights (F16, BF16, F32 models; m <= 8): the mmvf2 kernel (kernels/matvec/mmvf.h: kernels.mmvf_rows_per_warp rows per warp sharing each activation load, two 8-weight chunks per row in flight per lane, a programmatic dependent launch whose first weights are requested before the dependency wait, and the fused gate+up+GLU and residual-add epilogues the quantized types have) instead of the first float matvec (one row per warp, one chunk in flight, a plain launch, separate GLU and add kernels). Another summation order per row (an FMA chain per lane in element order, then the xor tree), the same at every m and rows per warp (kernel-check section mmvf). Default false: built in the thirty-third session, not yet measured on the H200 (llama.cpp's f16 tg128 on qwen3-8b: 201 tok/s, 0.63 of the roofline; bench/notes/mmvf2.md)"));
    v.push_back(make("kernels.mmvf_rows_per_warp", &C::kernels, &KernelsSection::mmvf_rows_per_warp, "CUDA mmvf2 (kernels.mmvf_v2): output rows per warp, 1, 2 or 4; the rows of a warp share one activation load per 8-weight chunk. Same bits at every value. Default 2 (not yet measured; bench/notes/mmvf2.md)", 1, 4));
    v.push_back(make("kernels.mmvs_row_pairs_verify", &C::kernels, &KernelsSection::mmvs_row_pairs_verify, "CUDA decode matvec (mmvs) at 2 to 8 rows (verify batches, small prefills) with kernels.mmvs_row_pairs: the plain launches of the listed types (one matrix, or with kernels.mmvs_row_pairs_qkv the q/k/v launch of one type) take the row pairs too, uncapped, two tasks per row in flight, in the plain activation order. Why: a task's 48 weight bytes (Q4_K) are loaded once for all rows, but its 80 activation bytes once per row and weight row, so verify batches cost ~m one-token steps (H100, qwen3-8b q4_k_m: 1.67x at 2 rows, 3.04x at 5; bench/notes/speculative.md); paired, each activation load serves two weight rows. Each row gets the unpaired launch's operations in its order: the same bits (kernel-check mmvs_id mmvs_rpm/*; decode == verify unchanged). Default true (forty-second session, device phase rpv41 on an H100, the same sm_90a code; no H200 was lent): kernel-check mmvs_id mmvs_rpm* 210/210, the GPU suite at it on (VerifyRowsEqualDecodeSteps and the speculative tests among them), qwen3-8b q4_k_m verify batches 1.109x / 1.109x / 1.142x at 2 / 3 / 5 rows and depth 0, 1.128x / 1.106x / 1.122x at 4096 keys (interleaved arms, A/A copy 0.996x-1.007x; one rows are untouched, 9 rows take the GEMM); receipts/h100/pp-bench-rpv41-a6cfa22-20261205.jsonl.gz; on the H200 (forty-third session, phase h43, the reversed arm at 0.873x / 0.890x / 0.859x at 2 / 3 / 5 rows and depth 0, 0.876x / 0.913x / 0.883x at 4096 keys, A/A 0.996x-1.002x, 1 and 9 rows 0.998x-1.003x: the pairs 1.12-1.16x; receipts/h200/pp-bench-h43-79302c4-20261205.jsonl.gz). The reversed arm: configs/arm-mmvs-row-pairs-verify-off.toml"));
    v.push_back(make("kernels.mmvs_row_pairs_qkv", &C::kernels, &KernelsSection::mmvs_row_pairs_qkv, "CUDA decode matvec (mmvs) at one token with kernels.mmvs_row_pairs: the q/k/v launches take the row pairs too, each matrix paired within itself (rows r and r + n/2; every row count even): those of one type in that list where its row-pair cap is 0 (uncapped instances only), and the mixed Q4_K + Q6_K launch (kernels.mmvs_mixed_types) in its compiled form, Q4_K rows two tasks per row in flight and Q6_K rows one (the default kernels.mmvs_row_pairs_one_task), uncapped. Each row gets the same operations in the same order: the same bits (kernel-check mmvs_id mmvs_rp_x3/*, mmvs_pair_rp/*, CudaModels.MmvsRowPairsSameBytes). Why: the o projection's paired launch (one wave, all of its rows requested before its PDL wait) runs at ~0.9 of its bytes' floor, the q/k/v launches (two waves at 4 rows per CTA) at ~0.6. Default true (forty-first session), once its kernel-check gates (mmvs_rp_x3/*, whose refusal check was too strict on the H200 in s36d, fixed) and the whole GPU suite ran at it on (device phase fix41 on an H100, the same sm_90a code: CudaModels 58/58, mmvs_rp_x3 36/36, mmvs_pair_rp 3/3, mmvs_rp 312/312; on the H200 in s37a: the suite 59/59 at the defaults, reversed 0.992x / 0.997x / 0.982x at 0 / 4096 / 16384 keys and 0.999x on qwen3-32b, receipts/h200/pp-bench-s37a-7d9ab71-20261205.jsonl.gz); measured (thirty-sixth session, device phase s36d, interleaved arms with an A/A copy at 1.002x / 1.003x): qwen3-8b q4_k_m tg128 538.48 against 522.55 tok/s, 1.030x; q8_0 417.61 against 414.66, 1.007x; receipts/h200/pp-bench-s36d-4774b08-20261205.jsonl.gz). The arm: configs/arm-mmvs-row-pairs-qkv.toml (bench/notes/mmvs-row-pairs.md)"));
    v.push_back(make("kernels.mmvs_glu_pairs", &C::kernels, &KernelsSection::mmvs_glu_pairs, "CUDA decode matvec (mmvs) at one token with kernels.mmvs_act_il: the weight types whose fused gate+up+SiLU launches serve two output rows per warp (r and r + n/2) on rows of at least kernels.mmvs_glu_pairs_min_k weights: per round a lane loads one task of each of the four rows (gate and up of both), as many loads in flight as the GLU's two tasks per matrix, and one activation load for the four instead of for two; half the CTAs. Capped as the GLU launches (kernels.mmvs_min_blocks_glu, else kernels.mmvs_cap_fallback where that spills, else uncapped; 5 or 6 only). Each row gets the GLU's operations in its order: the same bits (kernel-check mmvs_id mmvs_gp/*, CudaModels.MmvsRowPairsSameBytes). Default [\"q4_k\", \"q4_0\"] (2026-12-04, interleaved arms with an A/A copy): Q4_K tg128 qwen3-32b q4_k_m 1.016x (gp30t, A/A 0.999x), reversed 0.985x (final30b, A/A 1.001x); qwen3-8b q4_k_m (4096-weight rows) 0.999x / 0.990x at 0 / 4096 keys, hence the row-length floor; Q4_0 qwen3-32b q4_0 1.026x (gp30q, but its A/A copy drifted to 1.012x: 1.020x against the mean of the two, not yet reversed); kernel level (gp30) Q4_K 53.86 us against the GLU's 55.54 at 25600x5120, Q4_0 45.15 against 46.83, Q8_0 84.59 against 81.94 at the Q4_K cap (uncapped 73.41 against 70.48), so Q8_0 is left out (bench/notes/mmvs-row-pairs.md)", -INFINITY, INFINITY, {"q4_k", "q6_k", "q8_0", "q4_0", "q5_k", "iq4_xs"}));
    v.push_back(make("kernels.mmvs_glu_pairs_min_k", &C::kernels, &KernelsSection::mmvs_glu_pairs_min_k, "CUDA decode matvec (mmvs): the kernels.mmvs_glu_pairs launches run only on rows of at least this many weights (shorter rows: the GLU launch, one row per warp); 0 = every length. Default 5120: the pairs won on qwen3-32b's 5120-weight gate/up rows (1.016x, gp30t) and lost on qwen3-8b's 4096-weight rows (0.999x / 0.990x at 0 / 4096 keys). The reading, as for the one-task plain pairs (kernels.mmvs_row_pairs_one_task_min_k), consistent with a d0 timeline (the pairs' launch 1.15 us longer per call in the step, equal in isolation) but not shown: at 4096 weights a GLU lane holds its whole share of the row in one round requested before the PDL wait, a pair lane half of it, and pays a weight round trip after the wait (bench/notes/mmvs-row-pairs.md)", 0, 1073741824));
    v.push_back(make("kernels.mmvs_interleave", &C::kernels, &KernelsSection::mmvs_interleave, "CUDA: the split-plane copies store each row's 64-weight tasks interleaved in groups of 32, so every 16-byte weight load of a warp reads one contiguous 512-byte run (false: blocks in GGUF order, Q4_K read in place)"));
    v.push_back(make("kernels.fuse", &C::kernels, &KernelsSection::fuse, "CUDA: fused decode ops (one activation quantization shared by the matmuls of one input, emitted by the norm or attention kernel before it; gate+up+GLU in one matvec; q/k/v in one launch)"));
    v.push_back(make("kernels.fuse_kv_append", &C::kernels, &KernelsSection::fuse_kv_append, "CUDA decode: the q/k norm + RoPE kernel also appends K and V to the cache (one launch fewer per layer; same bytes)"));
    v.push_back(make("kernels.attn_q8_scores", &C::kernels, &KernelsSection::attn_q8_scores, "CUDA decode attention on a q8_0 K cache: quantize q per 32 elements (int8, f32 scale) and take each score as exact int8 dot products per K block scaled in f32 (llama.cpp's numeric class for quantized K), instead of f32 products of the dequantized keys; not bit-identical to that path; measured 1.02-1.05x end to end, 1.33x together with attn_v_stage at depth 16384 (bench/notes/attn-decode.md). Taken only on layers whose attention scale is at most 1.01 / sqrt(head_dim) (every llama / qwen layer): a larger scale multiplies q's int8 rounding into the scores (gemma4: scale 1 on RMS-normed heads; its GPU test was 0.084 off the oracle with every other decode lever off in turn, thirty-fifth session, and the int8 scores are the suspect: simulated, they move the attention output by up to 10-15% where two keys nearly tie at that scale, bench/notes/attn-decode.md; those layers take the f32 products)"));
    v.push_back(make("kernels.attn_v_stage", &C::kernels, &KernelsSection::attn_v_stage, "CUDA decode attention (head_dim 128, q8_0 K, q5_1 V): each warp copies its 32-key tile of V into shared memory with cp.async before computing the scores, so the V loads overlap the K loads and the score arithmetic (same values and order: bit-identical); measured 1.10x (d0) to 1.24x (depth 16384) end to end on qwen3-8b q4_k_m"));
    v.push_back(make("kernels.attn_prefill_staged", &C::kernels, &KernelsSection::attn_prefill_staged, "CUDA prefill attention (tensor cores): the visible K/V rows are dequantized to f16 once per call and streamed through a two-stage cp.async pipeline with ldmatrix fragments (false: the older mma kernel that dequantizes every tile in every head's block); same precision class (Q, K, V, P in f16, f32 sums), not the same bits"));
    v.push_back(make("kernels.gemm_x_reuse", &C::kernels, &KernelsSection::gemm_x_reuse, "CUDA prefill GEMM: the f16 (bf16) rounding of an input is kept and reused by the next GEMMs on the same input (q, k, v; gate, up) until anything writes memory again (false: every GEMM converts its input itself); same bytes either way"));
    v.push_back(make("kernels.attn_rope_fold", &C::kernels, &KernelsSection::attn_rope_fold, "CUDA decode (one token; int8 scores with V staged: q8_0 K, q5_1 V, head_dim 128, 4 or 8 query heads per kv head): the split attention kernel does the q/k head norm + RoPE + K/V append itself (every block prepares its query heads; the block whose keys end at the new position prepares the new key and value, writes them to the caches and takes that key from those bytes), one launch fewer per layer; the same bytes (kernel-check fused attn_decode_rope/*, CudaModels.AttnRopeFoldSameBytes). Default true: tg128 vs off (interleaved arms, 2026-12-02) 1.028x qwen3-8b q4_k_m at depth 0 and 4096, 1.033x at 16384, 1.003x qwen3-32b q4_k_m, but 0.980x qwen3-8b q8_0 (configs/arm-attn-rope-fold-off.toml; bench/notes/attn-decode.md)"));
    v.push_back(make("kernels.attn_pv_mma", &C::kernels, &KernelsSection::attn_pv_mma, "CUDA decode attention (int8 scores with V staged: q8_0 K, q5_1 V, head_dim 128, 4 or 8 query heads per kv head): each warp's 32-key tile of P x V on tensor cores (mma m16n8k16; the probabilities and the dequantized V rounded to f16, f32 accumulation) instead of the f32 FFMA sweep with a shuffle per key and head; another numeric class (llama.cpp's tensor-core decode attention's), gated by tolerance (kernel-check attn_decode_pv16/*), decode == verify bit for bit. Default true: tg128 vs off (interleaved arms, 2026-12-02) 1.027x / 1.039x / 1.054x qwen3-8b q4_k_m at depth 0 / 4096 / 16384, 1.020x qwen3-32b q4_k_m at 4096 (configs/arm-attn-pv-mma-off.toml; bench/notes/attn-decode.md)"));
    v.push_back(make("kernels.attn_f16_mma", &C::kernels, &KernelsSection::attn_f16_mma, "CUDA decode attention on an f16 K and V cache (llama.cpp's default cache type), head_dim 128, 1 to 8 query heads per kv head: scores and P x V on tensor cores (mma m16n8k16, f32 accumulation; q and the probabilities rounded to f16) over 16-key tiles of K and V staged in shared memory by cp.async and read as fragments with ldmatrix, instead of the f32 per-lane score loop and shuffle-per-key V sweep; another numeric class (llama.cpp's f16 tensor-core decode attention's), gated by tolerance (kernel-check attn_decode_f16mma/*), decode == verify bit for bit (kernels/attn/attn_decode_mma.cu)"));
    v.push_back(make("kernels.attn_fold_prefetch", &C::kernels, &KernelsSection::attn_fold_prefetch, "CUDA decode attention with kernels.attn_rope_fold and kernels.attn_pv_mma taken, 4 query heads per kv head: each warp requests its first 32-key tile (the V slices and the keys' q8_0 head slices, by cp.async into shared memory) before the dependency wait, so that DRAM round trip overlaps the previous kernel's tail and the q prologue; only rows below the new position are read early (the new key and value come from the kernel's own copies); same bytes (kernel-check fused attn_decode_rope/*_pre). Default true: tg128 vs off (interleaved arms, 2026-12-02) 1.011x / 1.027x / 1.008x qwen3-8b q4_k_m at depth 0 / 4096 / 16384, 1.027x qwen3-8b q8_0 (configs/arm-attn-fold-prefetch-off.toml; bench/notes/attn-decode.md)"));
    v.push_back(make("kernels.attn_fold_k_stage", &C::kernels, &KernelsSection::attn_fold_k_stage, "CUDA decode attention where kernels.attn_fold_prefetch is taken: every later 32-key tile's q8_0 K head slices are copied into shared memory too (coalesced cp.async, each requested while the tile before it is finished) and scored from there, instead of one key row per lane from global memory (rows past 128 keys per split: depth above ~8192 keys). The same words in the same order (the same bytes). Default true (2026-12-02, interleaved arms, qwen3-8b q4_k_m tg128): 1.026x at depth 16384, 0.997x at 4096 (one tile per warp there: the same kernel path but for the template); bench/notes/attn-decode.md"));
    v.push_back(make("kernels.attn_softmax_interleave", &C::kernels, &KernelsSection::attn_softmax_interleave, "CUDA decode attention where kernels.attn_fold_k_stage is taken (NeoX pairs): each 32-key tile's online softmax steps the query heads' shuffle trees side by side (the heads' maxima per butterfly step, then their sums) instead of one head's max and sum trees after another, which ncu showed serialized (the softmax ~20% of the depth kernel's stall samples at 16512 keys, fac5d51, mostly waiting on shuffles; the kernel is bound by each warp's dependent latency, not by issue). The same operations per head in the same order: the same bits (kernel-check fused attn_decode_rope/*_si, CudaModels.AttnSoftmaxInterleaveSameBytes). Default true (2026-12-03, interleaved arms vs false, qwen3-8b q4_k_m tg128: 1.016x and, on a second call, 1.011x at depth 16384 (two tiles per warp, 4 heads per block); 1.002x at 0, 0.999x at 4096 (the pair form, 2 heads), 1.000x at 8192; configs/arm-attn-softmax-interleave-off.toml; bench/notes/attn-stage16.md)"));
    v.push_back(make("kernels.attn_mma_scores", &C::kernels, &KernelsSection::attn_mma_scores, "CUDA decode attention where kernels.attn_softmax_interleave is taken by a block of 4 query heads (the group block: past kernels.attn_head_pair_keys keys, or wherever the head split and the pair form are off): each 32-key tile's int8 scores on the tensor cores (mma m16n8k32 s8 per 32-element block: 16 keys x 8 columns, each head twice with its query quants masked to one half of the block, so that every lane adds two exact halves of one head's sums: 8 MMAs per tile instead of 128 dp4a per lane) and the tile's online softmax in the MMA's lane layout (4 keys of one head per lane: 3 shuffle steps per tree and one tree instead of 5 steps for each of the 4 heads). The exact integer block sums scaled and added in score_key_q8i's order, the max order-free, the sum in attn::warp_sum's tree: the same bits (kernel-check fused attn_decode_rope/*_tcs, CudaModels.AttnMmaScoresSameBytes). Static count of the tile loop (scripts/sass-loop-census.py; bench/notes/attn-sass-census.md). Default false: on an H100 (forty-second session, phase ms38) its gates pass but it bought 1.3% of the 16512-key kernel and nothing end to end (qwen3-8b q4_k_m tg128 0.990x at 8192 keys, 0.996x at 16384, A/A 0.997x / 0.996x), nor on the H200 (forty-third session, phase h43: 0.997x / 1.002x at 8192 / 16384 keys, A/A 1.001x / 1.000x; receipts/h200/pp-bench-h43-79302c4-20261205.jsonl.gz) (configs/arm-attn-mma-scores.toml)"));
    v.push_back(make("kernels.attn_combine_preload", &C::kernels, &KernelsSection::attn_combine_preload, "CUDA decode attention with kernels.attn_combine_smem: the combine kernel requests each thread's values of the first 96 split partials at once (64 before 2026-12-02's fifteenth session; the same bits at up to 64), beside the splits' maxima and sums, instead of 16 at a time in the sum (one dependent round trip instead of up to 5 at 64 splits: depth above ~4096 keys). The same values in the same order (the same bytes). Default true (2026-12-02, interleaved arms, qwen3-8b q4_k_m tg128): 1.034x at depth 16384, 1.006x at 4096; bench/notes/attn-decode.md"));
    v.push_back(make("kernels.attn_max_splits", &C::kernels, &KernelsSection::attn_max_splits, "CUDA split-K decode attention: the most splits of a row's keys (each split one block of 4 warps per kv head, 32-key tiles dealt to the warps in turn, at least 128 keys per split; the count is otherwise ~4 blocks per SM at full context, 66 on the H200 with 8 kv heads). A fixed partition per row length and value (decode == verify), but the bits of rows longer than 128 x the smaller count differ between values. Default 96 (2026-12-02, interleaved arms, qwen3-8b q4_k_m tg128 with a 16512-row cache: 66 splits instead of 64): 1.040x at depth 16384 (a 16385..16512-key row no longer leaves warp 0 of every block a third tile), 0.999x at 0 and 4096; configs/arm-attn-max-splits-64.toml is the old cap; bench/notes/attn-decode.md", 1, 1024));
    v.push_back(make("kernels.attn_blocks_per_sm", &C::kernels, &KernelsSection::attn_blocks_per_sm, "CUDA split-K decode attention: the split count aims at this many blocks per SM at full context (splits = this x SMs / blocks per split, one block per kv head on the GQA forms: 66 on the H200 with 8 kv heads at 4), before the caps of kernels.attn_max_splits and of the cache length (n_ctx / 128 keys, or kernels.attn_f16_split_keys in the f16 tile form). A fixed partition per cache capacity (decode == verify), but the bits of long rows differ between values. Default 4 (2026-12-04, interleaved arms with an A/A copy, qwen3-8b q4_k_m tg128 on an f16 cache: 8 (with kernels.attn_max_splits 128) 0.996x / 0.998x / 0.938x at 0 / 4096 / 16384 keys, A/A 1.001x / 0.998x / 0.996x; kernel-check --perf at 16384 keys 33.7 us against 31.0 for the pair; configs/arm-attn-blocks-per-sm-8.toml, removed; bench/notes/attn-mma-tiles.md)", 1, 64));
    v.push_back(make("kernels.attn_f16_split_keys", &C::kernels, &KernelsSection::attn_f16_split_keys, "CUDA decode attention where kernels.attn_f16_mma is taken (f16 K and V cache): the fewest keys per split of a row longer than 128 keys (rows of up to 128 keys use one split whatever this says), and the cache length per split in the split count (n_ctx / this). 128: the rule of every split-K form (one 32-key round for each of a block's 4 warps); 64 gives each warp of the f16 form one 16-key tile, so twice the blocks at depths where the count is capped by the cache length (~4096-8192 keys on the H200). A fixed partition per row length and value (decode == verify). Default 128 (2026-12-04, interleaved arms with an A/A copy, qwen3-8b q4_k_m tg128 on an f16 cache: 64 gives 1.000x / 0.986x / 0.995x at 0 / 4096 / 16384 keys, A/A 1.001x / 0.998x / 0.996x; with kernels.attn_blocks_per_sm 8 1.000x / 0.986x / 0.940x; kernel-check --perf at 4096 keys 16.6 us against 15.8; configs/arm-attn-f16-split-keys-64.toml, removed; bench/notes/attn-mma-tiles.md)", 16, 128));
    v.push_back(make("kernels.attn_head_split_keys", &C::kernels, &KernelsSection::attn_head_split_keys, "CUDA decode attention with the RoPE fold, kernels.attn_fold_prefetch and kernels.attn_fold_k_stage taken (4 or 8 query heads per kv head): while a step's row has at most this many keys (its position + 1), one block per query head instead of one per kv head (each computing its head's share of the group's work: the same bytes, kernel-check fused attn_decode_rope/*_hs); past it, one block per kv head (the head split reads every K/V tile once per query head). Decode steps on either side of the threshold are captured as separate graphs. 0: never. Default 1024 (2026-12-03, interleaved arms, tg128 vs off: qwen3-8b q4_k_m 1.050x at depth 0, 1.048x at 256, 1.037x at 1024 (rows past 1024 keys, split to 8192), 0.981x at 2048 and 0.918x at 4096 with the split taken there; qwen3-32b q4_k_m (8 query heads per kv head) 1.044x at 0, 0.997x at 1024; with kernels.attn_one_split_direct 1.066x / 1.093x / 1.065x / 1.058x qwen3-8b q4_k_m / q4_0 / q8_0 / qwen3-32b q4_k_m at depth 0, 1.001x / 1.000x at 4096 / 16384; configs/arm-attn-head-split-*.toml; bench/notes/attn-head-split.md)", 0, 1 << 24));
    v.push_back(make("kernels.attn_head_pair_keys", &C::kernels, &KernelsSection::attn_head_pair_keys, "CUDA decode attention where kernels.attn_head_split_keys applies: past that many keys and while a step's row has at most this many, blocks of 2 query heads (2 blocks per kv head at 4 query heads per kv head; the same bytes, kernel-check fused attn_decode_rope/*_hs2) where the model's group is at most kernels.attn_head_pair_max_group: each K/V tile read twice instead of G times, twice the blocks of the group's form. 0 or at most kernels.attn_head_split_keys: never. Default 4608 (2026-12-03, interleaved arms vs 0, qwen3-8b q4_k_m tg128: 1.028x-1.029x at 2048 keys, 1.014x-1.020x at 4096, 0.950x at 6144, 0.910x at 10240 and 0.888x at 16384 with the pair taken there; 4608 lies between the last gain (4096-4224 keys) and the first loss (6144); confirmed against 8192 and 0: 1.017x vs 0 at 4096, the reach to 8192 0.950x / 0.936x at 5120 / 6144; configs/arm-attn-head-pair-*.toml; bench/notes/attn-head-split.md)", 0, 1 << 24));
    v.push_back(make("kernels.attn_head_pair_max_group", &C::kernels, &KernelsSection::attn_head_pair_max_group, "CUDA decode attention: the blocks of 2 query heads of kernels.attn_head_pair_keys only where a layer has at most this many query heads per kv head (with 8 the pair form makes 4 blocks per kv head, each K/V tile read 4 times). Default 4 (2026-12-03, qwen3-32b q4_k_m (8 per kv head) tg128 at 4096 keys: 0.947x with the pair form, 0.987x at 2048; qwen3-8b q4_k_m (4): 1.014x-1.028x at 2048-4096; bench/notes/attn-head-split.md)", 1, 1024));
    v.push_back(make("kernels.attn_one_split_direct", &C::kernels, &KernelsSection::attn_one_split_direct, "CUDA split-K decode attention: a row that uses one split (at most 128 keys) is written by the split kernel itself (the merged o / l and its q8s blocks, the combine's expressions on the one partial: the same bytes, kernel-check attn_decode/one_split_direct_vs_combine/* and fused attn_decode_rope/*_direct1) and the combine kernel's blocks of that row only wait for it and return. Default true (2026-12-03, interleaved arms, qwen3-8b q4_k_m tg128 at depth 0: 1.010x alone, 1.028x on top of kernels.attn_head_split_keys = 256 (1.079x vs both off); qwen3-32b q4_k_m 1.013x on top of the split; configs/arm-attn-one-split-direct.toml; bench/notes/attn-head-split.md)"));
    v.push_back(make("kernels.attn_one_split_no_combine", &C::kernels, &KernelsSection::attn_one_split_no_combine, "CUDA split-K decode attention with kernels.attn_one_split_direct: in a decode step whose rows all have at most 128 keys (one split each: their position + 1 <= 128, or a cache of fewer than 256 rows), the combine kernel is not launched at all (its blocks would only wait for the split kernel and return); the next kernel depends on the split kernel directly. The same bytes (CudaModels.AttnOneSplitNoCombineSameBytes); steps on either side of 128 keys are captured as separate graphs. Default true (2026-12-03, interleaved arms, tg128 qwen3-8b q4_k_m vs false: 1.020x at depth 0, 1.001x / 0.999x at 4096 / 16384 keys, where no step qualifies; as part of the dropped kernels.attn_combine_last: 1.019x, qwen3-32b q4_k_m 1.007x at depth 0; bench/notes/attn-combine-last.md)"));
    v.push_back(make("kernels.attn_combine_smem", &C::kernels, &KernelsSection::attn_combine_smem, "CUDA decode attention: the combine of the split partials loads each split's max and sum once per block into shared memory (false: every thread loads all of them in dependent rounds, the old form); same bits either way"));
    v.push_back(make("kernels.probe_boundaries", &C::kernels, &KernelsSection::probe_boundaries, "diagnostic for A/B runs only: this many empty kernels (PDL wait and trigger, one 32-thread block, no memory access) launched after every decode attention, between it and the o projection, so that pp-bench measures what a kernel boundary costs end to end (the persistent-decode plan's premise: bench/notes/decode-persistent-plan.md); same bits. 0 = none", 0, 16));
    v.push_back(make("kernels.pdl", &C::kernels, &KernelsSection::pdl, "CUDA: programmatic dependent launch between the decode kernels (each may start while the previous drains; weights prefetched before the dependency wait)"));
    v.push_back(make("spec.draft_tokens", &C::spec, &SpecSection::draft_tokens, "run-spec: tokens drafted per target batch, at most (the target scores the last token and these in one batch; the last batches of a run draft fewer, so the target never runs past prompt + run.n_predict positions)", 1, 64));
    v.push_back(make("spec.draft_model", &C::spec, &SpecSection::draft_model, "run-spec: the draft model's GGUF (the same vocabulary as the target's: every token's text, BOS and EOS), decoded greedily (with sampling: drawing its proposals with the sampler's options) on the same backend kind with the same KV settings and run.n_ctx; empty: none"));
    v.push_back(make("spec.drafter", &C::spec, &SpecSection::drafter, "run-spec: what proposes the tokens. model: spec.draft_model; ngram: prompt lookup (the most recent earlier occurrence of the history's last spec.ngram_max .. spec.ngram_min tokens proposes what followed it; no model); auto: model when spec.draft_model is set, else ngram", -INFINITY, INFINITY, {"auto", "model", "ngram"}));
    v.push_back(make("spec.ngram_min", &C::spec, &SpecSection::ngram_min, "run-spec with the ngram drafter: the shortest suffix of the history looked up", 1, 64));
    v.push_back(make("spec.ngram_max", &C::spec, &SpecSection::ngram_max, "run-spec with the ngram drafter: the longest suffix of the history looked up (tried first; >= spec.ngram_min)", 1, 64));
    v.push_back(make("spec.draft_p_min", &C::spec, &SpecSection::draft_p_min, "run-spec with a draft model: the draft stops proposing at the first token whose probability under its own distribution is below this (greedy: the argmax's softmax probability at temperature 1; sampling: the top candidate's after the sampler chain), so a batch carries only the proposals the draft is sure of (llama.cpp's --draft-p-min). Changes how many tokens a batch drafts, never the output (greedy) or its distribution (sampled). 0 = off (always draft spec.draft_tokens); not yet measured on a device, where a verify batch of m rows costs ~m one-token steps at m <= 5 (bench/notes/speculative.md)", 0, 1));
    v.push_back(make("spec.check", &C::spec, &SpecSection::check, "run-spec: after the speculative run, generate again without a drafter (plain greedy decoding of the target, as run-gen) and compare token for token; a difference is a failed gate (status fail, exit 1) naming the first differing position. The receipt records both speeds"));
    v.push_back(make("bench.n_prompt", &C::bench, &BenchSection::n_prompt, "prefill lengths to measure (pp rows)", 0, 1 << 24));
    v.push_back(make("bench.n_gen", &C::bench, &BenchSection::n_gen, "decode lengths to measure (tg rows)", 0, 1 << 24));
    v.push_back(make("bench.depth", &C::bench, &BenchSection::depth, "KV depths (tokens already in the cache) to measure at", 0, 1 << 24));
    v.push_back(make("bench.repetitions", &C::bench, &BenchSection::repetitions, "measured repetitions per row (median and spread reported)", 1, 1000));
    v.push_back(make("bench.warmup", &C::bench, &BenchSection::warmup, "unmeasured warm-up runs per row", 0, 100));
    v.push_back(make("bench.interleave", &C::bench, &BenchSection::interleave, "pp-bench with several --arm files: every arm's model resident at once and each row's repetitions rotating over the arms (repetition r runs arm (r + k) mod n as its k-th), so a drift of the machine over the run falls on every arm alike (measured on the H200: sequential arms drifted 1.5-2.5% on qwen3-8b q4_k_m tg128, bench/notes/mmvs-register-cap.md). Needs the device memory of all arms together (each arm holds its weights and their split-plane decode copies: ~10 GB for qwen3-8b q4_k_m, ~38 GB for qwen3-32b q4_k_m; prefill f16 copies are decided per arm at load against the memory left, with a warning where they stop: set kernels.prefill_f16_weights = false, or this to false, where that matters); false: one arm after another"));
    v.push_back(make("bench.aa_copy", &C::bench, &BenchSection::aa_copy, "pp-bench with bench.interleave: a second copy of the first arm (the same configuration, loaded after the other arms) joins the rotation; every receipt of a row carries metrics.aa_ratio (the copy's median over the first arm's: what an arm's placement alone does in this run) and every other arm's receipt metrics.ratio_to_aa_copy. Why: on the H200 three identical arms of qwen3-8b q4_k_m tg128 differed by up to 0.7% (2026-12-03, bench/notes/attn-new-key.md), as large as the levers being measured; an in-run ratio is a claim only beside its A/A ratio. Needs one more model's device memory. false: the arms named only"));
    v.push_back(make("sweep.decode_tolerance", &C::sweep, &SweepSection::decode_tolerance, "receipt sweep: relative decode median drop that fails (leases differ by up to ~4%)", 0, 1));
    v.push_back(make("sweep.prefill_tolerance", &C::sweep, &SweepSection::prefill_tolerance, "receipt sweep: relative prefill median drop that fails", 0, 1));
    v.push_back(make("synth.preset", &C::synth, &SynthSection::preset, "gguf-synth: model shape preset (gguf-synth --list)"));
    v.push_back(make("synth.mix", &C::synth, &SynthSection::mix, "gguf-synth: tensor type mix", -INFINITY, INFINITY, {"f16", "q8_0", "q4_0", "q4_k_m", "q5_k_m", "q6_k", "iq4_xs", "nvfp4", "fp8"}));
    v.push_back(make("synth.out", &C::synth, &SynthSection::out, "gguf-synth: output GGUF path"));
    v.push_back(make("synth.seed", &C::synth, &SynthSection::seed, "gguf-synth: weight and vocabulary seed (same seed -> same bytes)", 0, 9.0e18));
    v.push_back(make("synth.dims", &C::synth, &SynthSection::dims, "gguf-synth: overrides of the preset's dimensions, \"key=value\" (keys: gguf-synth --list)"));
    return v;
  }();
  return fields;
}

const Field* find_field(std::string_view path) {
  for (const auto& f : schema())
    if (f.path == path) return &f;
  return nullptr;
}

void apply_table(Config& c, const toml::table& t, const std::string& prefix, const std::string& file) {
  for (const auto& [k, node] : t) {
    const std::string path = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    const auto line = node.source().begin.line;
    const Source src{fmt::format("{}:{}", file, line)};
    if (const Field* f = find_field(path)) {
      f->set(c, node, src);
    } else if (node.is_table() && prefix.empty()) {
      bool known_section = false;
      for (const auto& fd : schema()) known_section = known_section || fd.path.rfind(path + ".", 0) == 0;
      if (!known_section) bad(src, path, "unknown section");
      apply_table(c, *node.as_table(), path, file);
    } else {
      bad(src, path, "unknown key");
    }
  }
}

}  // namespace

Config load_config(const std::vector<std::string>& files, const std::vector<std::string>& overrides) {
  Config c;
  for (const auto& file : files) {
    toml::table t;
    try {
      t = toml::parse_file(file);
    } catch (const toml::parse_error& e) {
      const auto& b = e.source().begin;
      if (b.line == 0) throw Error(fmt::format("{}: cannot read config file: {}", file, e.description()));
      throw Error(fmt::format("{}:{}:{}: TOML syntax error: {}", file, b.line, b.column, e.description()));
    }
    apply_table(c, t, "", file);
  }
  for (const auto& ov : overrides) {
    const auto eq = ov.find('=');
    const Source src{fmt::format("--set {}", ov)};
    if (eq == std::string::npos || eq == 0) bad(src, ov, "expected section.key=value");
    const std::string path = ov.substr(0, eq);
    const std::string value = ov.substr(eq + 1);
    const Field* f = find_field(path);
    if (!f) bad(src, path, "unknown key");
    toml::table t;
    try {
      t = toml::parse("v = " + value);
    } catch (const toml::parse_error&) {
      if (f->kind != Kind::String) bad(src, path, fmt::format("cannot parse '{}' as {}", value, kind_name(f->kind)));
      t = toml::table{{"v", value}};  // bare word for a string key
    }
    f->set(c, *t.get("v"), src);
  }
  return c;
}

std::string to_toml(const Config& c) {
  std::string out, section;
  for (const auto& f : schema()) {
    const auto dot = f.path.find('.');
    const std::string sec = f.path.substr(0, dot);
    if (sec != section) {
      if (!section.empty()) out += '\n';
      out += fmt::format("[{}]\n", sec);
      section = sec;
    }
    out += fmt::format("{} = {}\n", f.path.substr(dot + 1), f.show(c));
  }
  return out;
}

std::string config_hash(const Config& c) { return sha256_hex(to_toml(c)); }

std::string defaults_toml() {
  const Config c;
  std::string out =
      "# memra configuration: every key, its default and its meaning.\n"
      "# Generated from lib/config/config.cpp (the schema); a test keeps this file identical to it.\n"
      "# Apps take --config FILE (repeatable, later files override earlier ones) and\n"
      "# --set section.key=value; --print-config prints the resolved configuration.\n"
      "# Unknown keys, wrong types and out-of-range values are errors naming file, line and key.\n";
  std::string section;
  for (const auto& f : schema()) {
    const auto dot = f.path.find('.');
    const std::string sec = f.path.substr(0, dot);
    if (sec != section) {
      out += fmt::format("\n[{}]\n", sec);
      section = sec;
    }
    std::string extra;
    if (!f.choices.empty()) {
      extra = " (one of:";
      for (const auto& ch : f.choices) extra += " " + ch;
      extra += ")";
    } else if (f.kind == Kind::Int || f.kind == Kind::Float || f.kind == Kind::IntList) {
      if (std::isfinite(f.min) && std::isfinite(f.max) && f.max < 1e15)
        extra = fmt::format(" (range {} .. {})", f.min, f.max);
    }
    out += fmt::format("# {}: {}{}\n{} = {}\n", kind_name(f.kind), f.doc, extra, f.path.substr(dot + 1), f.show(c));
  }
  return out;
}

std::vector<std::string> config_keys() {
  std::vector<std::string> k;
  for (const auto& f : schema()) k.push_back(f.path);
  return k;
}

}  // namespace memra
