// pp-bench: prefill / decode throughput in the manner of llama-bench.
//   pp-bench -m MODEL[,MODEL] -p 512,2048 -n 128 -d 0,4096,16384 -r 5 [--arm FILE ...]
// Rows: ppP@dD (prefill of P tokens on top of D cached tokens) and tgN@dD (N decode steps of one
// token each, synchronized every step as a generation loop must). One untimed warm-up run per
// row first (the first repetition runs 15-35% slow otherwise), then -r timed repetitions; the
// median and the spread are reported with the physical floor: decode bytes per token / 4.8 TB/s
// (weights minus the unread embedding table, plus the KV cache at depth) and prefill FLOPs /
// dense bf16 peak. One receipt per row, all rows sharing the run id.
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
#include "core/error.h"
#include "core/stats.h"
#include "core/timer.h"
#include "gguf/gguf.h"
#include "kv/kv.h"
#include "model/model.h"
#include "perfmodel/roofline.h"

using namespace memra;

namespace {

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

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models, arms;
  std::string p_list, n_list, d_list, trace_path;
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
    std::printf("| model | arm | backend | test | tok/s median | spread (min..max) | bytes/token | roofline | TFLOP/s | peak |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const auto& path : model_paths) {
      for (const auto& arm : arm_files) {
        Config cfg = ctx.cfg;
        if (!arm.empty()) {
          // Re-resolve with the arm after the base files (then --set, then the CLI flags).
          auto files = ctx.config_files;
          files.push_back(arm);
          cfg = load_config(files, ctx.overrides);
          if (ctx.apply_cli) ctx.apply_cli(cfg);
        }
        auto file = std::make_shared<gguf::File>(gguf::File::open(path));
        std::string chosen;
        auto be = app::make_backend(cfg, &chosen);
        auto model = model::load_model(file, *be);
        const auto& hp = model->hparams();
        int64_t max_ctx = 1;
        for (auto d : cfg.bench.depth)
          for (auto p : cfg.bench.n_prompt) max_ctx = std::max(max_ctx, d + p);
        for (auto d : cfg.bench.depth)
          for (auto n : cfg.bench.n_gen) max_ctx = std::max(max_ctx, d + n);
        const kv::KvOptions ko = app::kv_options(cfg, chosen, (int)max_ctx);
        auto kvs = be->create_kv(model->kv_shape(), ko);
        auto logits = be->alloc(hp.n_vocab);
        const auto logits_view = logits.view(1, hp.n_vocab);
        std::mt19937 rng(1234);
        std::uniform_int_distribution<int32_t> tok(0, hp.n_vocab - 1);
        const auto tensors = perf::tensors_of(*file);
        const auto shape = perf::shape_of(*file);

        std::vector<Row> rows;
        for (auto d : cfg.bench.depth) {
          for (auto p : cfg.bench.n_prompt)
            if (p > 0) rows.push_back({fmt::format("pp{}@d{}", p, d), false, p, d});
          for (auto n : cfg.bench.n_gen)
            if (n > 0) rows.push_back({fmt::format("tg{}@d{}", n, d), true, n, d});
        }
        for (const auto& row : rows) {
          // Fill the cache to `depth` (untimed, in ubatches of 512).
          auto fill = [&] {
            kvs->truncate(0);
            for (int64_t p0 = 0; p0 < row.depth; p0 += 512) {
              const int64_t m = std::min<int64_t>(512, row.depth - p0);
              std::vector<int32_t> ids(m);
              for (auto& x : ids) x = tok(rng);
              model->forward(*be, *kvs, ids, (int)p0, false, logits_view);
            }
            be->synchronize();
          };
          std::vector<double> dev_us;  // device time per replayed decode step (Backend::last_step_device_us)
          auto once = [&]() -> double {
            fill();
            std::vector<int32_t> ids(row.decode ? 1 : row.n);
            for (auto& x : ids) x = tok(rng);
            Stopwatch sw;
            if (row.decode) {
              for (int64_t i = 0; i < row.n; ++i) {
                model->forward(*be, *kvs, ids, (int)(row.depth + i), false, logits_view);
                be->synchronize();
                const double us = be->last_step_device_us();
                if (us >= 0) dev_us.push_back(us);
              }
            } else {
              model->forward(*be, *kvs, ids, (int)row.depth, false, logits_view);
              be->synchronize();
            }
            return (double)row.n / sw.seconds();
          };
          for (int w = 0; w < cfg.bench.warmup; ++w) once();
          std::vector<double> samples;
          for (int r = 0; r < cfg.bench.repetitions; ++r) samples.push_back(once());
          const auto st = summarize(samples);
          // The traced work: decode rows refill the cache to the row's depth, run one step
          // untraced, then 8 traced steps; prefill rows refill it and trace one pass.
          nlohmann::json trace_json;
          if (!trace_path.empty()) {
            const int kSteps = row.decode ? 8 : 1;
            fill();
            std::vector<int32_t> ids(row.decode ? 1 : row.n);
            for (auto& x : ids) x = tok(rng);
            if (row.decode) {
              model->forward(*be, *kvs, ids, (int)row.depth, false, logits_view);
              be->synchronize();
            }
            std::string why;
            auto tr = app::KernelTrace::start(&why);
            MEMRA_CHECK(tr != nullptr, "--trace: {}", why);
            Stopwatch tsw;
            for (int i = 0; i < kSteps; ++i) {
              model->forward(*be, *kvs, ids, (int)row.depth + (row.decode ? 1 + i : 0), false, logits_view);
              be->synchronize();
            }
            const double traced_s = tsw.seconds();
            const auto recs = tr->stop();
            std::ofstream tf(trace_path, std::ios::app);
            MEMRA_CHECK(tf.good(), "--trace: cannot append to '{}'", trace_path);
            for (const auto& k : recs)
              tf << nlohmann::json{{"run_id", run_id}, {"row", row.name}, {"arm", arm}, {"kernel", app::short_kernel_name(k.name)},
                                   {"start_ns", k.start_ns}, {"end_ns", k.end_ns}, {"stream", k.stream},
                                   {"graph_node", k.graph_node}, {"grid", k.grid}}
                        .dump()
                 << "\n";
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
          rec.set_model(*file, cfg.receipt.hash_model);
          if (!ctx.receipt.json()["gpu"].is_null()) rec.json()["gpu"] = ctx.receipt.json()["gpu"];
          auto& m = rec.metrics();
          m["row"] = row.name;
          m["kind"] = row.decode ? "decode" : "prefill";
          m["n"] = row.n;
          m["depth"] = row.depth;
          m["kv_type_k"] = std::string(qtype_name(ko.type_k));
          m["kv_type_v"] = std::string(qtype_name(ko.type_v));
          m["tok_s_median"] = st.median;
          m["tok_s_mean"] = st.mean;
          m["tok_s_sd"] = st.stddev;
          m["tok_s_min"] = st.min;
          m["tok_s_max"] = st.max;
          m["samples_tok_s"] = samples;
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
          rec.set_status("ok");
          if (ctx.write_receipt) rec.append_to(ctx.receipt_path);
          std::printf("| %s | %s | %s | %s | %.2f | %.2f..%.2f (sd %.2f) | %s | %s | %s | %s |\n", path.c_str(),
                      arm.empty() ? "base" : arm.c_str(), chosen.c_str(), row.name.c_str(), st.median, st.min, st.max,
                      st.stddev, bytes_col.c_str(), floor_col.c_str(), tflops_col.c_str(), peak_col.c_str());
          std::fflush(stdout);
        }
      }
    }
    ctx.receipt_written = true;  // the rows are the receipts
    return 0;
  };
  return app::main(argc, argv, spec);
}
