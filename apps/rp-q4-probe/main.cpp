// rp-q4-probe: Q4_0 decode matvec, GGUF-block layout (kernels/matvec) vs the split-plane mirror
// (kernels/matvec_rp), on the qwen3-8b / llama3-8b weight shapes. Per shape: the outputs of the
// two layouts byte-compared (m = 1, 3, 8 and the timed m; every split-plane variant: prefetch 1
// and 4, and prefetch 4 with the q8_1 activations as split planes too),
// a sanity check of the GGUF kernel against an f64 CPU dot on 64 rows, and event-timed graph
// replays of each kernel (issue 7). Exit 1 when any shape is not bit-identical.
//
// Timing: each kernel is launched B times inside one CUDA graph (DEVICE.md: ~1.2 us between
// graph-launched kernels against ~3.5 us host launches, and a 1024x4096 Q4_0 matvec reads 2.4 MB,
// ~0.5 us at 4.8 TB/s), launch i reading weight copy i mod K. K copies are allocated so that
// K x (weight bytes) >= 2.5 x L2: each launch reads weights last touched K-1 launches earlier
// with >= 1.5 x L2 of other weights in between, so L2 does not serve them (a plain rotation, no
// flush writes, whose dirty lines would be written back inside the timed kernels). Shapes whose
// weights exceed 2.5 x L2 use K = 1. The graphs are replayed interleaved, rep by rep. Bytes per
// launch (for GB/s): weights + m q8_1 activation rows (36 bytes per 32) + m f32 output rows, the
// same figure for every variant.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/app.h"
#include "rp-q4-probe/chain.h"
#include "common/probe_timing.h"
#include "core/error.h"
#include "core/half.h"
#include "core/stats.h"
#include "quant/quant.h"

#ifdef MEMRA_HAVE_CUDA
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/runtime.h"
#include "matvec/matvec.h"
#include "matvec_rp/graph_timer.h"
#include "matvec_rp/matvec_rp.h"
#endif

using namespace memra;

namespace {

struct Shape {
  const char* model;
  const char* tensor;
  int64_t rows, cols;
};

constexpr Shape kShapes[] = {
    {"qwen3-8b", "attn_q,attn_output", 4096, 4096},
    {"qwen3-8b", "attn_k,attn_v", 1024, 4096},
    {"qwen3-8b", "ffn_gate,ffn_up", 12288, 4096},
    {"qwen3-8b", "ffn_down", 4096, 12288},
    {"qwen3-8b", "output", 151936, 4096},
    {"llama3-8b", "ffn_down", 4096, 14336},
};

constexpr double kDatasheetBw = 4.8e12;
constexpr int kMaxM = 8;

// The split-plane variants timed against the GGUF-block kernel. xsplit: the q8_1 activations as
// split planes too (kernels/matvec_rp/matvec_rp.h), to see how much of the time the 36-byte
// activation blocks' 4-byte loads take once the weight loads are 16 bytes wide.
struct RpVariant {
  const char* name;
  int prefetch;
  bool xsplit;
};
constexpr RpVariant kRpVariants[] = {
    {"split_plane_pf1", 1, false},
    {"split_plane_pf4", 4, false},
    {"split_plane_pf4_xsplit", 4, true},
};
constexpr int kNumRp = (int)(sizeof(kRpVariants) / sizeof(kRpVariants[0]));

struct Options {
  uint64_t seed = 1;
  int reps = 30;
  int warmup = 5;
  int m = 1;
  int rows_per_block = 4;
  double l2_factor = 2.5;
  int min_batch = 16;
  bool chain = false;       // also run the persistent decode-chain probe (chain.h)
  bool chain_only = false;  // only the chain probe
  probe::ChainOptions ch;
};

#ifdef MEMRA_HAVE_CUDA

std::string shape_key(const Shape& s) { return std::to_string(s.rows) + "x" + std::to_string(s.cols); }

// Random Q4_0 rows: random quant bytes; every f16 scale finite, random sign, |d| in [1e-3, 5e-2].
std::vector<uint8_t> random_q4_0(std::mt19937_64& rng, int64_t rows, int64_t cols) {
  const size_t n_blocks = (size_t)rows * (size_t)(cols / 32);
  std::vector<uint8_t> w(n_blocks * 18);
  size_t i = 0;
  for (; i + 8 <= w.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(&w[i], &v, 8);
  }
  for (; i < w.size(); ++i) w[i] = (uint8_t)rng();
  std::uniform_real_distribution<float> mag(1e-3f, 5e-2f);
  for (size_t b = 0; b < n_blocks; ++b) {
    const float d = (rng() & 1 ? -1.f : 1.f) * mag(rng);
    const uint16_t h = f32_to_fp16(d);
    std::memcpy(&w[b * 18], &h, 2);
  }
  return w;
}

size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

struct Timing {
  SampleStats us;  // per kernel
  std::vector<double> samples_us;
};

nlohmann::json timing_json(const Timing& t, double bytes) { return app::probe_timing_json(t.us, t.samples_us, bytes); }

// One shape: returns (bit-identical, reference ok); fills the per-shape JSON.
std::pair<bool, bool> run_shape(cuda::Context& ctx, const Shape& s, const Options& o, nlohmann::json& out) {
  cudaStream_t st = ctx.compute_stream();
  const int64_t R = s.rows, C = s.cols, nc = C / 32;
  MEMRA_CHECK(C % 32 == 0, "shape {}: cols {} not a multiple of 32", shape_key(s), C);
  std::seed_seq sq{o.seed, (uint64_t)R, (uint64_t)C};
  std::mt19937_64 rng(sq);

  const auto w = random_q4_0(rng, R, C);
  const size_t wbytes = w.size();
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x((size_t)(kMaxM * C));
  for (auto& v : x) v = nd(rng);
  std::vector<uint8_t> xq((size_t)(kMaxM * nc * 36));
  for (int j = 0; j < kMaxM; ++j) quantize_row(QType::Q8_1, x.data() + j * C, xq.data() + j * nc * 36, C);

  const size_t l2 = ctx.info().l2_bytes;
  const int K = (int)std::max<double>(1.0, std::ceil(o.l2_factor * (double)l2 / (double)wbytes));
  const int B = (std::max(o.min_batch, K) + K - 1) / K * K;
  const size_t w_stride = round_up(wbytes, 256);
  const size_t qs_bytes = cuda::rp_q4_0_qs_bytes(R, C), d_bytes = cuda::rp_q4_0_d_bytes(R, C);
  const size_t qs_stride = round_up(qs_bytes, 256), d_stride = round_up(d_bytes, 256);
  ctx.require_free(K * (w_stride + qs_stride + d_stride) + (size_t)(4 * kMaxM * R * 3) + xq.size(),
                   "rp-q4-probe buffers for " + shape_key(s));
  cuda::DeviceBuffer dw(ctx.pool(), K * w_stride, "GGUF Q4_0 weight copies");
  cuda::DeviceBuffer dqs(ctx.pool(), K * qs_stride, "split-plane qs copies");
  cuda::DeviceBuffer dd(ctx.pool(), K * d_stride, "split-plane d copies");
  cuda::DeviceBuffer dx(ctx.pool(), xq.size(), "q8_1 activations");
  cuda::DeviceBuffer dxqs(ctx.pool(), cuda::rp_q8_1_qs_bytes(kMaxM, C), "split-plane q8_1 quants");
  cuda::DeviceBuffer dxd(ctx.pool(), cuda::rp_q8_1_d_bytes(kMaxM, C), "split-plane q8_1 scales");
  cuda::DeviceBuffer dy_g(ctx.pool(), 4 * kMaxM * R, "y gguf");
  cuda::DeviceBuffer dy_r(ctx.pool(), 4 * kMaxM * R, "y rp");
  auto wcopy = [&](int i) { return dw.as<uint8_t>() + (size_t)i * w_stride; };
  auto qcopy = [&](int i) { return dqs.as<uint8_t>() + (size_t)i * qs_stride; };
  auto dcopy = [&](int i) { return dd.as<uint8_t>() + (size_t)i * d_stride; };
  cuda::copy_h2d(dx.get(), xq.data(), xq.size(), st);
  {
    cuda::RepackQ8_1RpParams xp;
    xp.x = dx.get();
    xp.m = kMaxM;
    xp.n_cols = C;
    xp.qs = dxqs.get();
    xp.d = dxd.get();
    cuda::check_status(cuda::launch_repack_q8_1_rp(xp, st), "launch_repack_q8_1_rp");
  }
  for (int i = 0; i < K; ++i) {
    cuda::copy_h2d(wcopy(i), w.data(), wbytes, st);
    cuda::RepackQ4_0RpParams rp;
    rp.w = wcopy(i);
    rp.n_rows = R;
    rp.n_cols = C;
    rp.qs = qcopy(i);
    rp.d = dcopy(i);
    cuda::check_status(cuda::launch_repack_q4_0_rp(rp, st), "launch_repack_q4_0_rp");
  }

  auto gguf = [&](int copy, int m) {
    cuda::MatvecParams p;
    p.w_type = QType::Q4_0;
    p.w = wcopy(copy);
    p.n_rows = R;
    p.n_cols = C;
    p.m = m;
    p.x_q8_1 = dx.get();
    p.y = dy_g.as<float>();
    p.rows_per_block = o.rows_per_block;
    return cuda::launch_matvec(p, st);
  };
  auto rp = [&](int copy, int m, const RpVariant& v) {
    cuda::MatvecRpQ4_0Params p;
    p.qs = qcopy(copy);
    p.d = dcopy(copy);
    p.n_rows = R;
    p.n_cols = C;
    p.m = m;
    if (v.xsplit) {
      // Row j of the planes: x_qs + j*C bytes, x_d + j*(C/32) halves, as the kernel indexes them.
      p.x_qs = dxqs.get();
      p.x_d = dxd.get();
    } else {
      p.x_q8_1 = dx.get();
    }
    p.y = dy_r.as<float>();
    p.rows_per_block = o.rows_per_block;
    p.prefetch = v.prefetch;
    return cuda::launch_matvec_rp_q4_0(p, st);
  };

  // ---- bit identity (outputs poisoned with 0xFF = NaN before every launch)
  bool identical = true, ref_ok = true;
  nlohmann::json checks = nlohmann::json::array();
  std::vector<float> yg, yr;
  std::vector<int> ms = {1, 3, 8};
  if (std::find(ms.begin(), ms.end(), o.m) == ms.end()) ms.push_back(o.m);
  for (int m : ms)
    for (const RpVariant& v : kRpVariants)
      for (int ci = 0; ci < 2; ++ci) {
        // Every check reads copy 0; the last copy (its own upload and repack) once more at m = 1.
        if (ci == 1 && (K == 1 || m != 1)) continue;
        const int copy = ci == 0 ? 0 : K - 1;
        const size_t n = (size_t)m * R;
        cuda::fill_bytes(dy_g.get(), 0xFF, 4 * n, st);
        cuda::fill_bytes(dy_r.get(), 0xFF, 4 * n, st);
        cuda::check_status(gguf(copy, m), "launch_matvec (GGUF-block Q4_0)");
        cuda::check_status(rp(copy, m, v), "launch_matvec_rp_q4_0");
        yg.resize(n);
        yr.resize(n);
        cuda::copy_d2h(yg.data(), dy_g.get(), 4 * n, st);
        cuda::copy_d2h(yr.data(), dy_r.get(), 4 * n, st);
        int64_t nan = 0, diff = 0, first = -1;
        for (size_t i = 0; i < n; ++i) {
          if (!std::isfinite(yg[i]) || !std::isfinite(yr[i])) ++nan;
          if (std::memcmp(&yg[i], &yr[i], 4) != 0) {
            if (first < 0) first = (int64_t)i;
            ++diff;
          }
        }
        const bool ok = nan == 0 && diff == 0;
        identical = identical && ok;
        checks.push_back({{"m", m}, {"variant", v.name}, {"copy", copy}, {"identical", ok}, {"differing_floats", diff},
                          {"first_difference", first}, {"non_finite", nan}});
        if (!ok)
          std::fprintf(stderr, "rp-q4-probe: %s m=%d %s copy=%d: %lld of %zu floats differ, %lld non-finite\n",
                       shape_key(s).c_str(), m, v.name, copy, (long long)diff, n, (long long)nan);
      }

  // ---- sanity: the GGUF kernel (m = 8, copy 0) against f64
  // dots on the first and last 32 rows, so two identical wrong kernels cannot pass unnoticed.
  {
    const int m = 8;
    cuda::fill_bytes(dy_g.get(), 0xFF, 4 * (size_t)m * R, st);
    cuda::check_status(gguf(0, m), "launch_matvec (GGUF-block Q4_0)");
    yg.resize((size_t)m * R);
    cuda::copy_d2h(yg.data(), dy_g.get(), 4 * (size_t)m * R, st);
    std::vector<float> xf((size_t)(m * C)), wf((size_t)C);
    for (int j = 0; j < m; ++j) dequantize_row(QType::Q8_1, xq.data() + j * nc * 36, xf.data() + j * C, C);
    double num = 0, den = 0;
    for (int64_t r = 0; r < R; ++r) {
      if (r == 32 && R > 64) r = R - 32;
      dequantize_row(QType::Q4_0, w.data() + (size_t)r * nc * 18, wf.data(), C);
      for (int j = 0; j < m; ++j) {
        double ref = 0;
        for (int64_t k = 0; k < C; ++k) ref += (double)wf[k] * (double)xf[j * C + k];
        const double got = yg[(size_t)j * R + r];
        num += (got - ref) * (got - ref);
        den += ref * ref;
      }
    }
    const double err = std::sqrt(num / std::max(den, 1e-300));
    ref_ok = std::isfinite(err) && err <= 1e-5;
    out["reference"] = {{"rows_checked", std::min<int64_t>(R, 64)}, {"m", m}, {"norm_err", err}, {"tolerance", 1e-5},
                        {"pass", ref_ok}};
  }

  // ---- timing
  const double bytes = (double)wbytes + (double)o.m * nc * 36 + 4.0 * o.m * R;
  constexpr int kNT = 1 + kNumRp;  // timer 0: the GGUF-block kernel
  cuda::GraphBatchTimer timers[kNT];
  cuda::check_status(timers[0].capture(st, B, [&](int i) { return gguf(i % K, o.m); }), "capture gguf");
  for (int v = 0; v < kNumRp; ++v)
    cuda::check_status(timers[1 + v].capture(st, B, [&](int i) { return rp(i % K, o.m, kRpVariants[v]); }),
                       kRpVariants[v].name);
  Timing tm[kNT];
  float ms_batch = 0;
  for (int i = 0; i < o.warmup; ++i)
    for (auto& t : timers) cuda::check_status(t.replay_timed(st, ms_batch), "warm-up replay");
  for (int i = 0; i < o.reps; ++i)
    for (int v = 0; v < kNT; ++v) {
      // Rotate which variant goes first, so none always follows the same neighbour.
      const int k = (v + i) % kNT;
      cuda::check_status(timers[k].replay_timed(st, ms_batch), "timed replay");
      tm[k].samples_us.push_back(1e3 * ms_batch / B);
    }
  for (auto& t : tm) t.us = summarize(t.samples_us);
  // A verdict needs checks: an empty list must not read as "identical".
  MEMRA_CHECK(checks.size() >= ms.size() * kNumRp, "shape {}: only {} identity checks ran", shape_key(s), checks.size());

  out["model"] = s.model;
  out["tensor"] = s.tensor;
  out["shape"] = shape_key(s);
  out["rows"] = R;
  out["cols"] = C;
  out["m_timed"] = o.m;
  out["weight_bytes"] = wbytes;
  out["bytes_per_launch"] = bytes;
  out["weight_copies"] = K;
  out["launches_per_graph"] = B;
  out["l2_policy"] = K > 1 ? "rotate K weight copies, K x weight bytes >= " + std::to_string(o.l2_factor) + " x L2"
                           : "weights >= " + std::to_string(o.l2_factor) + " x L2 (one copy)";
  out["bit_identical"] = identical;
  out["identity_checks"] = checks;
  out["gguf_block"] = timing_json(tm[0], bytes);
  for (int v = 0; v < kNumRp; ++v) {
    out[kRpVariants[v].name] = timing_json(tm[1 + v], bytes);
    out[kRpVariants[v].name]["speedup_vs_gguf"] = tm[1 + v].us.median > 0 ? tm[0].us.median / tm[1 + v].us.median : 0;
  }
  return {identical, ref_ok};
}

#endif  // MEMRA_HAVE_CUDA

}  // namespace

int main(int argc, char** argv) {
  Options o;
  app::Spec spec;
  spec.tool = "rp-q4-probe";
  spec.description =
      "memra rp-q4-probe: Q4_0 decode matvec, GGUF-block vs split-plane layout, bit-identity and timing per shape";
  spec.add_options = [&](CLI::App& cli) {
    cli.add_option("--seed", o.seed, "seed of the random weights and activations")->capture_default_str();
    cli.add_option("--reps", o.reps, "timed graph replays per kernel (median reported)")
        ->check(CLI::Range(20, 100000))
        ->capture_default_str();
    cli.add_option("--warmup", o.warmup, "untimed graph replays per kernel first")
        ->check(CLI::Range(1, 10000))
        ->capture_default_str();
    cli.add_option("--m", o.m, "activation rows of the timed launches")->check(CLI::Range(1, kMaxM))->capture_default_str();
    cli.add_option("--rows-per-block", o.rows_per_block, "warps per CTA of both kernels (1, 2, 4, 8)")
        ->check(CLI::IsMember({1, 2, 4, 8}))
        ->capture_default_str();
    cli.add_flag("--chain", o.chain,
                 "also run the persistent decode-chain probe: a layer stack's dependent Q4_0 / Q4_K matvecs streamed by one "
                 "resident grid (kernels/matvec_rp/chain_persist.h), checked against the CPU and timed");
    cli.add_flag("--chain-only", o.chain_only, "run only the chain probe");
    cli.add_option("--chain-layers", o.ch.layers, "layers of the chain")->check(CLI::Range(1, 80))->capture_default_str();
    cli.add_option("--chain-types", o.ch.types, "weight formats of the chain's pages, one set of forms each (q4_0, q4_k)")
        ->check(CLI::IsMember({"q4_0", "q4_k"}))
        ->delimiter(',')
        ->capture_default_str();
    cli.add_option("--chain-consumers", o.ch.consumers, "consumer warps per CTA, one form each (4, 8, 16)")
        ->check(CLI::IsMember({4, 8, 16}))
        ->delimiter(',')
        ->capture_default_str();
    cli.add_option("--chain-forms", o.ch.forms,
                   "the consumers' form, one set of forms each: dp4a, or mma (int8 tensor cores, at 8 or 16 "
                   "consumer warps; other combinations are skipped)")
        ->check(CLI::IsMember({"dp4a", "mma"}))
        ->delimiter(',')
        ->capture_default_str();
    cli.add_option("--chain-schedules", o.ch.schedules,
                   "how the matrices' work is dealt to the CTAs, one set of forms each: tasks (whole 32-row blocks, "
                   "round robin), split (every CTA an equal share of every matrix's pages, row blocks cut and "
                   "their partial sums added; 8 consumer warps only, other forms are skipped)")
        ->check(CLI::IsMember({"tasks", "split"}))
        ->delimiter(',')
        ->capture_default_str();
    cli.add_option("--chain-ctas-per-sm", o.ch.ctas_per_sm, "resident CTAs per SM, one form each (1, 2)")
        ->check(CLI::IsMember({1, 2}))
        ->delimiter(',')
        ->capture_default_str();
    cli.add_option("--chain-stages", o.ch.stages, "ring pages per CTA; 0 = as many as fit")
        ->check(CLI::Range(0, 64))
        ->capture_default_str();
    cli.add_option("--chain-check-layers", o.ch.check_layers,
                   "layers whose matrices are checked against f64 (default: every layer)")
        ->delimiter(',');
    cli.add_option("--chain-reps", o.ch.reps, "timed runs of each chain mode")->check(CLI::Range(3, 1000))->capture_default_str();
  };
  spec.run = [&](app::Context& ctx) -> int {
#ifndef MEMRA_HAVE_CUDA
    (void)ctx;
    MEMRA_FAIL("rp-q4-probe needs a CUDA build (configure with --preset release)");
#else
    auto cuctx = cuda::Context::create();
    const auto& di = cuctx->info();
    nlohmann::json shapes = nlohmann::json::array(), gates = nlohmann::json::array();
    nlohmann::json metrics = nlohmann::json::object();
    bool all_identical = true, all_ref = true;
    std::printf("%-9s %-18s %-11s %4s %4s | %8s %8s %8s %8s | %6s %6s %6s | %s\n", "model", "tensor", "shape", "K",
                "B", "gguf us", "rp1 us", "rp4 us", "rp4x us", "x rp1", "x rp4", "x rp4x", "identical");
    o.ch.seed = o.seed;
    if (o.chain_only) o.chain = true;
    for (const Shape& s : kShapes) {
      if (o.chain_only) break;
      nlohmann::json r;
      const auto [ident, ref_ok] = run_shape(*cuctx, s, o, r);
      all_identical = all_identical && ident;
      all_ref = all_ref && ref_ok;
      const std::string key = shape_key(s);
      gates.push_back({{"name", "rp-q4/" + key + "/bit-identical"}, {"pass", ident}});
      gates.push_back({{"name", "rp-q4/" + key + "/gguf-vs-f64"}, {"pass", ref_ok},
                       {"error", r["reference"]["norm_err"]}, {"tolerance", 1e-5}});
      nlohmann::json& mk = metrics[key];
      mk["gguf_block_us"] = r["gguf_block"]["median_us"];
      mk["gguf_block_frac_of_4_8_tbps"] = r["gguf_block"]["frac_of_4_8_tbps"];
      for (const RpVariant& v : kRpVariants) {
        mk[std::string(v.name) + "_us"] = r[v.name]["median_us"];
        mk[std::string(v.name) + "_frac_of_4_8_tbps"] = r[v.name]["frac_of_4_8_tbps"];
        mk[std::string(v.name) + "_speedup"] = r[v.name]["speedup_vs_gguf"];
      }
      auto med = [&](const char* n) { return r[n]["median_us"].get<double>(); };
      auto frac = [&](const char* n) { return 100 * r[n]["frac_of_4_8_tbps"].get<double>(); };
      auto spd = [&](const char* n) { return r[n]["speedup_vs_gguf"].get<double>(); };
      std::printf("%-9s %-18s %-11s %4d %4d | %8.2f %8.2f %8.2f %8.2f | %6.3f %6.3f %6.3f | %s\n", s.model, s.tensor,
                  key.c_str(), r["weight_copies"].get<int>(), r["launches_per_graph"].get<int>(), med("gguf_block"),
                  med("split_plane_pf1"), med("split_plane_pf4"), med("split_plane_pf4_xsplit"),
                  spd("split_plane_pf1"), spd("split_plane_pf4"), spd("split_plane_pf4_xsplit"), ident ? "yes" : "NO");
      std::printf("%-9s %-18s %-11s %4s %4s | %7.1f%% %7.1f%% %7.1f%% %7.1f%% | of 4.8 TB/s; gguf spread %.2f-%.2f us\n",
                  "", "", "", "", "", frac("gguf_block"), frac("split_plane_pf1"), frac("split_plane_pf4"),
                  frac("split_plane_pf4_xsplit"), r["gguf_block"]["min_us"].get<double>(),
                  r["gguf_block"]["max_us"].get<double>());
      std::fflush(stdout);
      shapes.push_back(std::move(r));
    }
    bool chain_ok = true;
    nlohmann::json chain;
    if (o.chain) {
      nlohmann::json cm = nlohmann::json::object();
      chain_ok = probe::run_chain(*cuctx, o.ch, chain, cm);
      gates.push_back({{"name", "rp-q4/chain/checked"}, {"pass", chain_ok}});
      // The same layer as one launch per matrix (q, k, v, o, gate, up, down), from this run's
      // split_plane_pf4 graph timings of those shapes: what the chain saves over launches.
      if (!o.chain_only && cm.value("chain_best_full_us", 0.0) > 0) {
        auto us = [&](const char* key) { return metrics[key]["split_plane_pf4_us"].get<double>(); };
        const double per_layer = 2 * us("4096x4096") + 2 * us("1024x4096") + 2 * us("12288x4096") + us("4096x12288");
        cm["launches_estimate_us"] = per_layer * o.ch.layers;
        cm["chain_speedup_vs_launches"] = per_layer * o.ch.layers / cm["chain_best_full_us"].get<double>();
        std::printf("the same chain as split_plane_pf4 launches (q, k, v, o, gate, up, down per layer, from the "
                    "graph timings above): %.1f us; best chain form %.1f us (%.3fx)\n",
                    per_layer * o.ch.layers, cm["chain_best_full_us"].get<double>(),
                    cm["chain_speedup_vs_launches"].get<double>());
      }
      metrics["chain"] = std::move(cm);
    }
    metrics["timing"] = {{"method", "CUDA events around one graph replay of B launches; per-launch = batch / B"},
                         {"warmup", o.warmup}, {"reps", o.reps}, {"l2_bytes", di.l2_bytes},
                         {"l2_factor", o.l2_factor}, {"rows_per_block", o.rows_per_block}, {"m", o.m},
                         {"datasheet_bandwidth", kDatasheetBw}};
    ctx.receipt.metrics() = metrics;
    auto& res = ctx.receipt.results();
    res["device"] = di.name;
    res["seed"] = o.seed;
    res["shapes"] = std::move(shapes);
    res["gates"] = std::move(gates);
    res["all_bit_identical"] = all_identical;
    if (o.chain) res["chain"] = std::move(chain);
    std::printf("bit-identical on every shape: %s; GGUF kernel vs f64 on sampled rows: %s%s\n",
                all_identical ? "yes" : "NO", all_ref ? "ok" : "FAIL",
                o.chain ? (chain_ok ? "; chain checked: ok" : "; chain checked: FAIL") : "");
    return all_identical && all_ref && chain_ok ? 0 : 1;
#endif
  };
  return app::main(argc, argv, spec);
}
