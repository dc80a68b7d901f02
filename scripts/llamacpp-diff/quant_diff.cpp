// memra's quantizers, dequantizers, activation quantizers and vec_dot against ggml's (llama.cpp's
// tensor library, an implementation none of us wrote) on many rows of many kinds, including the
// kinds the reference files hold back (uniform positive, all zero, per-block scales, alternating
// signs) and harsher ones (subnormals, huge values, ties). Built and run by scripts/llamacpp-diff.sh;
// not part of CI (it downloads and builds llama.cpp). Usage: quant_diff [rows per kind].
// Expected: quantizers and dequantizers byte-identical to ggml's reference path for every type,
// activation quantizers (quantize_activation_row) to ggml's CPU from_float, vec_dot within 1e-5 of
// the sum of |terms|: 0 mismatches.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <functional>
#include <vector>

#include "ggml.h"
#include "ggml-cpu.h"
#include "quant/quant.h"
using namespace memra;

// A row kind: its name and a generator that fills a row.
using RowGen = std::function<void(std::mt19937&, std::vector<float>&)>;

static std::vector<std::pair<std::string, RowGen>> kinds() {
  std::vector<std::pair<std::string, RowGen>> k;
  auto gauss = [](float s) { return [s](std::mt19937& g, std::vector<float>& x) { std::normal_distribution<float> d(0, s); for (auto& v : x) v = d(g); }; };
  k.push_back({"gauss1", gauss(1)});
  k.push_back({"gauss0.02", gauss(0.02f)});
  k.push_back({"gauss1000", gauss(1000)});
  k.push_back({"gauss1e-6", gauss(1e-6f)});
  k.push_back({"gauss1e-20", gauss(1e-20f)});
  k.push_back({"uni-1_1", [](std::mt19937& g, std::vector<float>& x) { std::uniform_real_distribution<float> d(-1, 1); for (auto& v : x) v = d(g); }});
  k.push_back({"uni0_1", [](std::mt19937& g, std::vector<float>& x) { std::uniform_real_distribution<float> d(0, 1); for (auto& v : x) v = d(g); }});
  k.push_back({"uni-1_0", [](std::mt19937& g, std::vector<float>& x) { std::uniform_real_distribution<float> d(-1, 0); for (auto& v : x) v = d(g); }});
  k.push_back({"uni5_6", [](std::mt19937& g, std::vector<float>& x) { std::uniform_real_distribution<float> d(5, 6); for (auto& v : x) v = d(g); }});
  k.push_back({"zero", [](std::mt19937&, std::vector<float>& x) { for (auto& v : x) v = 0; }});
  k.push_back({"negzero", [](std::mt19937&, std::vector<float>& x) { for (auto& v : x) v = -0.0f; }});
  k.push_back({"const", [](std::mt19937& g, std::vector<float>& x) { std::uniform_real_distribution<float> d(-3, 3); float c = d(g); for (auto& v : x) v = c; }});
  k.push_back({"alt1", [](std::mt19937&, std::vector<float>& x) { for (size_t i = 0; i < x.size(); ++i) x[i] = i % 2 ? -1.f : 1.f; }});
  k.push_back({"altc", [](std::mt19937& g, std::vector<float>& x) { std::uniform_real_distribution<float> d(0.001f, 10); float c = d(g); for (size_t i = 0; i < x.size(); ++i) x[i] = i % 2 ? -c : c; }});
  k.push_back({"blockscale", [](std::mt19937& g, std::vector<float>& x) { std::normal_distribution<float> d(0, 1); std::uniform_real_distribution<float> e(-3, 2); for (size_t b = 0; b < x.size(); b += 32) { float s = std::pow(10.f, e(g)); for (size_t i = b; i < b + 32; ++i) x[i] = d(g) * s; } }});
  k.push_back({"blockzero", [](std::mt19937& g, std::vector<float>& x) { std::normal_distribution<float> d(0, 1); for (size_t b = 0; b < x.size(); b += 32) { bool z = g() % 2; for (size_t i = b; i < b + 32; ++i) x[i] = z ? 0.f : d(g); } }});
  k.push_back({"sbzero", [](std::mt19937& g, std::vector<float>& x) { std::normal_distribution<float> d(0, 1); for (size_t b = 0; b < x.size(); b += 256) { bool z = g() % 2; for (size_t i = b; i < b + 256; ++i) x[i] = z ? 0.f : d(g); } }});
  k.push_back({"sparse", [](std::mt19937& g, std::vector<float>& x) { std::normal_distribution<float> d(0, 1); for (auto& v : x) v = (g() % 10 == 0) ? d(g) : 0.f; }});
  k.push_back({"onehot", [](std::mt19937& g, std::vector<float>& x) { std::normal_distribution<float> d(0, 1); for (size_t b = 0; b < x.size(); b += 32) { for (size_t i = b; i < b + 32; ++i) x[i] = 0; x[b + g() % 32] = d(g); } }});
  k.push_back({"int-8_7", [](std::mt19937& g, std::vector<float>& x) { for (auto& v : x) v = (float)((int)(g() % 16) - 8); }});
  k.push_back({"int0_15", [](std::mt19937& g, std::vector<float>& x) { for (auto& v : x) v = (float)(g() % 16); }});
  k.push_back({"int-2_1", [](std::mt19937& g, std::vector<float>& x) { for (auto& v : x) v = (float)((int)(g() % 4) - 2); }});
  k.push_back({"outliers", [](std::mt19937& g, std::vector<float>& x) { std::normal_distribution<float> d(0, 1); for (auto& v : x) v = d(g); for (int i = 0; i < 8; ++i) x[g() % x.size()] = (g() % 2 ? 1 : -1) * (20.f + (g() % 30)); }});
  k.push_back({"laplace", [](std::mt19937& g, std::vector<float>& x) { std::exponential_distribution<float> d(1); for (auto& v : x) v = (g() % 2 ? 1 : -1) * d(g); }});
  k.push_back({"sin", [](std::mt19937& g, std::vector<float>& x) { float f = (g() % 100) / 50.f; for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(f * i); }});
  k.push_back({"ramp", [](std::mt19937&, std::vector<float>& x) { for (size_t i = 0; i < x.size(); ++i) x[i] = (float)i / x.size() - 0.5f; }});
  k.push_back({"subnormal", [](std::mt19937& g, std::vector<float>& x) { std::normal_distribution<float> d(0, 1e-39f); for (auto& v : x) v = d(g); }});
  k.push_back({"huge", gauss(1e30f)});
  k.push_back({"ties", [](std::mt19937& g, std::vector<float>& x) { for (auto& v : x) v = ((int)(g() % 33) - 16) * 0.5f; }});
  return k;
}

int main(int argc, char** argv) {
  ggml_cpu_init();
  const int n = 1024;
  const int reps = argc > 1 ? atoi(argv[1]) : 20;
  int bad_total = 0;
  for (const auto& tr : kQTypeTable) {
    if (!tr.quantized && tr.type != QType::F16 && tr.type != QType::BF16) continue;
    const ggml_type gt = (ggml_type)tr.id;
    if ((int)tr.id >= GGML_TYPE_COUNT) continue;
    const auto* gtr = ggml_get_type_traits(gt);
    if (!gtr || gtr->blck_size == 0 || gtr->type_size == 0) continue;
    if (n % gtr->blck_size) continue;
    const bool ours_q = has_quantizer(tr.type);
    const bool need_imatrix = ggml_quantize_requires_imatrix(gt);
    std::vector<float> ones(n, 1.0f);
    int qbad = 0, dbad = 0, vbad = 0, checked = 0;
    std::string first;
    std::mt19937 g(1234 + tr.id);
    for (const auto& [name, gen] : kinds()) {
      const bool iq = std::string(tr.name).rfind("IQ", 0) == 0;
      if (iq && (name == "huge" || name == "subnormal" || name == "gauss1e-20")) continue;  // ggml's codebook searches assert there
      for (int r = 0; r < reps; ++r) {
        std::vector<float> x(n);
        gen(g, x);
        const size_t rb = (size_t)n / gtr->blck_size * gtr->type_size;
        std::vector<uint8_t> qg(rb), qm(rb);
        if (gt == GGML_TYPE_Q8_1 || gt == GGML_TYPE_Q8_K) ggml_get_type_traits_cpu(gt)->from_float(x.data(), qg.data(), n);
        else ggml_quantize_chunk(gt, x.data(), qg.data(), 0, 1, n, need_imatrix ? ones.data() : nullptr);
        ++checked;
        if (ours_q && !need_imatrix) {
          // Q8_1 / Q8_K: ggml's side is the CPU backend's from_float (its quantize_chunk refuses them),
          // so ours is quantize_activation_row
          if (gt == GGML_TYPE_Q8_1 || gt == GGML_TYPE_Q8_K) quantize_activation_row(tr.type, x.data(), qm.data(), n);
          else quantize_row(tr.type, x.data(), qm.data(), n);
          if (memcmp(qg.data(), qm.data(), rb)) { if (!qbad++) first += " quant:" + name; }
        }
        if (has_dequantizer(tr.type) && gtr->to_float) {
          std::vector<float> dg(n), dm(n);
          gtr->to_float(qg.data(), dg.data(), n);
          dequantize_row(tr.type, qg.data(), dm.data(), n);
          bool same = true;
          for (int i = 0; i < n; ++i) if (memcmp(&dg[i], &dm[i], 4) && !(std::isnan(dg[i]) && std::isnan(dm[i]))) same = false;
          if (!same) { if (!dbad++) first += " dequant:" + name; }
        }
        if (has_vec_dot(tr.type)) {
          const auto* ctr = ggml_get_type_traits_cpu(gt);
          const QType at = vec_dot_type(tr.type);
          const auto* atr = ggml_get_type_traits((ggml_type)at);
          std::vector<float> a(n);
          std::normal_distribution<float> d(0, 1);
          for (auto& v : a) v = d(g);
          const size_t ab = (size_t)n / atr->blck_size * atr->type_size;
          std::vector<uint8_t> ag(ab), am(ab);
          ggml_get_type_traits_cpu((ggml_type)at)->from_float(a.data(), ag.data(), n);
          quantize_activation_row(at, a.data(), am.data(), n);  // llama.cpp CPU from_float semantics
          if (memcmp(ag.data(), am.data(), ab)) { if (!vbad++) first += " actquant:" + name; }
          float sg = 0;
          ctr->vec_dot(n, &sg, 0, qg.data(), 0, ag.data(), 0, 1);
          const float sm = vec_dot(tr.type, n, qg.data(), ag.data());
          std::vector<float> wd(n); dequantize_row(tr.type, qg.data(), wd.data(), n);
          double mag = 0; for (int i = 0; i < n; ++i) mag += std::fabs((double)wd[i] * a[i]);
          const float tol = 1e-5f * (float)mag + 1e-6f;
          if (!(std::fabs(sg - sm) <= tol) && !(std::isnan(sg) && std::isnan(sm)) && !(!std::isfinite(sg) && !std::isfinite(sm))) {  // overflowed both ways (|x| ~ 1e30 rows): inf or nan
            if (!vbad++) first += " vecdot:" + name + "(" + std::to_string(sg) + " vs " + std::to_string(sm) + ")";
          }
        }
      }
    }
    printf("%-8s quantizer=%d imatrix=%d rows=%d quant_mismatch=%d dequant_mismatch=%d vecdot_or_act_mismatch=%d%s\n",
           std::string(tr.name).c_str(), ours_q, need_imatrix, checked, qbad, dbad, vbad, first.c_str());
    bad_total += qbad + dbad + vbad;
  }
  printf("total mismatches %d\n", bad_total);
}
