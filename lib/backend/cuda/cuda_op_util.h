#pragma once
// Argument checks shared by the CUDA backend's op files (cuda_ops.cpp, cuda_norm_ops.cpp).
#include <cstdint>

#include "backend/backend.h"
#include "core/error.h"

namespace memra::backend::cuda_impl {

inline void check_same_shape(const char* op, View a, View b) {
  MEMRA_CHECK(a.rows == b.rows && a.cols == b.cols, "{}: shape mismatch [{} x {}] vs [{} x {}]", op, a.rows,
              a.cols, b.rows, b.cols);
}

inline const float* f32_vector(const Weight* w, int64_t n, const char* what) {
  if (!w) return nullptr;
  MEMRA_CHECK(w->type == QType::F32 && w->ne[0] == n && w->n_rows() == 1,
              "{}: weight '{}' must be F32 [{}], got {} [{}, {}]", what, w->name, n, qtype_name(w->type),
              w->ne[0], w->n_rows());
  return static_cast<const float*>(w->data);
}

inline void check_int(int64_t v, const char* what) {
  MEMRA_CHECK(v >= 0 && v <= INT32_MAX, "{} = {} exceeds the kernels' 32-bit range", what, v);
}

}  // namespace memra::backend::cuda_impl
