#pragma once
// The CPU oracle's MoE routing (backend::moe_route) for kernel-check's section "moe" (a .cpp file:
// the backend header pulls in fmt, which nvcc's front end does not take).
#include <cstdint>

namespace memra::kc {

struct RouteRefParams {
  int n_tokens = 0, n_expert = 0, k_used = 0;
  int gating = 0;  // 0 softmax, 1 sigmoid, 2 softmax over the k largest logits (MoeRouteParams)
  bool norm_topk = true;
  float weights_scale = 1.0f;
  const float* router_bias = nullptr;     // added to the logits in f32 first, as the backends do
  const float* selection_bias = nullptr;
};
// ids / weights [n_tokens * k_used] from logits [n_tokens][ld].
void moe_route_ref(const RouteRefParams& p, const float* logits, int64_t ld, int32_t* ids, float* weights);

}  // namespace memra::kc
