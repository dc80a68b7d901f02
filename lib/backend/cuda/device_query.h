#pragma once
// GPU facts for receipts. Returns nullopt when no CUDA device is visible (not an error: the
// caller decides whether it needs one).
#include <optional>

#include "receipt/receipt.h"

namespace memra::cuda {
std::optional<GpuInfo> query_device(int device = 0);
}
