#pragma once
// The routing arithmetic both device routers share (launch_moe_route in moe.cu, the fused router
// of moe_router.cu): one definition, so both give backend::moe_route's ids and the same weights
// from the same picks.
#include <cmath>
#include <cstdint>

namespace memra::cuda {

// Whether (k2, id2) ranks before (key, id): the larger key, the lower id on ties; id -1 = none (a
// total order: every lane of an xor reduction ends with the same pair).
__device__ __forceinline__ bool route_ranks_first(double k2, int id2, double key, int id) {
  return id2 >= 0 && (id < 0 || k2 > key || (k2 == key && id2 < id));
}

// The k picks' weights, in pick order: sel_id[k] the k-th pick (the largest key first), sel_p[k]
// its probability (with gating 2, its logit). gating 2: the softmax of the picked logits; else the
// probabilities renormalized over the picks when norm_topk (the sum floored at 2^-14), each times
// weights_scale; f64, rounded once to f32.
__device__ inline void route_write_weights(const double* sel_p, const int* sel_id, int K, int gating, bool norm_topk,
                                           float weights_scale, int32_t* ids, float* wts) {
  if (gating == 2) {
    const double top = sel_p[0];
    double sum = 0.0;
    for (int k = 0; k < K; ++k) sum += exp(sel_p[k] - top);
    for (int k = 0; k < K; ++k) {
      ids[k] = sel_id[k];
      wts[k] = (float)(exp(sel_p[k] - top) / sum * (double)weights_scale);
    }
    return;
  }
  double sum = 0.0;
  for (int k = 0; k < K; ++k) sum += sel_p[k];
  sum = fmax(sum, 6.103515625e-5);
  for (int k = 0; k < K; ++k) {
    double w = sel_p[k];
    if (norm_topk) w /= sum;
    ids[k] = sel_id[k];
    wts[k] = (float)(w * (double)weights_scale);
  }
}

}  // namespace memra::cuda
