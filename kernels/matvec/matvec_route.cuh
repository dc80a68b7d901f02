#pragma once
// The routed form of the plain matvecs (MatvecParams::ids, the MoE decode path): blockIdx.y is the
// slot.
#include <cstddef>
#include <cstdint>

namespace memra::cuda {

struct MatvecRoute {
  const int32_t* ids = nullptr;
  int n_experts = 0;
  size_t expert_bytes = 0;
  int x_slot_div = 1;
  // MatvecParams::w2 / y2 (the q8_1 routed kernel only): blockIdx.y >= n_slots is slot
  // blockIdx.y - n_slots on the second matrix.
  const uint8_t* w2 = nullptr;
  float* y2 = nullptr;
  int n_slots = 0;
};

// Slot blockIdx.y's offsets: its expert's matrix (bytes), its activation row (x_row units) and its
// output row; `second`: the slot is on MatvecRoute::w2 / y2 (the offsets then apply to those). ok
// false for an id out of range: then lane 0 has written NaN to output row `row` of the slot and the
// warp must return.
struct MatvecRouteSlot {
  bool ok = false;
  bool second = false;
  size_t w_off = 0;
  size_t x_off = 0;
  int64_t y_off = 0;
};
__device__ __forceinline__ MatvecRouteSlot matvec_route_slot(const MatvecRoute& r, size_t x_row, float* y, int64_t ldy,
                                                             int64_t row, int lane) {
  MatvecRouteSlot o;
  int s = blockIdx.y;
  if (r.w2 && s >= r.n_slots) {
    s -= r.n_slots;
    o.second = true;
    y = r.y2;
  }
  const int32_t e = r.ids[s];
  o.y_off = (int64_t)s * ldy;
  o.ok = e >= 0 && e < r.n_experts;
  if (o.ok) {
    o.w_off = (size_t)e * r.expert_bytes;
    o.x_off = (size_t)(s / r.x_slot_div) * x_row;
  } else if (lane == 0) {
    y[o.y_off + row] = __int_as_float(0x7fc00000);
  }
  return o;
}

// MatvecParams::groups: group blockIdx.y's expert (-1: an unused group) and its m <= 8 slots (the
// entries past the last are -1).
struct MatvecGroup {
  int e = -1;
  int m = 0;
  int slot[8];
};
__device__ __forceinline__ MatvecGroup matvec_group(const int32_t* groups) {
  const int32_t* g = groups + (size_t)blockIdx.y * 9;
  MatvecGroup o;
  o.e = g[0];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    o.slot[j] = g[1 + j];
    o.m += o.slot[j] >= 0;
  }
  return o;
}

}  // namespace memra::cuda
