#pragma once
// Codebooks of the ggml IQ formats (format data; see iq_grids.cpp). Each grid point packs its
// elements one per byte, element j in byte j.
#include <cstdint>

namespace memra::iq {

extern const uint64_t kGridIQ2XXS[256];  // values {8, 25, 43}
extern const uint64_t kGridIQ2XS[512];   // values {8, 25, 43}
extern const uint64_t kGridIQ2S[1024];   // values {8, 25, 43}
extern const uint64_t kGridIQ1S[2048];   // values {-1, 0, 1} as int8 (IQ1_S and IQ1_M)
extern const uint32_t kGridIQ3XXS[256];  // values {4, 12, ..., 62}
extern const uint32_t kGridIQ3S[512];    // values {1, 3, ..., 15}
// 7 stored sign bits -> 8 sign bits with even parity (bit 7 = parity of the other seven).
extern const uint8_t kSignsIQ2XS[128];

inline constexpr int8_t kValuesIQ4NL[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
// E2M1 magnitudes doubled (0, 0.5, 1, 1.5, 2, 3, 4, 6 -> integers); the block scale carries
// the factor 1/2.
inline constexpr int8_t kValuesFP4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

}  // namespace memra::iq
