// pp-bench: prefill / decode throughput in the manner of llama-bench.
//   pp-bench -m MODEL[,MODEL] -p 512,2048 -n 128 -d 0,4096,16384 -r 5 [--arm FILE ...]
// Rows: ppP@dD (prefill of P tokens on top of D cached tokens) and tgN@dD (N decode steps of one
// token each, synchronized every step as a generation loop must). One untimed warm-up run per
// row first (the first repetition runs 15-35% slow otherwise), then -r timed repetitions; the
// median and the spread are reported with the physical floor: decode bytes per token / 4.8 TB/s
// (weights minus the unread embedding table, plus the KV cache at depth) and prefill FLOPs /
// dense bf16 peak. One receipt per row, all rows sharing the run id.
// --arm FILE (repeatable): the rows again with FILE applied on top of the configuration, one
// receipt per row and arm. With bench.interleave (default) every arm's model is resident and the
// repetitions of a row rotate over the arms (metrics.interleaved_arms), so in-run ratios are not
// biased by the machine drifting over the run; else the arms run one after another.
// --trace FILE: after a decode row's repetitions, 8 more steps (after a prefill row's, one more
// pass), untimed by the row, with CUPTI's per-kernel device timestamps (apps/common/kernel_trace.h): every kernel as one JSON line in
// FILE, and per kernel kind the calls, mean time and exposed time per step in the table and in
// the row's receipt (metrics.trace).
#include <algorithm>
#include <cstdio>
#include <random>

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/app.h"
#include "common/backend_select.h"
#include "common/kernel_trace.h"
#include "common/pm_sampling.h"
#include "core/error.h"
#include "core/sha256.h"
#include "core/stats.h"
#include "core/timer.h"
#include "gguf/gguf.h"
#include "kv/kv.h"
#include "model/model.h"
#include "perfmodel/roofline.h"

using namespace memra;

namespace {

// One kernel record as a --trace / --pm-sample JSON line (no newline).
std::string kernel_line(const std::string& run_id, const std::string& row, const std::string& arm, const app::KernelRecord& k) {
  return nlohmann::json{{"run_id", run_id}, {"row", row}, {"arm", arm}, {"kernel", app::short_kernel_name(k.name)},
                        {"start_ns", k.start_ns}, {"end_ns", k.end_ns}, {"stream", k.stream}, {"graph_node", k.graph_node},
                        {"grid", k.grid}}
      .dump();
}

// "a,b,,c" -> {a, b, c}.
std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> v;
  for (size_t pos = 0; pos <= s.size();) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    if (comma > pos) v.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return v;
}

std::vector<int64_t> parse_list(const std::string& s, const char* what) {
  std::vector<int64_t> v;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = s.substr(pos, comma - pos);
    try {
      size_t used = 0;
      const long long x = std::stoll(item, &used);
      if (used != item.size() || x < 0) throw std::invalid_argument(item);
      v.push_back(x);
    } catch (const std::exception&) {
      MEMRA_FAIL("{}: '{}' is not a non-negative integer list", what, s);
    }
    pos = comma + 1;
  }
  return v;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    if (comma > pos) v.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return v;
}

struct Row {
  std::string name;
  bool decode;
  int64_t n;
  int64_t depth;
};

// One arm's resident state: its config, backend, model, cache, and its own token stream (the
// same seed in every arm, so the arms see the same tokens whatever the order they run in).
struct ArmRun {
  std::string arm;
  Config cfg;
  std::shared_ptr<gguf::File> file;
  std::string chosen;
  std::unique_ptr<backend::Backend> be;
  std::unique_ptr<model::Model> model;
  kv::KvOptions ko;
  std::unique_ptr<backend::KvStore> kvs;
  backend::Buffer logits;
  std::mt19937 rng{1234};
  std::uniform_int_distribution<int32_t> tok;
  std::vector<double> dev_us;  // device time per replayed decode step (Backend::last_step_device_us)
  bool aa_copy = false;        // bench.aa_copy: the second copy of the group's first arm

  backend::View logits_view() const { return logits.view(1, model->hparams().n_vocab); }
  // Fill the cache to the row's depth (untimed, in ubatches of 512).
  void fill(const Row& row) {
    kvs->truncate(0);
    for (int64_t p0 = 0; p0 < row.depth; p0 += 512) {
      const int64_t m = std::min<int64_t>(512, row.depth - p0);
      std::vector<int32_t> ids(m);
      for (auto& x : ids) x = tok(rng);
      model->forward(*be, *kvs, ids, (int)p0, false, logits_view());
    }
    be->synchronize();
  }
  // One repetition of the row: tokens per second.
  double once(const Row& row) {
    fill(row);
    std::vector<int32_t> ids(row.decode ? 1 : row.n);
    for (auto& x : ids) x = tok(rng);
    Stopwatch sw;
    if (row.decode) {
      for (int64_t i = 0; i < row.n; ++i) {
        model->forward(*be, *kvs, ids, (int)(row.depth + i), false, logits_view());
        be->synchronize();
        const double us = be->last_step_device_us();
        if (us >= 0) dev_us.push_back(us);
      }
    } else {
      model->forward(*be, *kvs, ids, (int)row.depth, false, logits_view());
      be->synchronize();
    }
    return (double)row.n / sw.seconds();
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models, arms;
  std::string p_list, n_list, d_list, trace_path, pm_path, pm_metrics = "dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum";
  uint64_t pm_interval_ns = 2000;
  bool pm_no_trace = false;
  int reps = -1;
  app::Spec spec;
  spec.tool = "pp-bench";
  spec.description = "memra pp-bench: prefill/decode benchmark (llama-bench style), one receipt per row";
  spec.add_options = [&](CLI::App& cli) {
    cli.add_option("-m,--model", models, "GGUF model(s) (repeatable or comma-separated)")->required();
    cli.add_option("-p,--n-prompt", p_list, "prefill lengths, e.g. 512,2048 (bench.n_prompt; 0 = none)");
    cli.add_option("-n,--n-gen", n_list, "decode lengths, e.g. 128 (bench.n_gen; 0 = none)");
    cli.add_option("-d,--depth", d_list, "KV depths, e.g. 0,4096 (bench.depth)");
    cli.add_option("-r,--repetitions", reps, "timed repetitions per row (bench.repetitions)");
    cli.add_option("--arm", arms, "extra config file applied on top for one arm (repeatable: several arms)");
    cli.add_option("--trace", trace_path, "per-kernel device timestamps (CUPTI) of 8 extra decode steps or one extra prefill pass per row, appended to this JSON Lines file, summarized per kernel and grid size");
    cli.add_option("--pm-sample", pm_path, "GPU counters (CUPTI PM sampling, --pm-metrics) sampled every --pm-interval-ns over 8 extra decode steps or one extra prefill pass per row, appended to this JSON Lines file (one line per sample), summarized per metric");
    cli.add_option("--pm-metrics", pm_metrics, "comma-separated metrics for --pm-sample");
    cli.add_option("--pm-interval-ns", pm_interval_ns, "sampling interval of --pm-sample in ns");
    cli.add_flag("--pm-no-trace", pm_no_trace, "--pm-sample without the same pass's kernel records (CUPTI's activity API off)");
  };
  spec.apply_cli = [&](Config& c) {
    if (!p_list.empty()) c.bench.n_prompt = parse_list(p_list, "-p");
    if (!n_list.empty()) c.bench.n_gen = parse_list(n_list, "-n");
    if (!d_list.empty()) c.bench.depth = parse_list(d_list, "-d");
    if (reps > 0) c.bench.repetitions = reps;
  };
  spec.run = [&](app::Context& ctx) -> int {
    std::vector<std::string> model_paths;
    for (const auto& m : models)
      for (const auto& s : split(m)) model_paths.push_back(s);
    std::vector<std::string> arm_files = arms.empty() ? std::vector<std::string>{""} : arms;
    const std::string run_id = ctx.receipt.run_id();
    std::printf("| model | arm | backend | test | tok/s median | spread (min..max) | bytes/token | roofline | TFLOP/s | peak | vs 1st arm |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const auto& path : model_paths) {
      std::string model_sha;  // the file's sha256, read once for every row that records it
      // One group of arms is resident at a time: all of them with bench.interleave (the
      // repetitions of a row then rotate over the arms, so a drift over the run's minutes falls
      // on every arm alike), else one arm after another (each loaded, measured, released).
      std::vector<std::vector<size_t>> groups;
      MEMRA_CHECK(!ctx.cfg.bench.aa_copy || ctx.cfg.bench.interleave,
                  "bench.aa_copy needs bench.interleave (the copy is measured in the arms' rotation)");
      if (ctx.cfg.bench.interleave) {
        groups.emplace_back();
        for (size_t a = 0; a < arm_files.size(); ++a) groups.back().push_back(a);
        if (ctx.cfg.bench.aa_copy) groups.back().push_back(0);  // the A/A copy of the first arm, loaded last
      } else {
        for (size_t a = 0; a < arm_files.size(); ++a) groups.push_back({a});
      }
      for (const auto& group : groups) {
        std::vector<std::unique_ptr<ArmRun>> runs;
        for (size_t a : group) {
          const std::string& arm = arm_files[a];
          Config cfg = ctx.cfg;
          if (!arm.empty()) {
            // Re-resolve with the arm after the base files (then --set, then the CLI flags).
            auto files = ctx.config_files;
            files.push_back(arm);
            cfg = load_config(files, ctx.overrides);
            if (ctx.apply_cli) ctx.apply_cli(cfg);
          }
          if (group.size() > 1) {
            const auto& b = ctx.cfg.bench;
            MEMRA_CHECK(cfg.bench.n_prompt == b.n_prompt && cfg.bench.n_gen == b.n_gen && cfg.bench.depth == b.depth &&
                            cfg.bench.repetitions == b.repetitions && cfg.bench.warmup == b.warmup,
                        "--arm {}: changes [bench] rows or repetitions, which the interleaved arms share "
                        "(set bench.interleave = false to run it on its own)",
                        arm);
          }
          auto r = std::make_unique<ArmRun>();
          r->arm = arm;
          r->cfg = cfg;
          r->file = std::make_shared<gguf::File>(gguf::File::open(path));
          r->be = app::make_backend(cfg, &r->chosen);
          r->model = model::load_model(r->file, *r->be);
          runs.push_back(std::move(r));
        }
        const bool has_aa = ctx.cfg.bench.aa_copy && runs.size() >= 2;
        if (has_aa) runs.back()->aa_copy = true;
        for (auto& rp : runs) {
          ArmRun& ar = *rp;
          const auto& hp = ar.model->hparams();
          int64_t max_ctx = 1;
          for (auto d : ar.cfg.bench.depth)
            for (auto p : ar.cfg.bench.n_prompt) max_ctx = std::max(max_ctx, d + p);
          for (auto d : ar.cfg.bench.depth)
            for (auto n : ar.cfg.bench.n_gen) max_ctx = std::max(max_ctx, d + n);
          ar.ko = app::kv_options(ar.cfg, ar.chosen, (int)max_ctx);
          ar.kvs = ar.be->create_kv(ar.model->kv_shape(), ar.ko);
          ar.ko = ar.kvs->options();  // as the backend made the cache (kv.planes = auto resolves there)
          ar.logits = ar.be->alloc(hp.n_vocab);
          ar.tok = std::uniform_int_distribution<int32_t>(0, hp.n_vocab - 1);
        }
        const Config& gcfg = runs.front()->cfg;  // the rows (shared by the group's arms)
        const auto tensors = perf::tensors_of(*runs.front()->file);
        const auto shape = perf::shape_of(*runs.front()->file);

        std::vector<Row> rows;
        for (auto d : gcfg.bench.depth) {
          for (auto p : gcfg.bench.n_prompt)
            if (p > 0) rows.push_back({fmt::format("pp{}@d{}", p, d), false, p, d});
          for (auto n : gcfg.bench.n_gen)
            if (n > 0) rows.push_back({fmt::format("tg{}@d{}", n, d), true, n, d});
        }
        for (const auto& row : rows) {
          const size_t n_arms = runs.size();
          std::vector<std::vector<double>> samples(n_arms);
          for (auto& rp : runs) {
            rp->dev_us.clear();
            for (int w = 0; w < gcfg.bench.warmup; ++w) rp->once(row);
            rp->dev_us.clear();
          }
          for (int r = 0; r < gcfg.bench.repetitions; ++r)
            for (size_t k = 0; k < n_arms; ++k) {
              const size_t a = (r + k) % n_arms;  // each arm in each position as often as the reps allow
              samples[a].push_back(runs[a]->once(row));
            }
          for (size_t a = 0; a < n_arms; ++a) {
            ArmRun& ar = *runs[a];
            const std::string& arm = ar.arm;
            const Config& cfg = ar.cfg;
            const auto& ko = ar.ko;
            auto& be = ar.be;
            auto& model = ar.model;
            auto& kvs = ar.kvs;
            const auto logits_view = ar.logits_view();
            auto& rng = ar.rng;
            auto& tok = ar.tok;
            const auto* file = ar.file.get();
            const std::string& chosen = ar.chosen;
            const auto& dev_us = ar.dev_us;
            const auto st = summarize(samples[a]);
            // The traced work: decode rows refill the cache to the row's depth, run one step
            // untraced, then 8 traced steps; prefill rows refill it and trace one pass.
            nlohmann::json trace_json;
            const int kSteps = row.decode ? 8 : 1;
            // An extra pass for a recorder: refill to the row's depth, one step unrecorded (decode),
            // begin(), then kSteps steps; their seconds.
            const auto recorded_pass = [&](const auto& begin) {
              ar.fill(row);
              std::vector<int32_t> ids(row.decode ? 1 : row.n);
              for (auto& x : ids) x = tok(rng);
              if (row.decode) {
                model->forward(*be, *kvs, ids, (int)row.depth, false, logits_view);
                be->synchronize();
              }
              begin();
              Stopwatch tsw;
              for (int i = 0; i < kSteps; ++i) {
                model->forward(*be, *kvs, ids, (int)row.depth + (row.decode ? 1 + i : 0), false, logits_view);
                be->synchronize();
              }
              return tsw.seconds();
            };
            if (!pm_path.empty()) {
              MEMRA_CHECK(be->name() == "cuda", "--pm-sample samples the GPU's counters: it needs run.backend = cuda (this run: {})",
                          be->name());
              const auto names = split_names(pm_metrics);
              std::unique_ptr<app::PmSampler> pm;
              std::unique_ptr<app::KernelTrace> ktr;  // the same pass's kernels, where CUPTI allows both
              std::string why, ktr_why;
              (void)recorded_pass([&] {
                pm = app::PmSampler::start(0, names, pm_interval_ns, 1u << 17, &why);
                MEMRA_CHECK(pm != nullptr, "--pm-sample: {}", why);
                if (!pm_no_trace) ktr = app::KernelTrace::start(&ktr_why);
              });
              const auto kernels = ktr ? ktr->stop() : std::vector<app::KernelRecord>{};
              const auto samples = pm->stop(&why);
              MEMRA_CHECK(!samples.empty(), "--pm-sample: no samples ({})", why);
              if (!ktr && !pm_no_trace)
                std::printf("pm %s: no kernel timeline beside the samples (%s)\n", row.name.c_str(), ktr_why.c_str());
              std::ofstream pf(pm_path, std::ios::app);
              MEMRA_CHECK(pf.good(), "--pm-sample: cannot append to '{}'", pm_path);
              for (const auto& smp : samples) {
                nlohmann::json j{{"run_id", run_id}, {"row", row.name}, {"arm", arm}, {"start_ns", smp.start_ns}, {"end_ns", smp.end_ns}};
                for (size_t k = 0; k < names.size(); ++k) j[names[k]] = smp.values[k];
                pf << j.dump() << "\n";
              }
              for (const auto& k : kernels) pf << kernel_line(run_id, row.name, arm, k) << "\n";
              for (size_t k = 0; k < names.size(); ++k) {
                std::vector<double> v;
                for (const auto& smp : samples) v.push_back(smp.values[k]);
                std::sort(v.begin(), v.end());
                const auto q = [&](double f) { return v[(size_t)(f * (double)(v.size() - 1))]; };
                std::printf("pm %s %s: %s over %zu samples: p10 %.4g, median %.4g, p90 %.4g, max %.4g\n", row.name.c_str(),
                            arm.empty() ? "base" : arm.c_str(), names[k].c_str(), v.size(), q(0.1), q(0.5), q(0.9), v.back());
              }
            }
            if (!trace_path.empty()) {
              std::string why;
              std::unique_ptr<app::KernelTrace> tr;
              const double traced_s = recorded_pass([&] {
                tr = app::KernelTrace::start(&why);
                MEMRA_CHECK(tr != nullptr, "--trace: {}", why);
              });
              const auto recs = tr->stop();
              std::ofstream tf(trace_path, std::ios::app);
              MEMRA_CHECK(tf.good(), "--trace: cannot append to '{}'", trace_path);
              for (const auto& k : recs) tf << kernel_line(run_id, row.name, arm, k) << "\n";
              const auto ts = app::summarize_trace(recs, kSteps, /*by_grid=*/true);
              trace_json = {{"steps", kSteps}, {"kernels_per_step", ts.kernels_per_step},
                            {"traced_tok_s", (row.decode ? kSteps : (double)row.n) / traced_s}, {"wall_us_per_step", ts.wall_us_per_step},
                            {"busy_us_per_step", ts.busy_us_per_step}, {"idle_us_per_step", ts.idle_us_per_step}};
              std::printf("trace %s %s: %d kernels/step, device wall %.1f us/step (busy %.1f, idle %.1f), host %.1f tok/s while traced\n",
                          row.name.c_str(), arm.empty() ? "base" : arm.c_str(), ts.kernels_per_step, ts.wall_us_per_step,
                          ts.busy_us_per_step, ts.idle_us_per_step, (row.decode ? kSteps : (double)row.n) / traced_s);
              std::printf("| kernel | calls/step | mean us | exposed us/step |\n| --- | --- | --- | --- |\n");
              for (const auto& kd : ts.kinds) {
                trace_json["kinds"].push_back({{"kernel", kd.name}, {"calls_per_step", kd.calls_per_step},
                                               {"mean_us", kd.mean_us}, {"exposed_us_per_step", kd.exposed_us_per_step}});
                std::printf("| %s | %.1f | %.2f | %.1f |\n", kd.name.c_str(), kd.calls_per_step, kd.mean_us,
                            kd.exposed_us_per_step);
              }
            }

            Receipt rec("pp-bench", ctx.receipt.json()["argv"].get<std::vector<std::string>>());
            rec.set_run_id(run_id);
            rec.set_config(cfg);
            rec.set_model(*file, false);
            if (cfg.receipt.hash_model) {
              if (model_sha.empty()) model_sha = sha256_file_hex(file->path());
              rec.json()["model"]["sha256"] = model_sha;
            }
            if (!ctx.receipt.json()["gpu"].is_null()) rec.json()["gpu"] = ctx.receipt.json()["gpu"];
            auto& m = rec.metrics();
            m["row"] = row.name;
            m["kind"] = row.decode ? "decode" : "prefill";
            m["n"] = row.n;
            m["depth"] = row.depth;
            m["kv_type_k"] = std::string(qtype_name(ko.type_k));
            m["kv_type_v"] = std::string(qtype_name(ko.type_v));
            m["kv_planes"] = ko.planes;
            m["tok_s_median"] = st.median;
            m["tok_s_mean"] = st.mean;
            m["tok_s_sd"] = st.stddev;
            m["tok_s_min"] = st.min;
            m["tok_s_max"] = st.max;
            m["samples_tok_s"] = samples[a];
            m["interleaved_arms"] = (int)n_arms;
            // The in-run ratio to the group's first arm (the same rows, repetitions interleaved).
            std::string ratio_col = "-";
            if (a > 0) {
              const double r0 = summarize(samples[0]).median;
              m["ratio_to_first_arm"] = st.median / r0;
              m["first_arm"] = runs[0]->arm;
              ratio_col = fmt::format("{:.3f}x", st.median / r0);
            }
            if (has_aa) {  // the A/A copy is the group's last arm
              const double r0 = summarize(samples[0]).median, rc = summarize(samples[n_arms - 1]).median;
              m["aa_ratio"] = rc / r0;
              if (a > 0 && a + 1 < n_arms) m["ratio_to_aa_copy"] = st.median / rc;
            }
            m["repetitions"] = cfg.bench.repetitions;
            m["warmup"] = cfg.bench.warmup;
            if (!trace_json.is_null()) m["trace"] = trace_json;
            if (row.decode && !dev_us.empty()) {
              // The graph's device time per step against the host's time per step: what the host
              // adds between steps (sync wake-up, launch).
              const auto ds = summarize(dev_us);
              m["device_us_per_step_median"] = ds.median;
              m["device_us_per_step_min"] = ds.min;
              m["host_gap_us_per_step"] = 1e6 / st.median - ds.median;
              std::printf("device %s %s: graph %.1f us/step (min %.1f), host time per step %.1f us, host gap %.1f us\n",
                          row.name.c_str(), arm.empty() ? "base" : arm.c_str(), ds.median, ds.min, 1e6 / st.median,
                          1e6 / st.median - ds.median);
            }
            std::string floor_col = "-", tflops_col = "-", peak_col = "-", bytes_col = "-";
            if (row.decode) {
              // Average depth over the run: step i reads depth + i cached positions.
              const auto b = perf::decode_bytes(tensors, shape, {ko.type_k, ko.type_v}, row.depth + row.n / 2);
              m["bytes_per_token"] = b.total();
              m["weight_bytes_per_token"] = b.weights;
              m["kv_bytes_per_token"] = b.kv;
              m["roofline_frac"] = b.total() * st.median / perf::kH200BandwidthBytesPerS;
              m["measured_ceiling_frac"] = b.total() * st.median / perf::kH200MeasuredReadBytesPerS;
              floor_col = fmt::format("{:.3f}", m["roofline_frac"].get<double>());
              // The same bytes against this card's own peak (memory clock x bus width): the issue's
              // roofline is the H200's 4.8 TB/s, which an H100's row (3.35 TB/s) would understate.
              const auto& gj = ctx.receipt.json()["gpu"];
              const double card_bw = gj.is_object() ? gj.value("peak_bandwidth_bytes_per_s", 0.0) : 0.0;
              if (card_bw > 0) {
                m["card_roofline_frac"] = b.total() * st.median / card_bw;
                floor_col += fmt::format(" (card {:.3f})", m["card_roofline_frac"].get<double>());
              }
              bytes_col = fmt::format("{:.3g}", b.total());
            } else {
              const double flops = perf::prefill_flops(tensors, shape, row.n, row.depth);
              const double tf = flops / ((double)row.n / st.median) / 1e12;
              m["flops"] = flops;
              m["tflops"] = tf;
              m["bf16_peak_frac"] = tf * 1e12 / perf::kH200DenseBf16FlopPerS;
              tflops_col = fmt::format("{:.1f}", tf);
              peak_col = fmt::format("{:.3f}", tf * 1e12 / perf::kH200DenseBf16FlopPerS);
            }
            rec.results()["backend"] = chosen;
            rec.results()["variants"] = be->variants();
            rec.results()["decode_graph"] = be->decode_graph();
            rec.results()["arm"] = arm;
            if (has_aa) rec.results()["aa_copy"] = ar.aa_copy;
            rec.set_status("ok");
            if (ctx.write_receipt) rec.append_to(ctx.receipt_path);
            std::printf("| %s | %s | %s | %s | %.2f | %.2f..%.2f (sd %.2f) | %s | %s | %s | %s | %s |\n", path.c_str(),
                        (std::string(arm.empty() ? "base" : arm) + (ar.aa_copy ? " (A/A copy)" : "")).c_str(), chosen.c_str(),
                        row.name.c_str(), st.median, st.min, st.max,
                        st.stddev, bytes_col.c_str(), floor_col.c_str(), tflops_col.c_str(), peak_col.c_str(),
                        ratio_col.c_str());
            std::fflush(stdout);
          }  // arms
        }  // rows
      }  // groups
    }  // models
    ctx.receipt_written = true;  // the rows are the receipts
    return 0;
  };
  return app::main(argc, argv, spec);
}
