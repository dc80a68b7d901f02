#pragma once
// Activations on f32 rows: SiLU x / (1 + e^-x), GELU-tanh 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// and the gated form out = act(gate) * up (SwiGLU / GEGLU), optionally emitting q8_1 blocks for
// the down projection's matvec (same bytes as quantizing the f32 glu output: one shared helper).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace memra::cuda {

// Sigmoid 1 / (1 + e^-x): qwen35's attention output gate, only in launch_activate and the f32
// outputs of launch_glu (not the q8_1 emit). SwigluOai (gpt-oss's GLU, launch_glu's f32 outputs
// only): with g = min(gate, 7), u = clamp(up, -7, 7): g / (1 + e^(-1.702 g)) * (u + 1).
enum class ActKind : int { Silu = 0, GeluTanh = 1, Sigmoid = 2, SwigluOai = 3 };

// out = act(x); out may alias x.
struct ActParams {
  const float* x = nullptr;
  int64_t ld_x = 0;
  float* out = nullptr;
  int64_t ld_out = 0;
  int rows = 0;
  int cols = 0;
  ActKind act = ActKind::Silu;
};
cudaError_t launch_activate(const ActParams& p, cudaStream_t stream);

// out = act(gate) * up. out may alias gate or up. With out_q8_1 set (and out null), writes q8_1
// blocks instead (cols a multiple of 32; row r at out_q8_1 + r * ld_out_bytes).
struct GluParams {
  const float* gate = nullptr;
  int64_t ld_gate = 0;
  const float* up = nullptr;
  int64_t ld_up = 0;
  float* out = nullptr;
  int64_t ld_out = 0;
  // Optional with out: the same values also rounded to f16 (round to nearest even), dense
  // rows x cols, 8-byte aligned: the next GEMM's input, byte-identical to launch_convert_f32(out).
  void* out_f16 = nullptr;
  void* out_q8_1 = nullptr;
  int64_t ld_out_bytes = 0;
  int rows = 0;
  int cols = 0;
  ActKind act = ActKind::Silu;
};
cudaError_t launch_glu(const GluParams& p, cudaStream_t stream);
// Whether launch_glu can also write out_f16 for these (f32-output) parameters: the 4-wide path
// (cols and every ld a multiple of 4, gate/up/out 16-byte aligned).
bool glu_f16_copy_supported(const GluParams& p);

}  // namespace memra::cuda
