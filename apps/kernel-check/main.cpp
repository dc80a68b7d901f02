// kernel-check: every CUDA kernel against its CPU reference on fresh seeded random inputs, with
// outputs poisoned before each launch; --perf times the same cases (CUDA events, warm-up, median).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/app.h"
#include "core/error.h"
#include "kernel_check.h"

int main(int argc, char** argv) {
  memra::kc::RunOptions o;
  bool list = false;
  std::string sections = "all";
  memra::app::Spec spec;
  spec.tool = "kernel-check";
  spec.description = "memra kernel-check: CUDA kernels vs the CPU reference (sections: quant, matvec, gemm, ...)";
  spec.add_options = [&](CLI::App& cli) {
    cli.add_option("--section", sections, "section name(s), comma-separated, or 'all'")->capture_default_str();
    cli.add_option("--filter", o.filter, "only cases whose name contains this text");
    cli.add_flag("--list", list, "print the selected cases and exit (needs no GPU)");
    cli.add_option("--seed", o.seed, "seed of the input generators")->capture_default_str();
    cli.add_flag("--perf", o.perf, "also time every case: CUDA events, warm-up, median of --reps");
    cli.add_option("--reps", o.reps, "timed repetitions per case")->check(CLI::Range(1, 100000))->capture_default_str();
    cli.add_option("--warmup", o.warmup, "untimed launches before timing")->check(CLI::Range(0, 10000))->capture_default_str();
    cli.add_flag("--flush-l2", o.flush_l2, "overwrite a 2x-L2 buffer before each timed launch");
    cli.add_flag("--perf-kernels", o.perf_kernels,
                 "with --perf: the same reps again under CUPTI's kernel activity, reporting the median time of each "
                 "launch's own kernels on the device (no launch latency or event overhead in it): for launches of "
                 "several kernels the union of their intervals (busy) beside first start to last end (span), "
                 "and the last rep's kernels in the receipt");
  };
  spec.run = [&](memra::app::Context& ctx) -> int {
    o.sections.clear();
    size_t pos = 0;
    while (pos <= sections.size()) {
      const size_t comma = sections.find(',', pos);
      const std::string s = sections.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      if (!s.empty()) o.sections.push_back(s);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    if (o.sections.empty()) o.sections.push_back("all");
    if (list) {
      ctx.write_receipt = false;
      for (const auto& [sec, name] : memra::kc::list_cases(o)) fmt::print("{:8} {}\n", sec, name);
      return 0;
    }
    const auto sum = memra::kc::run_cases(o);
    auto& res = ctx.receipt.results();
    res["device"] = sum.device;
    res["seed"] = o.seed;
    res["sections"] = o.sections;
    res["n_pass"] = sum.n_pass;
    res["n_fail"] = sum.n_fail;
    res["n_error"] = sum.n_error;
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& r : sum.cases) {
      nlohmann::json j{{"section", r.section}, {"name", r.name},       {"verdict", r.status},
                       {"kind", r.kind},       {"error", r.error},     {"tolerance", r.tolerance},
                       {"max_abs", r.max_abs}, {"bad", r.bad},         {"detail", r.detail}};
      if (r.timed) {
        j["perf"] = {{"median_us", r.median_us}, {"min_us", r.min_us},     {"max_us", r.max_us},
                     {"samples_us", r.samples_us}, {"bytes", r.bytes},     {"flops", r.flops},
                     {"gbps", r.gbps},           {"frac_of_4_8_tbps", r.frac_bw}, {"frac_of_card_bw", r.frac_card_bw}, {"tflops", r.tflops},
                     {"frac_of_989_tflops", r.frac_peak}};
        if (o.perf_kernels) {
          nlohmann::json last = nlohmann::json::array();
          for (const auto& k : r.kernel_last) last.push_back({{"name", k.name}, {"us", k.us}, {"at_us", k.at_us}});
          j["perf"]["kernels"] = {{"median_us", r.kernels_median_us}, {"samples_us", r.kernel_samples_us},
                                  {"busy_median_us", r.kernels_busy_median_us},
                                  {"busy_samples_us", r.kernel_busy_samples_us}, {"last", std::move(last)},
                                  {"per_launch", r.kernels_per_launch}, {"note", r.kernels_note}};
        }
      }
      cases.push_back(std::move(j));
    }
    res["cases"] = std::move(cases);
    // One gate per case, in the form receipt-sweep compares against baselines (receipts/README.md).
    nlohmann::json gates = nlohmann::json::array();
    for (const auto& r : sum.cases)
      gates.push_back({{"name", r.section + ":" + r.name}, {"pass", r.status == "pass"}, {"error", r.error},
                       {"tolerance", r.tolerance}});
    res["gates"] = std::move(gates);
    if (o.perf)
      ctx.receipt.metrics()["perf"] = {{"warmup", o.warmup}, {"reps", o.reps}, {"flush_l2", o.flush_l2},
                                       {"kernels", o.perf_kernels}};
    return sum.n_fail == 0 && sum.n_error == 0 ? 0 : 1;
  };
  return memra::app::main(argc, argv, spec);
}
