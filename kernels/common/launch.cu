#include <atomic>

#include "common/launch.cuh"

namespace memra::cuda {
namespace {
std::atomic<bool> g_pdl{false};
}
void set_pdl(bool on) { g_pdl.store(on, std::memory_order_relaxed); }
bool pdl_enabled() { return g_pdl.load(std::memory_order_relaxed); }
}  // namespace memra::cuda
