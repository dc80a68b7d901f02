#pragma once
// Which kernel runs a matrix product: a pure function of (compute capability, shape, config),
// unit-tested (tests/backend_cuda) and recorded in receipts by name. kernel-check forces
// variants by name through the same config key.
//
// Rules (and the rejected alternatives):
//   m < kernels.gemm_min_batch and m <= 8 -> matvec (one pass over the weights for all m rows);
//     W of a kernels.mmvs_types type (Q4_K/Q6_K/Q8_0/Q4_0 by default; Q5_K, IQ4_XS built) with k % 64 == 0
//     and split_ready -> "mmvs" (kernels/matvec/mmvs.h:
//     aligned 16-byte weight loads on the split-plane layout; bench/notes/mmvs.md has the
//     measurement that made it the default), also forced by kernels.matvec = "mmvs";
//     quantized W -> "mmvq_r<R>" (q8_1 activations, dp4a), float W -> "mmvf_r<R>".
//     R = warps (rows) per CTA: 4 by default; 2 when n is too small to give every SM 4 CTAs
//     (fewer rows per CTA keeps more CTAs in flight). A forced kernels.matvec name wins.
//     kernels.matvec = "mmvq_v2" (= "mmvq_v2_r8") or "mmvq_v2_r<R>" forces the 16-byte-load v2
//     matvec (kernels/matvec/matvec_v2.h) where it exists: m = 1 and Q4_K/Q6_K/Q8_0/Q4_0 weights;
//     every other matvec (m > 1, other types, float W) then takes the auto choice, so one setting
//     runs a whole model. Never chosen by auto: unmeasured (bench/notes/matvec-v2.md).
//   otherwise -> GEMM through cuBLASLt: "lt_dequant_f16" (quantized W), "lt_f16", "lt_bf16",
//     "lt_f32". kernels.gemm = "mma" (int8 tensor cores on q8_1) is not built yet: an error.
// Kernels are built for sm_90a only, so any other compute capability is an error here rather
// than a "no kernel image" failure at the first launch.
#include <cstdint>
#include <string>

#include "config/config.h"
#include "quant/types.h"

namespace memra::cuda {

enum class MatmulKind {
  kMatvecQ8_1, kMatvecQ8_1V2, kMatvecSplit, kMatvecFloat, kGemmDequantF16, kGemmF16, kGemmBf16, kGemmF32
};

struct MatmulShape {
  int64_t m = 1;  // activation rows (tokens)
  int64_t n = 0;  // output features
  int64_t k = 0;  // input features
  QType w_type = QType::F16;
  // The weight can be read by mmvs: its split-plane copy exists (Q4_0/Q8_0/Q6_K/Q5_K/IQ4_XS) or it needs none
  // (Q4_K, 16-byte-aligned rows).
  bool split_ready = true;
};

struct MatmulVariant {
  MatmulKind kind = MatmulKind::kMatvecQ8_1;
  int rows_per_block = 4;  // matvec only
  std::string name;        // "mmvq_r4", "lt_dequant_f16", ...
};

// Whether mmvs serves weights of type t under cfg (kernels.mmvs_types, of the types it is built for):
// the variant rule above and the split-plane copies made at load.
bool mmvs_type_on(QType t, const KernelsSection& cfg);

// Whether the decode attention takes the int8 q . k scores on a q8_0 K cache (kernels.attn_q8_scores)
// for a layer of this attention scale and key head size: only where scale <= 1.01 / sqrt(head_dim).
// The int8 rounding of q (~0.4% of each 32-block's largest value) enters every score times the scale:
// at scale 1 on RMS-normed 128-wide heads (gemma4) ~11x what it is at 1/sqrt(head_dim); where two
// keys nearly tie it moves the attention output by up to 10-15% (simulated, bench/notes/attn-decode.md;
// the suspect of gemma4's GPU test failure, thirty-fifth session). Such layers take the f32 products.
bool attn_q8_scores_applies(const KernelsSection& cfg, float scale, int head_dim);

// cc = major*10 + minor; sm_count for the occupancy rule. Throws memra::Error naming the problem.
MatmulVariant choose_matmul_variant(int cc, int sm_count, const MatmulShape& s, const KernelsSection& cfg);

}  // namespace memra::cuda
