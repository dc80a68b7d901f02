// FP8 E4M3 (OCP E4M3FN) weights with a per-tensor scale or a 128x128 block scale grid: the
// project type FP8_E4M3 (id 4096, README.md).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "quant/quant.h"

namespace memra {

float fp8_e4m3_to_f32(uint8_t v) {
  const bool neg = (v & 0x80) != 0;
  const int e = (v >> 3) & 0xF, m = v & 7;
  float mag;
  if (e == 15 && m == 7)
    mag = NAN;
  else if (e == 0)
    mag = std::ldexp((float)m, -9);  // subnormal: m * 2^-3 * 2^-6
  else
    mag = std::ldexp(1.0f + (float)m / 8.0f, e - 7);
  return neg ? -mag : mag;
}

uint8_t f32_to_fp8_e4m3(float f) {
  if (std::isnan(f)) return 0x7F;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint8_t sign = (uint8_t)((bits >> 24) & 0x80);
  const float a = std::fabs(f);
  if (a >= 448.0f) return (uint8_t)(sign | 0x7E);  // saturate (no infinity in E4M3FN)
  // Quantum of the binade of a: 2^(e-3) for normals (e >= -6), 2^-9 below.
  int e;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1) -> binade exponent e - 1
  const int be = a == 0.0f ? -6 : std::max(e - 1, -6);
  const float q = std::ldexp(1.0f, be - 3);
  // a / q is exact (power of two) and < 16 for normals, so nearbyint rounds ties to even.
  const float k = std::nearbyint(a / q);
  const float r = k * q;
  if (r >= 448.0f) return (uint8_t)(sign | 0x7E);
  if (r == 0.0f) return sign;
  int re;
  std::frexp(r, &re);
  const int rexp = re - 1;
  if (rexp < -6) return (uint8_t)(sign | (int)std::ldexp(r, 9));  // subnormal
  const int man = (int)std::ldexp(r, 3 - rexp) - 8;
  return (uint8_t)(sign | ((rexp + 7) << 3) | man);
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Per-tensor (1x1) or the exact 128x128 grid shape; anything else is a caller error.
void check_grid(const char* what, int64_t rows, int64_t cols, int64_t gr, int64_t gc) {
  MEMRA_CHECK(rows >= 0 && cols >= 0, "{}: negative shape {}x{}", what, rows, cols);
  const bool per_tensor = gr == 1 && gc == 1;
  const bool grid = gr == ceil_div(rows, kFp8ScaleBlock) && gc == ceil_div(cols, kFp8ScaleBlock);
  MEMRA_CHECK(per_tensor || grid,
              "{}: scale grid {}x{} fits neither a per-tensor scale (1x1) nor the 128x128 block "
              "grid of a {}x{} tensor ({}x{})",
              what, gr, gc, rows, cols, ceil_div(rows, kFp8ScaleBlock),
              ceil_div(cols, kFp8ScaleBlock));
}

}  // namespace

void dequantize_fp8_rows(const uint8_t* src, float* dst, int64_t rows, int64_t cols,
                         const float* scale_grid, int64_t grid_rows, int64_t grid_cols) {
  check_grid("dequantize_fp8_rows", rows, cols, grid_rows, grid_cols);
  const bool per_tensor = grid_rows == 1 && grid_cols == 1;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float s = per_tensor ? scale_grid[0]
                                 : scale_grid[(r / kFp8ScaleBlock) * grid_cols + c / kFp8ScaleBlock];
      dst[r * cols + c] = fp8_e4m3_to_f32(src[r * cols + c]) * s;
    }
}

void quantize_fp8_rows(const float* src, uint8_t* dst, int64_t rows, int64_t cols,
                       float* scale_grid, int64_t grid_rows, int64_t grid_cols) {
  check_grid("quantize_fp8_rows", rows, cols, grid_rows, grid_cols);
  const bool per_tensor = grid_rows == 1 && grid_cols == 1;
  const int64_t br = per_tensor ? std::max<int64_t>(rows, 1) : kFp8ScaleBlock;
  const int64_t bc = per_tensor ? std::max<int64_t>(cols, 1) : kFp8ScaleBlock;
  for (int64_t gr = 0; gr < grid_rows; ++gr)
    for (int64_t gc = 0; gc < grid_cols; ++gc) {
      const int64_t r0 = gr * br, r1 = std::min(rows, r0 + br);
      const int64_t c0 = gc * bc, c1 = std::min(cols, c0 + bc);
      float amax = 0.0f;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(src[r * cols + c]));
      const float s = amax > 0.0f ? amax / 448.0f : 1.0f;
      scale_grid[gr * grid_cols + gc] = s;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) dst[r * cols + c] = f32_to_fp8_e4m3(src[r * cols + c] / s);
    }
}

}  // namespace memra
