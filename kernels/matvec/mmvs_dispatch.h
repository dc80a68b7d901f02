#pragma once
// The one place the mmvs launchers (mmvs.cu, mmvs_emit.cu) turn a runtime weight type into a
// template argument.
#include <type_traits>

#include "quant/types.h"

namespace memra::cuda::mmvs {

// f(std::integral_constant<QType, T>{}) for the six mmvs weight types T, else `other`.
template <class R, class F>
R by_type(QType t, R other, F&& f) {
  switch (t) {
    case QType::Q4_K: return f(std::integral_constant<QType, QType::Q4_K>{});
    case QType::Q6_K: return f(std::integral_constant<QType, QType::Q6_K>{});
    case QType::Q8_0: return f(std::integral_constant<QType, QType::Q8_0>{});
    case QType::Q4_0: return f(std::integral_constant<QType, QType::Q4_0>{});
    case QType::Q5_K: return f(std::integral_constant<QType, QType::Q5_K>{});
    case QType::IQ4_XS: return f(std::integral_constant<QType, QType::IQ4_XS>{});
    default: return other;
  }
}

}  // namespace memra::cuda::mmvs
