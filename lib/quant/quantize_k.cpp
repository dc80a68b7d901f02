// Reference quantizers of the K formats (Q2_K Q3_K Q4_K Q5_K Q6_K) and of the Q8_K activation
// format. The scale searches (make_qx / make_q3 / make_qkx2 in ggml's terms) are reproduced
// operation by operation: the float expressions keep ggml's evaluation order, because a
// different association changes the chosen scale and so the bytes.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/levels.h"
#include "quant/quantize_impl.h"

namespace memra::quant_detail {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// The element of largest magnitude (first one on ties), with its magnitude in *amax.
float signed_absmax(int n, const float* x, float* amax) {
  float max = 0;
  *amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > *amax) {
      *amax = ax;
      max = x[i];
    }
  }
  return max;
}

}  // namespace

// Symmetric levels in [-nmax, nmax) with weights x^2; tries 18 scales around nmax/max and keeps
// the least-squares best. L receives level + nmax.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = (int8_t)(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = (int8_t)(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

namespace {

// Q3_K's per-16 search: start from nmax/max, then up to 5 passes of coordinate descent on each
// level. L receives level + nmax.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = (int8_t)l;
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx > 0) {
        float sl2 = suml2 - w * L[i] * L[i];
        int new_l = nearest_int(x[i] * sl2 / slx);
        new_l = std::max(-nmax, std::min(nmax - 1, new_l));
        if (new_l != L[i]) {
          slx += w * x[i] * new_l;
          sl2 += w * new_l * new_l;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = (int8_t)new_l;
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = (int8_t)(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Pack (scale, min) 6-bit pairs of Q4_K / Q5_K.
void pack_k4_scales(uint8_t* sc, const uint8_t* ls, const uint8_t* lm) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      sc[j] = ls[j];
      sc[j + 4] = lm[j];
    } else {
      sc[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      sc[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
      sc[j] |= (uint8_t)((lm[j] >> 4) << 6);
    }
  }
}

void k4_scale_min(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Shared body of Q4_K (nmax 15) and Q5_K (nmax 31): per 32 elements an asymmetric fit, then
// 6-bit scales/mins relative to the largest, then levels requantized with the rounded scales.
}  // namespace

// Asymmetric levels [0, nmax] with a min <= 0: weighted least squares over nstep+1 candidate
// scales. Returns the scale; *the_min = -min.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = (uint8_t)std::max(0, std::min(nmax, l));
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = (uint8_t)l;
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}


// make_qkx2_quants for the 8 sub-blocks of 32 of one superblock at once: every lane (sub-block)
// runs the scalar function's operations in the scalar function's order on its own data, only
// 8 at a time (GCC vector extensions compiled for AVX2 -- not FMA, so nothing is contracted),
// so the bytes are the same (tests/quant/test_qkx2_x8.cpp checks it against the scalar function
// on random and degenerate blocks). The search is ~85% of Q4_K quantization; bench_dequant
// qkx2_search: 22.3 us scalar vs 5.0 us x8 per superblock on this machine's CPU. Called only
// when the CPU has AVX2 (quantize_k45); without it, baseline-x86 vectors were 1.2x slower.
namespace {
// Internal inline helpers: the vector-ABI note (-Wpsabi) does not apply.

#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

__attribute__((target("avx2"))) inline v8i nearest_int8(v8f f) {
  const v8f v = f + 12582912.f;
  v8i i;
  __builtin_memcpy(&i, &v, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}
__attribute__((target("avx2"))) inline v8i clamp8(v8i l, int lo, int hi) {
  l = l < lo ? (v8i){} + lo : l;
  return l > hi ? (v8i){} + hi : l;
}
__attribute__((target("avx2"))) inline v8f to_f(v8i l) { return __builtin_convertvector(l, v8f); }
}  // namespace

__attribute__((target("avx2"))) void make_qkx2_quants_x8(int nmax, const float* x, const float (*weights)[32],
                                                         uint8_t* L, float* scales, float* the_mins, float rmin,
                                                         float rdelta, int nstep) {
  constexpr int n = 32;
  v8f xs[n], ws[n];
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < 8; ++j) {
      xs[i][j] = x[32 * j + i];
      ws[i][j] = weights[j][i];
    }
  v8f min = xs[0], max = xs[0];
  v8f sum_w = ws[0];
  v8f sum_x = sum_w * xs[0];
  for (int i = 1; i < n; ++i) {
    min = xs[i] < min ? xs[i] : min;
    max = xs[i] > max ? xs[i] : max;
    sum_w += ws[i];
    sum_x += ws[i] * xs[i];
  }
  min = min > 0 ? (v8f){} : min;
  const v8f min0 = min;
  const v8i flat = max == min;
  const v8f fnmax = (v8f){} + (float)nmax;
  v8f iscale = fnmax / (max - min);
  v8f scale = 1 / iscale;
  v8f best_error = {};
  v8i Lv[n], Laux[n];
  for (int i = 0; i < n; ++i) {
    Lv[i] = clamp8(nearest_int8(iscale * (xs[i] - min)), 0, nmax);
    const v8f diff = scale * to_f(Lv[i]) + min - xs[i];
    best_error += ws[i] * (diff * diff);
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + fnmax) / (max - min);
    v8f sum_l = {}, sum_l2 = {}, sum_xl = {};
    for (int i = 0; i < n; ++i) {
      Laux[i] = clamp8(nearest_int8(iscale * (xs[i] - min)), 0, nmax);
      const v8f l = to_f(Laux[i]);
      sum_l += ws[i] * l;
      sum_l2 += ws[i] * l * l;
      sum_xl += ws[i] * l * xs[i];
    }
    const v8f D = sum_w * sum_l2 - sum_l * sum_l;
    const v8i ok = D > 0;
    v8f this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    v8f this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    const v8i pos = this_min > 0;
    this_min = pos ? (v8f){} : this_min;
    this_scale = pos ? sum_xl / sum_l2 : this_scale;
    v8f cur_error = {};
    for (int i = 0; i < n; ++i) {
      const v8f diff = this_scale * to_f(Laux[i]) + this_min - xs[i];
      cur_error += ws[i] * (diff * diff);
    }
    const v8i take = ok & (cur_error < best_error);
    for (int i = 0; i < n; ++i) Lv[i] = take ? Laux[i] : Lv[i];
    best_error = take ? cur_error : best_error;
    scale = take ? this_scale : scale;
    min = take ? this_min : min;
  }
  for (int j = 0; j < 8; ++j) {
    if (flat[j]) {
      for (int i = 0; i < n; ++i) L[32 * j + i] = 0;
      // The scalar function returns 0 and -min with min = min(x, 0) here.
      scales[j] = 0.f;
      the_mins[j] = -min0[j];
      continue;
    }
    for (int i = 0; i < n; ++i) L[32 * j + i] = (uint8_t)Lv[i][j];
    scales[j] = scale[j];
    the_mins[j] = -min[j];
  }
}


// make_qx_quants (symmetric levels, weights x^2, 18 extra candidate scales) for 8 sub-blocks of
// n consecutive values at once (x + n*j for lane j), each lane in the scalar order, AVX2 without
// FMA: the same bytes (tests/quant/test_qkx2_x8.cpp). Q6_K calls it twice per superblock.
__attribute__((target("avx2"))) void make_qx_quants_x8(int n, int nmax, const float* x, int8_t* L, float* scales) {
  const float eps = kGroupMaxEps;
  v8f amax = {}, max = {};
  for (int i = 0; i < n; ++i) {
    v8f xi;
    for (int j = 0; j < 8; ++j) xi[j] = x[n * j + i];
    const v8f ax = xi < 0 ? -xi : xi;
    const v8i gt = ax > amax;
    amax = gt ? ax : amax;
    max = gt ? xi : max;
  }
  const v8i zero = amax < eps;
  // Levels and the two weighted sums for one candidate scale, as the scalar loop forms them.
  auto trial = [&](v8f iscale, v8i* lv, v8f& sumlx, v8f& suml2) {
    sumlx = v8f{};
    suml2 = v8f{};
    for (int i = 0; i < n; ++i) {
      v8f xi;
      for (int j = 0; j < 8; ++j) xi[j] = x[n * j + i];
      const v8i l = clamp8(nearest_int8(iscale * xi), -nmax, nmax - 1);
      lv[i] = l;
      const v8f w = xi * xi;
      const v8f lf = to_f(l);
      sumlx += w * xi * lf;
      suml2 += w * lf * lf;
    }
  };
  v8i Lv[32], La[32];  // n <= 32
  v8f sumlx, suml2;
  trial((float)(-nmax) / max, Lv, sumlx, suml2);
  v8f scale = suml2 != 0 ? sumlx / suml2 : (v8f){};
  v8f best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    v8f sx, s2;
    trial(-(nmax + 0.1f * is) / max, La, sx, s2);
    const v8i take = (s2 > 0) & (sx * sx > best * s2);
    for (int i = 0; i < n; ++i) Lv[i] = take ? La[i] : Lv[i];
    const v8f sc = sx / s2;
    scale = take ? sc : scale;
    best = take ? sc * sx : best;
  }
  for (int j = 0; j < 8; ++j) {
    if (zero[j]) {
      for (int i = 0; i < n; ++i) L[n * j + i] = 0;
      scales[j] = 0.f;
      continue;
    }
    for (int i = 0; i < n; ++i) L[n * j + i] = (int8_t)(Lv[i][j] + nmax);
    scales[j] = scale[j];
  }
}

namespace {

void quantize_k45(const float* x, uint8_t* hdr, uint8_t* L, int nmax, float rmin, int nstep) {
  float mins[8], scales[8], weights[8][32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[j][l] = av_x + std::fabs(x[32 * j + l]);
  }
  // The 8-lane search needs AVX2 (4.5x faster there, same bytes); elsewhere the scalar one.
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    make_qkx2_quants_x8(nmax, x, weights, L, scales, mins, rmin, 0.1f, nstep);
  } else {
    uint8_t Laux[32];
    for (int j = 0; j < 8; ++j)
      scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights[j], L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep,
                                   false);
  }
  for (int j = 0; j < 8; ++j) {
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = std::min<uint8_t>(63, (uint8_t)nearest_int(inv_scale * scales[j]));
    lm[j] = std::min<uint8_t>(63, (uint8_t)nearest_int(inv_min * mins[j]));
  }
  pack_k4_scales(hdr + 4, ls, lm);
  store_f16(hdr, max_scale / 63.f);
  store_f16(hdr + 2, max_min / 63.f);
  const float d_all = load_f16(hdr), dmin_all = load_f16(hdr + 2);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    k4_scale_min(j, hdr + 4, &sc, &m);
    const float d = d_all * sc;
    if (!d) continue;
    const float dm = dmin_all * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = (uint8_t)std::max(0, std::min(nmax, l));
    }
  }
}

// 2-bit planes of Q2_K / Q3_K: element 32*j + l of each 128-half at bits 2j of byte l.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 256; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] =
          (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

}  // namespace

void quantize_q2_k(const float* x, uint8_t* y, int64_t nb) {
  uint8_t L[256], Laux[16];
  float weights[16], mins[16], scales[16];
  constexpr float q4scale = 15.f;
  for (int64_t i = 0; i < nb; ++i, x += 256, y += 84) {
    uint8_t* sc = y;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f,
                                   0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int j = 0; j < 16; ++j) sc[j] = (uint8_t)nearest_int(iscale * scales[j]);
      store_f16(y + 80, max_scale / q4scale);
    } else {
      for (int j = 0; j < 16; ++j) sc[j] = 0;
      store_f16(y + 80, 0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int j = 0; j < 16; ++j) sc[j] |= (uint8_t)(nearest_int(iscale * mins[j]) << 4);
      store_f16(y + 82, max_min / q4scale);
    } else {
      store_f16(y + 82, 0.f);
    }
    const float d_all = load_f16(y + 80), dmin_all = load_f16(y + 82);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * (sc[j] & 0xF);
      if (!d) continue;
      const float dm = dmin_all * (sc[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int((x[16 * j + ii] + dm) / d);
        L[16 * j + ii] = (uint8_t)std::max(0, std::min(3, l));
      }
    }
    pack_2bit(L, y + 16);
  }
}

void quantize_q3_k(const float* x, uint8_t* y, int64_t nb) {
  int8_t L[256];
  float scales[16];
  for (int64_t i = 0; i < nb; ++i, x += 256, y += 110) {
    uint8_t* hmask = y;
    uint8_t* qs = y + 32;
    uint8_t* sc = y + 96;
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    std::memset(sc, 0, 12);
    if (max_scale) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        int8_t l = (int8_t)nearest_int(iscale * scales[j]);
        l = (int8_t)(std::max<int>(-32, std::min<int>(31, l)) + 32);
        if (j < 8)
          sc[j] = (uint8_t)(l & 0xF);
        else
          sc[j - 8] |= (uint8_t)((l & 0xF) << 4);
        l = (int8_t)(l >> 4);
        sc[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
      }
      store_f16(y + 108, 1 / iscale);
    } else {
      store_f16(y + 108, 0.f);
    }
    const float d_all = load_f16(y + 108);
    for (int j = 0; j < 16; ++j) {
      int s = j < 8 ? sc[j] & 0xF : sc[j - 8] >> 4;
      s = (s | (((sc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
      const float d = d_all * s;
      if (!d) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * j + ii] / d);
        L[16 * j + ii] = (int8_t)(std::max(-4, std::min(3, l)) + 4);
      }
    }
    // High bit of element j goes to bit j/32 of hmask[j % 32].
    std::memset(hmask, 0, 32);
    for (int j = 0; j < 256; ++j)
      if (L[j] > 3) {
        hmask[j % 32] |= (uint8_t)(1 << (j / 32));
        L[j] = (int8_t)(L[j] - 4);
      }
    pack_2bit(reinterpret_cast<const uint8_t*>(L), qs);
  }
}

void quantize_q4_k(const float* x, uint8_t* y, int64_t nb) {
  uint8_t L[256];
  for (int64_t i = 0; i < nb; ++i, x += 256, y += 144) {
    quantize_k45(x, y, L, 15, -1.f, 20);
    uint8_t* q = y + 16;
    for (int j = 0; j < 256; j += 64, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
  }
}

void quantize_q5_k(const float* x, uint8_t* y, int64_t nb) {
  uint8_t L[256];
  for (int64_t i = 0; i < nb; ++i, x += 256, y += 176) {
    quantize_k45(x, y, L, 31, -0.5f, 15);
    uint8_t* qh = y + 16;
    uint8_t* ql = y + 48;
    std::memset(qh, 0, 32);
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < 256; n += 64, ql += 32) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[n + j], l2 = L[n + j + 32];
        if (l1 > 15) {
          l1 -= 16;
          qh[j] |= m1;
        }
        if (l2 > 15) {
          l2 -= 16;
          qh[j] |= m2;
        }
        ql[j] = (uint8_t)(l1 | (l2 << 4));
      }
      m1 = (uint8_t)(m1 << 2);
      m2 = (uint8_t)(m2 << 2);
    }
  }
}

void quantize_q6_k(const float* x, uint8_t* y, int64_t nb) {
  int8_t L[256];
  float scales[16];
  for (int64_t i = 0; i < nb; ++i, x += 256, y += 210) {
    float max_scale = 0, max_abs_scale = 0;
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2) {
      make_qx_quants_x8(16, 32, x, L, scales);
      make_qx_quants_x8(16, 32, x + 128, L + 128, scales + 8);
    } else {
      for (int ib = 0; ib < 16; ++ib) scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
    }
    for (int ib = 0; ib < 16; ++ib) {
      const float abs_scale = std::fabs(scales[ib]);
      if (abs_scale > max_abs_scale) {
        max_abs_scale = abs_scale;
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(y, 0, 210);
      continue;
    }
    int8_t* sc = reinterpret_cast<int8_t*>(y + 192);
    const float iscale = -128.f / max_scale;
    store_f16(y + 208, 1 / iscale);
    for (int ib = 0; ib < 16; ++ib) sc[ib] = (int8_t)std::min(127, nearest_int(iscale * scales[ib]));
    const float d_all = load_f16(y + 208);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * sc[j];
      if (!d) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * j + ii] / d);
        L[16 * j + ii] = (int8_t)(std::max(-32, std::min(31, l)) + 32);
      }
    }
    uint8_t* ql = y;
    uint8_t* qh = y + 128;
    for (int j = 0; j < 256; j += 128, ql += 64, qh += 32)
      for (int l = 0; l < 32; ++l) {
        const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
        const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
        ql[l] = (uint8_t)(q1 | (q3 << 4));
        ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
        qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                          ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
      }
  }
}

// Ternary formats: levels round(x / amax) in {-1, 0, 1} stored as trits 0..2.
void quantize_tq1_0(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 54) {
    float amax = 0.0f;
    for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float id = amax ? 1.0f / amax : 0.0f;
    store_f16(y + 52, amax);
    auto trit = [&](float v) { return (int)std::lround(v * id) + 1; };
    // Five trits per byte, most significant first, stored as ceil(v * 256 / 243) so that the
    // decoder's multiply-by-3^n-and-take-the-top-bits reads them back.
    auto pack5 = [](int v) { return (uint8_t)(((uint16_t)(uint8_t)v * 256 + 242) / 243); };
    for (int m = 0; m < 32; ++m) {
      int q = 0;
      for (int n = 0; n < 5; ++n) q = (uint8_t)(q * 3 + trit(x[m + 32 * n]));
      y[m] = pack5(q);
    }
    x += 160;
    for (int m = 0; m < 16; ++m) {
      int q = 0;
      for (int n = 0; n < 5; ++n) q = (uint8_t)(q * 3 + trit(x[m + 16 * n]));
      y[32 + m] = pack5(q);
    }
    x += 80;
    for (int j = 0; j < 4; ++j) {
      int q = 0;
      for (int m = 0; m < 4; ++m) q = (uint8_t)(q * 3 + trit(x[j + 4 * m]));
      y[48 + j] = pack5((uint8_t)(q * 3));  // four trits, shifted to the top
    }
    x += 16;
  }
}

void quantize_tq2_0(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 256, y += 66) {
    float amax = 0.0f;
    for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float id = amax ? 1.0f / amax : 0.0f;
    store_f16(y + 64, amax);
    for (int h = 0; h < 2; ++h)
      for (int m = 0; m < 32; ++m) {
        int q = 0;
        for (int n = 0; n < 4; ++n) q += (((int)std::lround(x[128 * h + m + 32 * n] * id) + 1) & 3) << (2 * n);
        y[32 * h + m] = (uint8_t)q;
      }
  }
}

void quantize_q8_k(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 256, y += 292) {
    float max = 0, amax = 0;
    for (int j = 0; j < 256; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (!amax) {
      std::memset(y, 0, 292);
      continue;
    }
    // -127 (not -128) so that no level is -128: the AVX2 IQ2 dot products rely on it.
    const float iscale = -127.f / max;
    int8_t* qs = reinterpret_cast<int8_t*>(y + 4);
    for (int j = 0; j < 256; ++j) qs[j] = (int8_t)std::min(127, nearest_int(iscale * x[j]));
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int ii = 0; ii < 16; ++ii) sum += qs[16 * j + ii];
      const int16_t s16 = (int16_t)sum;
      std::memcpy(y + 260 + 2 * j, &s16, 2);
    }
    const float d = 1 / iscale;
    std::memcpy(y, &d, 4);
  }
}

}  // namespace memra::quant_detail
