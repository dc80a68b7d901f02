// moe-devq8-check: the device-routed MoE expert matvecs on q8_1 activations ("dev q8": the router
// runs on the device, the activations are q8_1 blocks), every form the backend can choose, on an MoE
// model's expert shapes, by default Qwen3-30B-A3B's (128 experts, 8 used per token; --experts,
// --used, --embd, --ff for others): ffn_gate_exps / ffn_up_exps (768 x 2048, the token's activation
// row) and ffn_down_exps (2048 x 768, the slot's GLU row).
// Forms (kernels/matvec, the config keys that pick them in lib/backend/cuda/cuda_moe_ops.cpp):
//   routed       launch_matvec with ids: one m = 1 product per (token, slot) (the default decode path)
//   routed_v2    launch_matvec_v2 with ids (kernels.moe_routed_v2)
//   grouped      launch_moe_group + launch_matvec with groups: each used expert read once for up to
//                8 of its slots (kernels.moe_device_route_prefill)
//   grouped_mma  the grouped form on the int8 tensor cores (kernels.moe_grouped_mma)
// Per type and token count, in one process on the same bytes:
//   - identity: every form's output against one plain m = 1 launch per slot on that slot's expert
//     matrix and activation row (outputs poisoned with 0xFF first): byte-identical for routed,
//     routed_v2 and grouped (their contract), normalized error <= 1e-5 for grouped_mma (another
//     summation order, kernel-check's tolerance); two id sets, on two different weight copies;
//   - the plain launches themselves against f64 dots of the CPU-dequantized bytes (rows sampled from
//     every slot of the first two tokens), so a wrong plain kernel cannot vouch for the others;
//   - event-timed graph replays of B launches each (graph_timer.h), the forms interleaved rep by rep;
//     launch i uses its own random id set and weight copy i mod C, with C chosen so that the
//     experts read between two uses of a copy exceed l2_factor x L2 (C x 128 experts resident).
// Bytes per launch (the floor): the distinct experts the id set uses x their bytes + the q8_1
// activation rows + the f32 outputs. With --anchors (../shared/anchors/llamacpp-h200.md) the
// gate/up shape's times are divided into llama.cpp's MUL_MAT_ID figures for the same shape and n
// (which repeat the same 128 experts, so at small n partly from L2: a conservative ratio for us).
// Exit 1 when a gate fails.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/app.h"
#include "common/probe_timing.h"
#include "core/error.h"
#include "core/stats.h"
#include "perfmodel/anchors.h"
#include "perfmodel/roofline.h"
#include "quant/quant.h"

#ifdef MEMRA_HAVE_CUDA
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/runtime.h"
#include "matvec/matvec.h"
#include "matvec/matvec_v2.h"
#include "matvec_rp/graph_timer.h"
#include "moe/moe_kernels.h"
#endif

using namespace memra;

namespace {

// The Qwen3-30B-A3B expert shapes (the defaults), the ones llama.cpp's MUL_MAT_ID anchors measure.
constexpr int kAnchorExperts = 128, kAnchorUsed = 8;
constexpr int64_t kAnchorEmbd = 2048, kAnchorFf = 768;

struct Shape {
  const char* key;     // gate names
  const char* tensor;  // GGUF tensor names
  int64_t rows, cols;
  bool x_per_slot;  // activation row per slot (down) or per token (gate / up)
};
// gate / up: n_ff x n_embd per expert; down: n_embd x n_ff.
std::vector<Shape> shapes_of(int64_t n_embd, int64_t n_ff) {
  return {{"gate_up", "ffn_gate_exps,ffn_up_exps", n_ff, n_embd, false}, {"down", "ffn_down_exps", n_embd, n_ff, true}};
}
enum class Form { kRouted, kRoutedV2, kGrouped, kGroupedMma };
constexpr Form kForms[] = {Form::kRouted, Form::kRoutedV2, Form::kGrouped, Form::kGroupedMma};
constexpr int kNumForms = 4;
const char* form_name(Form f) {
  switch (f) {
    case Form::kRouted: return "routed";
    case Form::kRoutedV2: return "routed_v2";
    case Form::kGrouped: return "grouped";
    case Form::kGroupedMma: return "grouped_mma";
  }
  return "?";
}

struct Options {
  uint64_t seed = 1;
  int reps = 30;
  int warmup = 5;
  int rows_per_block = 4;
  double l2_factor = 2.5;
  int min_batch = 16;
  std::vector<std::string> types = {"Q8_0", "Q6_K", "Q4_K", "Q4_0"};
  std::vector<int> tokens = {1, 4, 8, 32, 512};
  std::string anchors;
  int experts = kAnchorExperts, used = kAnchorUsed;
  int64_t n_embd = kAnchorEmbd, n_ff = kAnchorFf;
  bool anchor_shape() const {
    return experts == kAnchorExperts && used == kAnchorUsed && n_embd == kAnchorEmbd && n_ff == kAnchorFf;
  }
};

// The anchor table's column name for a type: "Q4_K" -> "q4_K".
std::string anchor_type_name(QType t) {
  std::string s(qtype_name(t));
  if (!s.empty()) s[0] = (char)std::tolower((unsigned char)s[0]);
  return s;
}

#ifdef MEMRA_HAVE_CUDA

constexpr double kTolMma = 1e-5;
constexpr double kTolF64 = 1e-5;

size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

double norm_err(const std::vector<float>& got, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = (double)got[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}


struct Gate {
  std::string name;
  bool pass;
  nlohmann::json detail;
};

// One type, one shape: every token count. Appends gates; returns the per-n JSON rows.
class ShapeRun {
 public:
  ShapeRun(cuda::Context& ctx, QType t, const Shape& s, const Options& o, const perf::KernelAnchorTable* anchors)
      : ctx_(ctx), st_(ctx.compute_stream()), t_(t), s_(s), o_(o), anchors_(anchors) {}

  nlohmann::json run(std::vector<Gate>& gates) {
    const int64_t R = s_.rows, Cc = s_.cols;
    row_bytes_ = *qtype_row_bytes(t_, (uint64_t)Cc);
    eb_ = (size_t)R * row_bytes_;
    copy_stride_ = round_up(eb_ * o_.experts, 256);
    // Copies: between two uses of a copy the other C - 1 launches read >= o_.used experts each.
    const size_t l2 = ctx_.info().l2_bytes;
    C_ = 1 + (int)std::ceil(o_.l2_factor * (double)l2 / ((double)o_.used * (double)eb_));
    const int n_max = *std::max_element(o_.tokens.begin(), o_.tokens.end());
    const int64_t slots_max = (int64_t)n_max * o_.used;
    xrows_max_ = s_.x_per_slot ? slots_max : n_max;
    x_row_bytes_ = (size_t)(Cc / 32) * 36;
    const size_t y_bytes = 4 * (size_t)slots_max * (size_t)R;
    ctx_.require_free(C_ * copy_stride_ + xrows_max_ * x_row_bytes_ + 2 * y_bytes,
                      std::string("moe-devq8-check buffers for ") + std::string(qtype_name(t_)) + " " + s_.key);
    dw_ = std::make_unique<cuda::DeviceBuffer>(ctx_.pool(), C_ * copy_stride_, "expert weight copies");
    dx_ = std::make_unique<cuda::DeviceBuffer>(ctx_.pool(), xrows_max_ * x_row_bytes_, "q8_1 activations");
    dy_ = std::make_unique<cuda::DeviceBuffer>(ctx_.pool(), y_bytes, "y of a form");
    dplain_ = std::make_unique<cuda::DeviceBuffer>(ctx_.pool(), y_bytes, "y of the plain launches");

    std::seed_seq sq{o_.seed, (uint64_t)t_, (uint64_t)R, (uint64_t)Cc};
    rng_.seed(sq);
    w_.resize(eb_ * o_.experts);
    fill_random_blocks(t_, w_.data(), (int64_t)(w_.size() / qtype_traits(t_).block_bytes), rng_);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> x((size_t)(xrows_max_ * Cc));
    for (auto& v : x) v = nd(rng_);
    xq_.resize((size_t)xrows_max_ * x_row_bytes_);
    for (int64_t j = 0; j < xrows_max_; ++j)
      quantize_row(QType::Q8_1, x.data() + j * Cc, xq_.data() + j * x_row_bytes_, Cc);
    cuda::copy_h2d(dx_->get(), xq_.data(), xq_.size(), st_);
    cuda::copy_h2d(copy(0), w_.data(), w_.size(), st_);
    for (int c = 1; c < C_; ++c) cuda::copy_d2d(copy(c), copy(0), w_.size(), st_);
    cuda::stream_sync(st_);

    nlohmann::json rows = nlohmann::json::array();
    for (int n : o_.tokens) rows.push_back(run_n(n, gates));
    return rows;
  }

 private:
  uint8_t* copy(int c) { return dw_->as<uint8_t>() + (size_t)c * copy_stride_; }
  bool built(Form f) const {
    if (f == Form::kRoutedV2) return cuda::matvec_v2_built(t_);
    if (f == Form::kGroupedMma) return cuda::matvec_grouped_mma_built(t_);
    return true;
  }
  std::string gate_prefix(int n) const {
    return "moe-devq8/" + std::string(qtype_name(t_)) + "/" + s_.key + "/n" + std::to_string(n);
  }

  // Random routing: each token picks o_.used distinct experts (a partial shuffle), in a random order.
  std::vector<int32_t> random_ids(int n) {
    std::vector<int32_t> ids((size_t)n * o_.used), perm(o_.experts);
    for (int tkn = 0; tkn < n; ++tkn) {
      std::iota(perm.begin(), perm.end(), 0);
      for (int j = 0; j < o_.used; ++j) {
        std::uniform_int_distribution<int> pick(j, o_.experts - 1);
        std::swap(perm[(size_t)j], perm[(size_t)pick(rng_)]);
        ids[(size_t)tkn * o_.used + j] = perm[(size_t)j];
      }
    }
    return ids;
  }

  cuda::MatvecParams base_params(int copy_i, const int32_t* ids, int n_slots, float* y) {
    cuda::MatvecParams p;
    p.w_type = t_;
    p.w = copy(copy_i);
    p.n_rows = s_.rows;
    p.n_cols = s_.cols;
    p.m = 1;
    p.x_q8_1 = dx_->get();
    p.y = y;
    p.ldy = s_.rows;
    p.rows_per_block = o_.rows_per_block;
    p.ids = ids;
    p.n_slots = n_slots;
    p.n_experts = o_.experts;
    p.expert_bytes = eb_;
    p.x_slot_div = s_.x_per_slot ? 1 : o_.used;
    return p;
  }

  cudaError_t launch_form(Form f, int copy_i, const int32_t* ids, const int32_t* groups, int n_groups, int n_slots,
                          float* y) {
    cuda::MatvecParams p = base_params(copy_i, ids, n_slots, y);
    switch (f) {
      case Form::kRouted: return cuda::launch_matvec(p, st_);
      case Form::kRoutedV2: return cuda::launch_matvec_v2(p, st_);
      case Form::kGrouped:
      case Form::kGroupedMma:
        p.ids = nullptr;
        p.n_slots = 0;
        p.groups = groups;
        p.n_groups = n_groups;
        return f == Form::kGrouped ? cuda::launch_matvec(p, st_) : cuda::launch_matvec_grouped_mma(p, st_);
    }
    return cudaErrorInvalidValue;
  }

  cudaError_t launch_group(const int32_t* ids, int n_slots, int32_t* groups, int n_groups) {
    cuda::MoeGroupParams gp;
    gp.ids = ids;
    gp.n_slots = n_slots;
    gp.n_expert = o_.experts;
    gp.groups = groups;
    gp.n_groups = n_groups;
    return cuda::launch_moe_group(gp, st_);
  }

  // The plain reference of id set `ids` on copy c: one m = 1 launch per slot into dplain_.
  std::vector<float> plain(int c, const std::vector<int32_t>& ids) {
    const int64_t R = s_.rows;
    const size_t n = ids.size() * (size_t)R;
    cuda::fill_bytes(dplain_->get(), 0xFF, 4 * n, st_);
    for (size_t sl = 0; sl < ids.size(); ++sl) {
      cuda::MatvecParams p = base_params(c, nullptr, 0, dplain_->as<float>() + sl * R);
      p.ids = nullptr;
      p.n_slots = 0;
      p.w = copy(c) + (size_t)ids[sl] * eb_;
      p.x_q8_1 = dx_->as<uint8_t>() + (s_.x_per_slot ? sl : sl / o_.used) * x_row_bytes_;
      cuda::check_status(cuda::launch_matvec(p, st_), "launch_matvec (plain, one slot)");
    }
    std::vector<float> y(n);
    cuda::copy_d2h(y.data(), dplain_->get(), 4 * n, st_);
    return y;
  }

  // f64 dots of the CPU-dequantized bytes for the first two tokens' slots, rows 0-15 and R-16..R-1.
  double plain_vs_f64(const std::vector<float>& y, const std::vector<int32_t>& ids, int n) {
    const int64_t R = s_.rows, Cc = s_.cols;
    std::vector<float> wf((size_t)Cc), xf((size_t)Cc);
    std::vector<float> got;
    std::vector<double> ref;
    const int slots = std::min(n, 2) * o_.used;
    for (int sl = 0; sl < slots; ++sl) {
      dequantize_row(QType::Q8_1, xq_.data() + (s_.x_per_slot ? sl : sl / o_.used) * x_row_bytes_, xf.data(), Cc);
      for (int64_t r = 0; r < R; ++r) {
        if (r == 16) r = R - 16;
        dequantize_row(t_, w_.data() + (size_t)ids[(size_t)sl] * eb_ + (size_t)r * row_bytes_, wf.data(), Cc);
        double d = 0;
        for (int64_t k = 0; k < Cc; ++k) d += (double)wf[(size_t)k] * (double)xf[(size_t)k];
        ref.push_back(d);
        got.push_back(y[(size_t)sl * R + r]);
      }
    }
    return norm_err(got, ref);
  }

  nlohmann::json run_n(int n, std::vector<Gate>& gates) {
    const int64_t R = s_.rows;
    const int n_slots = n * o_.used;
    MEMRA_CHECK(n_slots <= 65535, "n = {}: {} slots, more than a launch's 65535", n, n_slots);
    const int B = (std::max(o_.min_batch, C_) + C_ - 1) / C_ * C_;
    const int n_groups = (int)cuda::moe_group_capacity(n_slots, o_.experts);
    std::vector<std::vector<int32_t>> sets;
    std::vector<int32_t> all_ids;
    double floor_bytes = 0;
    for (int i = 0; i < B; ++i) {
      sets.push_back(random_ids(n));
      all_ids.insert(all_ids.end(), sets.back().begin(), sets.back().end());
      const std::set<int32_t> used(sets.back().begin(), sets.back().end());
      floor_bytes += (double)used.size() * (double)eb_;
    }
    const int64_t xrows = s_.x_per_slot ? n_slots : n;
    floor_bytes = floor_bytes / B + (double)xrows * (double)x_row_bytes_ + 4.0 * n_slots * R;
    cuda::DeviceBuffer dids(ctx_.pool(), 4 * all_ids.size(), "id sets");
    cuda::DeviceBuffer dgroups(ctx_.pool(), 4 * (size_t)B * n_groups * cuda::kMoeGroupStride, "groups per id set");
    cuda::copy_h2d(dids.get(), all_ids.data(), 4 * all_ids.size(), st_);
    auto ids_of = [&](int i) { return dids.as<int32_t>() + (size_t)i * n_slots; };
    auto groups_of = [&](int i) { return dgroups.as<int32_t>() + (size_t)i * n_groups * cuda::kMoeGroupStride; };
    for (int i = 0; i < B; ++i)
      cuda::check_status(launch_group(ids_of(i), n_slots, groups_of(i), n_groups), "launch_moe_group");

    nlohmann::json row = {{"type", qtype_name(t_)}, {"shape", s_.key}, {"tensor", s_.tensor}, {"rows", R},
                          {"cols", s_.cols}, {"n_tokens", n}, {"n_slots", n_slots}, {"weight_copies", C_},
                          {"launches_per_graph", B}, {"expert_bytes", eb_}, {"floor_bytes_per_launch", floor_bytes}};
    const std::string pre = gate_prefix(n);

    // ---- identity: id sets 0 and B - 1 (copies 0 and (B - 1) mod C)
    nlohmann::json checks = nlohmann::json::array();
    bool form_ok[kNumForms] = {true, true, true, true};
    bool unsupported[kNumForms] = {false, false, false, false};
    std::string form_err[kNumForms];
    for (int set : {0, B - 1}) {
      const int c = set % C_;
      const auto ref = plain(c, sets[(size_t)set]);
      int64_t ref_bad = 0;
      for (float v : ref) ref_bad += !std::isfinite(v);
      if (set == 0) {
        const double e = plain_vs_f64(ref, sets[0], n);
        const bool ok = ref_bad == 0 && std::isfinite(e) && e <= kTolF64;
        gates.push_back({pre + "/plain-vs-f64", ok, {{"error", e}, {"tolerance", kTolF64}, {"non_finite", ref_bad}}});
        row["plain_vs_f64"] = {{"error", e}, {"tolerance", kTolF64}, {"non_finite", ref_bad}, {"pass", ok}};
      }
      const std::vector<double> refd(ref.begin(), ref.end());
      for (int fi = 0; fi < kNumForms; ++fi) {
        const Form f = kForms[fi];
        if (!built(f) || !form_err[fi].empty() || unsupported[fi]) continue;
        cuda::fill_bytes(dy_->get(), 0xFF, 4 * ref.size(), st_);
        // cudaErrorNotSupported: the form does not take this shape (e.g. routed_v2's 4096-weight
        // windows): no gate, not timed. Another refusal (a status, not a fault: the launchers check
        // before launching) fails its gate.
        const cudaError_t le = launch_form(f, c, ids_of(set), groups_of(set), n_groups, n_slots, dy_->as<float>());
        if (le == cudaErrorNotSupported) {
          unsupported[fi] = true;
          continue;
        }
        try {
          cuda::check_status(le, form_name(f));
        } catch (const Error& e) {
          form_err[fi] = e.what();
          form_ok[fi] = false;
          continue;
        }
        std::vector<float> got(ref.size());
        cuda::copy_d2h(got.data(), dy_->get(), 4 * got.size(), st_);
        int64_t diff = 0, first = -1, bad = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          bad += !std::isfinite(got[i]);
          if (std::memcmp(&got[i], &ref[i], 4) != 0) {
            if (first < 0) first = (int64_t)i;
            ++diff;
          }
        }
        nlohmann::json ck = {{"form", form_name(f)}, {"id_set", set}, {"copy", c}, {"differing_floats", diff},
                             {"first_difference", first}, {"non_finite", bad}};
        bool ok;
        if (f == Form::kGroupedMma) {
          const double err = norm_err(got, refd);
          ok = bad == 0 && std::isfinite(err) && err <= kTolMma;
          ck["error"] = err;
          ck["tolerance"] = kTolMma;
        } else {
          ok = bad == 0 && diff == 0;
          ck["identical"] = ok;
        }
        ck["pass"] = ok;
        form_ok[fi] = form_ok[fi] && ok;
        checks.push_back(std::move(ck));
        if (!ok)
          std::fprintf(stderr, "moe-devq8-check: %s %s set %d: %lld of %zu floats differ, %lld non-finite\n",
                       pre.c_str(), form_name(f), set, (long long)diff, got.size(), (long long)bad);
      }
    }
    row["identity_checks"] = std::move(checks);

    // ---- timing
    std::vector<int> timed;  // form indices, then kNumForms = the group kernel
    for (int fi = 0; fi < kNumForms; ++fi)
      if (built(kForms[fi]) && form_ok[fi] && !unsupported[fi]) timed.push_back(fi);
    timed.push_back(kNumForms);
    std::vector<std::unique_ptr<cuda::GraphBatchTimer>> timers;
    for (int fi : timed) {
      timers.push_back(std::make_unique<cuda::GraphBatchTimer>());
      const cudaError_t e = timers.back()->capture(st_, B, [&](int i) {
        if (fi == kNumForms) return launch_group(ids_of(i), n_slots, groups_of(i), n_groups);
        return launch_form(kForms[fi], i % C_, ids_of(i), groups_of(i), n_groups, n_slots, dy_->as<float>());
      });
      cuda::check_status(e, fi == kNumForms ? "capture moe_group" : form_name(kForms[fi]));
    }
    std::vector<std::vector<double>> samples(timed.size());
    float ms = 0;
    for (int i = 0; i < o_.warmup; ++i)
      for (auto& tm : timers) cuda::check_status(tm->replay_timed(st_, ms), "warm-up replay");
    for (int i = 0; i < o_.reps; ++i)
      for (size_t v = 0; v < timers.size(); ++v) {
        const size_t k = (v + (size_t)i) % timers.size();  // no form always follows the same one
        cuda::check_status(timers[k]->replay_timed(st_, ms), "timed replay");
        samples[k].push_back(1e3 * ms / B);
      }
    std::optional<double> anchor;
    if (anchors_ && !s_.x_per_slot && o_.anchor_shape()) anchor = anchors_->find(anchor_type_name(t_), n);
    double routed_us = 0, best_us = 0;
    std::string best;
    for (size_t k = 0; k < timed.size(); ++k) {
      const SampleStats sst = summarize(samples[k]);
      if (timed[k] == kNumForms) {
        row["group_build"] = app::probe_timing_json(sst, samples[k], 4.0 * n_slots + 4.0 * n_groups * cuda::kMoeGroupStride);
        continue;
      }
      const Form f = kForms[timed[k]];
      nlohmann::json j = app::probe_timing_json(sst, samples[k], floor_bytes);
      if (f == Form::kRouted) routed_us = sst.median;
      if (best.empty() || sst.median < best_us) {
        best_us = sst.median;
        best = form_name(f);
      }
      if (anchor) j["llamacpp_us"] = *anchor, j["speedup_vs_llamacpp"] = *anchor / sst.median;
      row[form_name(f)] = std::move(j);
    }
    for (int fi = 0; fi < kNumForms; ++fi) {
      const Form f = kForms[fi];
      if (!built(f) || unsupported[fi]) {
        row[form_name(f)] = {{"built", built(f)}, {"supported", !unsupported[fi]}};
        continue;
      }
      if (!form_err[fi].empty()) row[form_name(f)] = {{"launch_error", form_err[fi]}};
      else if (routed_us > 0 && row[form_name(f)].contains("median_us"))
        row[form_name(f)]["speedup_vs_routed"] = routed_us / row[form_name(f)]["median_us"].get<double>();
      nlohmann::json d = {{"form", form_name(f)}};
      if (!form_err[fi].empty()) d["launch_error"] = form_err[fi];
      gates.push_back({pre + "/" + form_name(f), form_ok[fi], d});
    }
    row["best_form"] = best;
    row["best_us"] = best_us;
    if (anchor) row["llamacpp_us"] = *anchor, row["best_speedup_vs_llamacpp"] = *anchor / best_us;
    return row;
  }

  cuda::Context& ctx_;
  cudaStream_t st_;
  QType t_;
  const Shape s_;
  const Options& o_;
  const perf::KernelAnchorTable* anchors_;
  std::mt19937_64 rng_;
  size_t row_bytes_ = 0, eb_ = 0, copy_stride_ = 0, x_row_bytes_ = 0;
  int64_t xrows_max_ = 0;
  int C_ = 1;
  std::vector<uint8_t> w_, xq_;
  std::unique_ptr<cuda::DeviceBuffer> dw_, dx_, dy_, dplain_;
};

#endif  // MEMRA_HAVE_CUDA

}  // namespace

int main(int argc, char** argv) {
  Options o;
  app::Spec spec;
  spec.tool = "moe-devq8-check";
  spec.description =
      "memra moe-devq8-check: the device-routed MoE expert matvecs (q8_1 activations), every form, byte identity "
      "against plain per-slot launches and timing on an MoE model's expert shapes (default Qwen3-30B-A3B's)";
  spec.add_options = [&](CLI::App& cli) {
    cli.add_option("--seed", o.seed, "seed of the random weights, activations and routing")->capture_default_str();
    cli.add_option("--reps", o.reps, "timed graph replays per form (median reported)")
        ->check(CLI::Range(20, 100000))
        ->capture_default_str();
    cli.add_option("--warmup", o.warmup, "untimed graph replays per form first")
        ->check(CLI::Range(1, 10000))
        ->capture_default_str();
    cli.add_option("--rows-per-block", o.rows_per_block, "warps per CTA (1, 2, 4, 8)")
        ->check(CLI::IsMember({1, 2, 4, 8}))
        ->capture_default_str();
    cli.add_option("--types", o.types, "expert weight types (GGUF names)")->delimiter(',')->capture_default_str();
    cli.add_option("--tokens", o.tokens, "tokens per launch (each routes to --used of --experts experts)")
        ->delimiter(',')
        ->check(CLI::Range(1, 8191))
        ->capture_default_str();
    // Other MoE models' expert shapes (e.g. Qwen3.5-35B-A3B: --experts 256 --ff 512); llama.cpp's
    // anchors are for the defaults only.
    cli.add_option("--experts", o.experts, "experts per layer")->check(CLI::Range(1, 1024))->capture_default_str();
    cli.add_option("--used", o.used, "experts each token routes to")->check(CLI::Range(1, 64))->capture_default_str();
    cli.add_option("--embd", o.n_embd, "hidden size (gate/up columns, down rows)")
        ->check(CLI::Range(int64_t{256}, int64_t{65536}))
        ->capture_default_str();
    cli.add_option("--ff", o.n_ff, "expert feed-forward size (gate/up rows, down columns)")
        ->check(CLI::Range(int64_t{256}, int64_t{65536}))
        ->capture_default_str();
    cli.add_option("--anchors", o.anchors,
                   "llama.cpp's figures (../shared/anchors/llamacpp-h200.md): its MUL_MAT_ID table, same shape")
        ->check(CLI::ExistingFile);
  };
  spec.run = [&](app::Context& ctx) -> int {
    std::vector<QType> types;
    for (const auto& name : o.types) {
      const auto t = qtype_from_name(name);
      MEMRA_CHECK(t.has_value(), "--types: unknown type '{}'", name);
      MEMRA_CHECK(qtype_traits(*t).quantized && *t != QType::Q8_1 && *t != QType::Q8_K,
                  "--types: {} is not a weight block type the expert matvecs take", name);
      for (int64_t c : {o.n_embd, o.n_ff})
        MEMRA_CHECK(c % qtype_traits(*t).block_elems == 0 && c % 64 == 0,
                    "--types: {}'s {}-element blocks (and the matvecs' 64-element tasks) do not divide {} columns", name,
                    qtype_traits(*t).block_elems, c);
      types.push_back(*t);
    }
    MEMRA_CHECK(o.used <= o.experts, "--used {} is more than --experts {}", o.used, o.experts);
    for (int n : o.tokens)
      MEMRA_CHECK((int64_t)n * o.used <= 65535, "--tokens {}: {} slots, more than a launch's 65535", n, (int64_t)n * o.used);
    MEMRA_CHECK(!types.empty() && !o.tokens.empty(), "--types and --tokens must name at least one value");
    std::optional<perf::KernelAnchorTable> anchors;
    if (!o.anchors.empty()) {
      std::ifstream in(o.anchors);
      std::stringstream ss;
      ss << in.rdbuf();
      anchors = perf::parse_kernel_anchor_table(ss.str(), "MUL_MAT_ID");
      MEMRA_CHECK(anchors.has_value(), "--anchors {}: no '### MUL_MAT_ID' section", o.anchors);
    }
#ifndef MEMRA_HAVE_CUDA
    (void)ctx;
    MEMRA_FAIL("moe-devq8-check needs a CUDA build (configure with --preset release)");
#else
    auto cuctx = cuda::Context::create();
    const auto& di = cuctx->info();
    std::vector<Gate> gates;
    nlohmann::json rows = nlohmann::json::array();
    nlohmann::json metrics = nlohmann::json::object();
    std::printf("%-5s %-7s %4s %3s %3s | %9s %9s %9s %9s %8s | %-11s %6s %7s\n", "type", "shape", "n", "C", "B",
                "routed us", "v2 us", "group us", "mma us", "build us", "best", "floor", "x llama");
    for (QType t : types)
      for (const Shape& s : shapes_of(o.n_embd, o.n_ff)) {
        ShapeRun sr(*cuctx, t, s, o, anchors ? &*anchors : nullptr);
        for (auto& r : sr.run(gates)) {
          auto us = [&](const char* f) {
            return r.contains(f) && r[f].contains("median_us") ? r[f]["median_us"].get<double>() : NAN;
          };
          const double best = r["best_us"].get<double>();
          const double frac = best > 0 ? r["floor_bytes_per_launch"].get<double>() / (best * 1e-6) /
                                             perf::kH200BandwidthBytesPerS
                                       : 0;
          std::printf("%-5s %-7s %4d %3d %3d | %9.2f %9.2f %9.2f %9.2f %8.2f | %-11s %5.1f%% %7s\n",
                      std::string(qtype_name(t)).c_str(), s.key, r["n_tokens"].get<int>(), r["weight_copies"].get<int>(),
                      r["launches_per_graph"].get<int>(), us("routed"), us("routed_v2"), us("grouped"),
                      us("grouped_mma"), us("group_build"), r["best_form"].get<std::string>().c_str(), 100 * frac,
                      r.contains("best_speedup_vs_llamacpp")
                          ? (std::to_string(r["best_speedup_vs_llamacpp"].get<double>()).substr(0, 5) + "x").c_str()
                          : "-");
          std::fflush(stdout);
          const std::string key =
              std::string(qtype_name(t)) + "/" + s.key + "/n" + std::to_string(r["n_tokens"].get<int>());
          nlohmann::json& mk = metrics[key];
          for (Form f : kForms)
            if (r[form_name(f)].contains("median_us")) {
              mk[std::string(form_name(f)) + "_us"] = r[form_name(f)]["median_us"];
              mk[std::string(form_name(f)) + "_frac_of_4_8_tbps"] = r[form_name(f)]["frac_of_4_8_tbps"];
            }
          mk["best_form"] = r["best_form"];
          mk["best_us"] = r["best_us"];
          if (r.contains("best_speedup_vs_llamacpp")) mk["best_speedup_vs_llamacpp"] = r["best_speedup_vs_llamacpp"];
          rows.push_back(std::move(r));
        }
      }
    metrics["timing"] = {{"method", "CUDA events around one graph replay of B launches; per-launch = batch / B"},
                         {"warmup", o.warmup}, {"reps", o.reps}, {"l2_bytes", di.l2_bytes},
                         {"l2_factor", o.l2_factor}, {"rows_per_block", o.rows_per_block},
                         {"datasheet_bandwidth", perf::kH200BandwidthBytesPerS},
                         {"floor_bytes", "distinct experts of the id set x expert bytes + q8_1 rows + f32 outputs"}};
    if (anchors && !o.anchor_shape())
      std::printf("(--anchors: llama.cpp's MUL_MAT_ID figures are for 128 experts, 8 used, 2048 x 768: not this shape)\n");
    if (anchors && o.anchor_shape())
      metrics["anchor"] = {{"file", o.anchors}, {"table", anchors->title},
                           {"note", "llama.cpp repeats the same weights every launch (L2 serves part of them at "
                                    "small n); ours rotate copies past l2_factor x L2"}};
    bool all = true;
    nlohmann::json gj = nlohmann::json::array();
    for (const auto& g : gates) {
      all = all && g.pass;
      nlohmann::json j = g.detail;
      j["name"] = g.name;
      j["pass"] = g.pass;
      gj.push_back(std::move(j));
    }
    ctx.receipt.metrics() = metrics;
    auto& res = ctx.receipt.results();
    res["device"] = di.name;
    res["seed"] = o.seed;
    res["experts"] = o.experts;
    res["experts_used"] = o.used;
    res["n_embd"] = o.n_embd;
    res["n_ff_exp"] = o.n_ff;
    res["rows"] = std::move(rows);
    res["gates"] = std::move(gj);
    res["all_pass"] = all;
    std::printf("every gate (%zu): %s\n", gates.size(), all ? "pass" : "FAIL");
    return all ? 0 : 1;
#endif
  };
  return app::main(argc, argv, spec);
}
