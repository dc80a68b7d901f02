// The CUDA backend's recurrent-layer ops (split from cuda_ops.cpp): the Gated DeltaNet layer of
// qwen35 (kernels/ssm/ssm_kernels.h), its state in the CudaKv layer.
#include <fmt/format.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_op_util.h"
#include "core/error.h"
#include "ssm/ssm_kernels.h"

namespace memra::backend::cuda_impl {

void CudaBackend::gated_delta_net(View qkv, View alpha, View beta, const DeltaNetWeights& w, const DeltaNetParams& dp,
                                  KvStore& kvs, int layer, int pos0, View out) {
  forget_q8s();
  auto& c = dynamic_cast<CudaKv&>(kvs);
  MEMRA_CHECK(layer >= 0 && layer < (int)c.layers.size() && c.layers[(size_t)layer].state.get() &&
                  c.shape_.layers[(size_t)layer].state_floats == dp.state_floats(),
              "gated_delta_net: layer {} of the cache does not hold a state of {} floats", layer, dp.state_floats());
  MEMRA_CHECK(c.state_pos[(size_t)layer] == pos0, "gated_delta_net: layer {} state has consumed {} tokens, asked to "
              "continue at position {}", layer, c.state_pos[(size_t)layer], pos0);
  const int64_t C = dp.channels(), n = qkv.rows;
  MEMRA_CHECK(qkv.cols == C && alpha.rows == n && beta.rows == n && alpha.cols == dp.n_v_heads &&
                  beta.cols == dp.n_v_heads && out.rows == n && out.cols == (int64_t)dp.n_v_heads * dp.head_v_dim,
              "gated_delta_net: shapes qkv [{} x {}], alpha [{} x {}], beta [{} x {}], out [{} x {}] do not match {} "
              "channels, {} value heads of {}", qkv.rows, qkv.cols, alpha.rows, alpha.cols, beta.rows, beta.cols,
              out.rows, out.cols, C, dp.n_v_heads, dp.head_v_dim);
  MEMRA_CHECK(w.conv && w.conv->type == QType::F32 && w.conv->ne[0] == dp.d_conv && w.conv->n_rows() == C,
              "gated_delta_net: conv kernel must be F32 [{}, {}]", dp.d_conv, C);
  check_int(n, "gated_delta_net tokens");
  float* state = static_cast<float*>(c.layers[(size_t)layer].state.get());
  cuda::DeltaNetParams p;
  p.qkv = qkv.data;
  p.ld_qkv = qkv.ld;
  p.alpha = alpha.data;
  p.ld_alpha = alpha.ld;
  p.beta = beta.data;
  p.ld_beta = beta.ld;
  p.conv_w = static_cast<const float*>(w.conv->data);
  p.dt_bias = f32_vector(w.dt_bias, dp.n_v_heads, "gated_delta_net dt bias");
  p.a = f32_vector(w.a, dp.n_v_heads, "gated_delta_net A");
  p.conv_state = state;
  p.state = state + (int64_t)(dp.d_conv - 1) * C;
  p.out = out.data;
  p.ld_out = out.ld;
  p.n_tokens = (int)n;
  p.n_k_heads = dp.n_k_heads;
  p.n_v_heads = dp.n_v_heads;
  p.head_k_dim = dp.head_k_dim;
  p.head_v_dim = dp.head_v_dim;
  p.d_conv = dp.d_conv;
  p.eps = dp.eps;
  MEMRA_CHECK(p.dt_bias && p.a && cuda::delta_net_supported(p),
              "gated_delta_net: no CUDA instance for {} key heads of {}, {} value heads of {}, conv {} (head_k_dim 64 "
              "or 128, head_v_dim a multiple of 32 up to 256, conv up to 8): run this model with run.backend = cpu",
              dp.n_k_heads, dp.head_k_dim, dp.n_v_heads, dp.head_v_dim, dp.d_conv);
  p.x = static_cast<float*>(workspace(kDeltaNet, (size_t)n * (size_t)C * sizeof(float)));
  cuda::check_status(cuda::launch_delta_net(p, stream()), "launch_delta_net");
  c.state_pos[(size_t)layer] = pos0 + (int)n;
  c.n_written = std::max(c.n_written, pos0 + (int)n);
  note("ssm", fmt::format("delta_net_dk{}", dp.head_k_dim));
}

}  // namespace memra::backend::cuda_impl
