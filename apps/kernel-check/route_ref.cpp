#include "route_ref.h"

#include <vector>

#include "backend/backend.h"

namespace memra::kc {

void moe_route_ref(const RouteRefParams& p, const float* logits, int64_t ld, int32_t* ids, float* weights) {
  backend::MoeParams mp;
  mp.n_expert = p.n_expert;
  mp.n_expert_used = p.k_used;
  mp.gating = p.gating == 0 ? backend::MoeGating::Softmax
              : p.gating == 1 ? backend::MoeGating::Sigmoid
                              : backend::MoeGating::SoftmaxWeight;
  mp.norm_topk = p.norm_topk;
  mp.weights_scale = p.weights_scale;
  backend::Weight sel;
  if (p.selection_bias) {
    sel.name = "selection_bias";
    sel.type = QType::F32;
    sel.ne = {p.n_expert, 1, 1, 1};
    sel.n_dims = 1;
    sel.row_bytes = (uint64_t)p.n_expert * sizeof(float);
    sel.data = p.selection_bias;
    mp.selection_bias = &sel;
  }
  std::vector<float> l((size_t)p.n_expert);
  for (int t = 0; t < p.n_tokens; ++t) {
    for (int e = 0; e < p.n_expert; ++e)
      l[(size_t)e] = p.router_bias ? logits[t * ld + e] + p.router_bias[e] : logits[t * ld + e];
    backend::moe_route(l.data(), mp, ids + (int64_t)t * p.k_used, weights + (int64_t)t * p.k_used);
  }
}

}  // namespace memra::kc
