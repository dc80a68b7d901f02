// kernel-check runner: registry, per-case environment, comparison helpers and timing.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_query.h"
#include "common/kernel_trace.h"
#include "core/error.h"
#include "core/stats.h"
#include "kernel_check.h"
#include "registry.h"

namespace memra::kc {

// ---------------------------------------------------------------- registry
Registry& Registry::instance() {
  static Registry r;
  return r;
}

void Registry::add(std::string section, std::string name, std::function<std::unique_ptr<Case>()> make) {
  cases_.push_back({std::move(section), std::move(name), std::move(make)});
}

// ---------------------------------------------------------------- env
std::vector<float> Env::normal(size_t n, float stddev, float mean) {
  std::normal_distribution<float> d(mean, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng_);
  return v;
}

std::vector<float> Env::uniform(size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng_);
  return v;
}

std::vector<uint8_t> Env::random_bytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t r = rng_();
    std::memcpy(v.data() + i, &r, std::min<size_t>(8, n - i));
  }
  return v;
}

void* Env::alloc_bytes(size_t bytes) {
  buffers_.emplace_back(ctx_.pool(), bytes, "kernel-check buffer");
  return buffers_.back().get();
}

void* Env::alloc_output_bytes(size_t bytes) {
  void* p = alloc_bytes(bytes);
  outputs_.emplace_back(p, bytes);
  return p;
}

void Env::upload_bytes(void* dst, const void* src, size_t bytes) { cuda::copy_h2d(dst, src, bytes, stream()); }
void Env::download_bytes(void* dst, const void* src, size_t bytes) { cuda::copy_d2h(dst, src, bytes, stream()); }

void Env::poison_outputs() {
  for (auto& [p, n] : outputs_) cuda::fill_bytes(p, 0xFF, n, stream());
}

// ---------------------------------------------------------------- comparisons
Verdict compare_norm(std::span<const float> got, std::span<const double> ref, double tolerance) {
  Verdict v;
  v.kind = "norm_err";
  v.tolerance = tolerance;
  if (got.size() != ref.size()) {
    v.detail = fmt::format("size mismatch: {} outputs vs {} reference values", got.size(), ref.size());
    return v;
  }
  double num = 0, den = 0;
  int64_t first_bad = -1, worst = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) {
      if (v.bad++ == 0) first_bad = (int64_t)i;
      continue;
    }
    const double e = (double)got[i] - ref[i];
    num += e * e;
    den += ref[i] * ref[i];
    if (std::fabs(e) > v.max_abs) v.max_abs = std::fabs(e), worst = (int64_t)i;
  }
  v.error = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  v.pass = v.bad == 0 && v.error <= tolerance;
  if (v.bad)
    v.detail = fmt::format("{} non-finite outputs (first at {}: unwritten or overflow)", v.bad, first_bad);
  else if (worst >= 0)
    v.detail = fmt::format("worst at {}: got {:.9g} want {:.9g}", worst, got[worst], ref[worst]);
  return v;
}

Verdict compare_bytes(const void* got, const void* ref, size_t bytes) {
  Verdict v;
  v.kind = "bytes";
  const auto* a = static_cast<const uint8_t*>(got);
  const auto* b = static_cast<const uint8_t*>(ref);
  int64_t first = -1, count = 0;
  for (size_t i = 0; i < bytes; ++i)
    if (a[i] != b[i]) {
      if (first < 0) first = (int64_t)i;
      ++count;
    }
  v.error = (double)count;
  v.bad = first;
  v.pass = count == 0;
  v.detail = count ? fmt::format("{} of {} bytes differ; first at byte {}: 0x{:02x} vs 0x{:02x}", count, bytes,
                                 first, a[first], b[first])
                   : fmt::format("{} bytes identical", bytes);
  return v;
}

// ---------------------------------------------------------------- runner
namespace {

bool selected(const CaseInfo& c, const RunOptions& o) {
  const bool all = std::find(o.sections.begin(), o.sections.end(), "all") != o.sections.end();
  if (!all && std::find(o.sections.begin(), o.sections.end(), c.section) == o.sections.end()) return false;
  return o.filter.empty() || c.name.find(o.filter) != std::string::npos;
}

std::vector<const CaseInfo*> selection(const RunOptions& o) {
  std::vector<const CaseInfo*> out;
  std::set<std::string> seen;
  for (const auto& c : Registry::instance().cases()) {
    MEMRA_CHECK(seen.insert(c.name).second, "kernel-check: case name '{}' is registered twice", c.name);
    if (selected(c, o)) out.push_back(&c);
  }
  std::stable_sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->section < b->section; });
  return out;
}

// Per-case seed: the run seed mixed with the case name, so a case's inputs do not depend on
// which other cases ran before it.
uint64_t case_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  h ^= seed + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

void time_case(Case& c, Env& env, const RunOptions& o, void* flush, size_t flush_bytes, double card_bw, CaseReport& r) {
  cuda::EventTimer timer;
  for (int i = 0; i < o.warmup; ++i) cuda::check_status(c.launch(env), "warm-up launch");
  cuda::stream_sync(env.stream());
  for (int i = 0; i < o.reps; ++i) {
    if (flush) cuda::fill_bytes(flush, i & 0xFF, flush_bytes, env.stream());
    timer.start(env.stream());
    cuda::check_status(c.launch(env), "timed launch");
    timer.stop(env.stream());
    r.samples_us.push_back(1e3 * timer.elapsed_ms());
  }
  if (o.perf_kernels) {
    // The same reps again, each under CUPTI's kernel activity: the span of the launch's own kernels on the device.
    // A rep whose record count differs from the most common one (a record delivered late) is left out.
    struct Rep {
      int n;
      double span, busy;  // us: first start to last end; the union of the kernels' own intervals
      std::vector<app::KernelRecord> recs;
    };
    std::vector<Rep> reps;
    for (int i = 0; i < o.reps; ++i) {
      if (flush) cuda::fill_bytes(flush, i & 0xFF, flush_bytes, env.stream());
      cuda::stream_sync(env.stream());
      std::string why;
      auto trace = app::KernelTrace::start(&why);
      if (!trace) {
        r.kernels_note = why;
        break;
      }
      cuda::check_status(c.launch(env), "timed launch (kernel activity)");
      cuda::stream_sync(env.stream());
      const std::vector<app::KernelRecord> recs = trace->stop();
      if (recs.empty()) continue;
      // recs are sorted by start: the union of their intervals in one pass.
      uint64_t b = recs.front().start_ns, e = recs.front().end_ns, covered = recs.front().start_ns, busy = 0;
      for (const auto& k : recs) {
        b = std::min(b, k.start_ns), e = std::max(e, k.end_ns);
        const uint64_t from = std::max(k.start_ns, covered);
        if (k.end_ns > from) busy += k.end_ns - from;
        covered = std::max(covered, k.end_ns);
      }
      reps.push_back({(int)recs.size(), 1e-3 * (double)(e - b), 1e-3 * (double)busy, recs});
    }
    std::map<int, int> counts;
    for (const auto& x : reps) ++counts[x.n];
    int mode = 0, seen = 0;
    for (const auto& [n, k] : counts)
      if (k > seen) mode = n, seen = k;
    for (const auto& x : reps) {
      if (x.n != mode) continue;
      r.kernel_samples_us.push_back(x.span);
      r.kernel_busy_samples_us.push_back(x.busy);
      r.kernel_last.clear();  // the last such rep's kernels: name, duration, start after the first's
      for (const auto& k : x.recs)
        r.kernel_last.push_back({app::short_kernel_name(k.name), 1e-3 * (double)(k.end_ns - k.start_ns),
                                 1e-3 * (double)(k.start_ns - x.recs.front().start_ns)});
    }
    r.kernels_per_launch = mode;
    if (seen < (int)reps.size())
      r.kernels_note = fmt::format("{} of {} reps recorded another number of kernels than {}: left out",
                                   (int)reps.size() - seen, (int)reps.size(), mode);
    if (!r.kernel_samples_us.empty()) {
      r.kernels_median_us = summarize(r.kernel_samples_us).median;
      r.kernels_busy_median_us = summarize(r.kernel_busy_samples_us).median;
    }
  }
  const SampleStats s = summarize(r.samples_us);
  r.timed = true;
  r.median_us = s.median;
  r.min_us = s.min;
  r.max_us = s.max;
  const PerfCount pc = c.perf_count();
  r.bytes = pc.bytes;
  r.flops = pc.flops;
  if (s.median > 0) {
    r.gbps = pc.bytes / (s.median * 1e-6) / 1e9;
    r.frac_bw = pc.bytes / (s.median * 1e-6) / kFloorBandwidth;
    if (card_bw > 0) r.frac_card_bw = pc.bytes / (s.median * 1e-6) / card_bw;
    r.tflops = pc.flops / (s.median * 1e-6) / 1e12;
    r.frac_peak = pc.flops / (s.median * 1e-6) / kFloorTensorF16;
  }
}

void print_report(const CaseReport& r) {
  const char* tag = r.status == "pass" ? "PASS" : r.status == "fail" ? "FAIL" : "ERROR";
  std::string line = fmt::format("[{:5}] {:7} {:44}", tag, r.section, r.name);
  if (r.status == "error") {
    line += " " + r.detail;
  } else if (r.kind == "bytes") {
    line += fmt::format(" bytes: {}", r.detail);
  } else {
    line += fmt::format(" norm_err {:.3e} (tol {:.1e}, max_abs {:.3e})", r.error, r.tolerance, r.max_abs);
    if (r.status == "fail") line += " " + r.detail;
  }
  if (r.timed) {
    line += fmt::format(" | {:.2f} us", r.median_us);
    if (r.kernels_median_us > 0)
      line += r.kernels_per_launch == 1
                  ? fmt::format(" (device {:.2f} us)", r.kernels_median_us)
                  : fmt::format(" (device busy {:.2f} us of {} kernels, span {:.2f})", r.kernels_busy_median_us,
                                r.kernels_per_launch, r.kernels_median_us);
    else if (!r.kernels_note.empty())
      line += fmt::format(" (no kernel timestamps: {})", r.kernels_note);
    if (r.bytes > 0) line += fmt::format(" {:.0f} GB/s ({:.2f} of 4.8 TB/s", r.gbps, r.frac_bw);
    if (r.bytes > 0) line += r.frac_card_bw > 0 ? fmt::format(", card {:.2f})", r.frac_card_bw) : std::string(")");
    if (r.flops > 0) line += fmt::format(" {:.1f} TFLOP/s ({:.3f} of peak)", r.tflops, r.frac_peak);
  }
  fmt::print("{}\n", line);
  std::fflush(stdout);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> list_cases(const RunOptions& o) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const CaseInfo* c : selection(o)) out.emplace_back(c->section, c->name);
  return out;
}

RunSummary run_cases(const RunOptions& o) {
  const auto sel = selection(o);
  MEMRA_CHECK(!sel.empty(), "kernel-check: no case matches --section {} --filter '{}'",
              fmt::join(o.sections, ","), o.filter);
  auto ctx = cuda::Context::create();
  RunSummary sum;
  const auto& di = ctx->info();
  sum.device = fmt::format("{} (cc {}.{}, {} SMs, {:.0f} GiB)", di.name, di.cc_major, di.cc_minor, di.sm_count,
                           di.total_bytes / 1073741824.0);
  fmt::print("kernel-check on {}; seed {}; {} case(s)\n", sum.device, o.seed, sel.size());
  cuda::DeviceBuffer flush;
  if (o.perf && o.flush_l2) flush = cuda::DeviceBuffer(ctx->pool(), 2 * di.l2_bytes, "L2 flush buffer");
  // The perf fractions: of the H200's 4.8 TB/s (the targets' card) and of this card's own peak.
  const auto gi = cuda::query_device(di.id);
  const double card_bw = gi ? gi->peak_bandwidth_bytes_per_s() : 0.0;

  for (const CaseInfo* info : sel) {
    CaseReport r;
    r.section = info->section;
    r.name = info->name;
    try {
      auto c = info->make();
      Env env(*ctx, case_seed(o.seed, info->name));
      c->generate(env);
      env.poison_outputs();
      cuda::check_status(c->launch(env), "launch");
      cuda::stream_sync(env.stream());
      c->reference(env);
      const Verdict v = c->compare(env);
      r.status = v.pass ? "pass" : "fail";
      r.kind = v.kind;
      r.error = v.error;
      r.tolerance = v.tolerance;
      r.max_abs = v.max_abs;
      r.bad = v.bad;
      r.detail = v.detail;
      if (o.perf) time_case(*c, env, o, flush.get(), flush.bytes(), card_bw, r);
      cuda::stream_sync(env.stream());
    } catch (const std::exception& e) {
      r.status = "error";
      r.detail = e.what();
    }
    (r.status == "pass" ? sum.n_pass : r.status == "fail" ? sum.n_fail : sum.n_error)++;
    print_report(r);
    sum.cases.push_back(std::move(r));
  }
  fmt::print("kernel-check: {} passed, {} failed, {} errors (of {})\n", sum.n_pass, sum.n_fail, sum.n_error,
             sum.cases.size());
  return sum;
}

}  // namespace memra::kc
