// Backend::make_sampler on the CUDA backend: the sampling chain on the device (kernels/sample), its
// penalty window and draw counter in device memory, only the token id copied back (4 bytes where
// the host sampler copies the whole row of logits and ranks it on the host).
#include <cstdint>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_internal.h"
#include "core/error.h"
#include "sample/sample_kernels.h"

namespace memra::backend::cuda_impl {

class DeviceTokenSampler final : public TokenSampler {
 public:
  DeviceTokenSampler(CudaBackend& be, const SamplerOptions& o) : be_(be), o_(o), window_keeper_(o) {
    // The state: the draw counter (u64, as Sampler's, from 0), the window's length, the token.
    state_ = cuda::DeviceBuffer(be_.ctx().pool(), 16, "sampler state");
    cuda::fill_bytes(state_.get(), 0, 16, be_.stream());
    if (o_.penalty_last_n > 0)
      window_ = cuda::DeviceBuffer(be_.ctx().pool(), (size_t)o_.penalty_last_n * sizeof(int32_t), "sampler window");
  }

  int32_t sample(View logits) override {
    be_.settle_deferred_norm(logits);
    MEMRA_CHECK(logits.rows == 1 && logits.cols > 0 && logits.cols <= INT32_MAX,
                "sampler: a [{} x {}] view, one row expected", logits.rows, logits.cols);
    MEMRA_CHECK(!be_.capturing_, "sampling inside a captured decode step");
    if (window_dirty_) upload_window();
    cuda::SampleParams p;
    p.logits = logits.data;
    p.n_vocab = (int)logits.cols;
    if (o_.penalty_last_n > 0) {
      p.window = window_.as<int32_t>();
      p.window_len = window_len();
      p.window_cap = o_.penalty_last_n;
    }
    p.temperature = o_.temperature;
    p.top_k = o_.top_k;
    p.top_p = o_.top_p;
    p.min_p = o_.min_p;
    p.typical_p = o_.typical_p;
    p.repeat_penalty = o_.repeat_penalty;
    p.frequency_penalty = o_.frequency_penalty;
    p.presence_penalty = o_.presence_penalty;
    p.seed = o_.seed;
    p.draw_counter = state_.as<uint64_t>();
    p.out = token();
    cuda::check_status(cuda::launch_sample(p, be_.stream()), "launch_sample");
    int32_t id = 0;
    cuda::copy_d2h(&id, p.out, sizeof(id), be_.stream());  // synchronizes
    return id;
  }

  void accept(int32_t token) override {  // the window kept by a host Sampler's own accept()
    if (o_.penalty_last_n == 0) return;
    window_keeper_.accept(token);
    window_dirty_ = true;
  }

  std::string where() const override { return "device"; }

 private:
  int32_t* window_len() const { return state_.as<int32_t>() + 2; }
  int32_t* token() const { return state_.as<int32_t>() + 3; }
  // The window's tokens (their order does not matter to the chain: it counts them) and length,
  // before the next draw. From pageable memory: cudaMemcpyAsync has staged the bytes when it
  // returns, so the staging vectors may change after.
  void upload_window() {
    staged_ = window_keeper_.window();
    staged_len_ = (int32_t)staged_.size();
    if (!staged_.empty()) cuda::copy_h2d(window_.get(), staged_.data(), staged_.size() * sizeof(int32_t), be_.stream());
    cuda::copy_h2d(window_len(), &staged_len_, sizeof(staged_len_), be_.stream());
    window_dirty_ = false;
  }

  CudaBackend& be_;
  SamplerOptions o_;
  cuda::DeviceBuffer state_, window_;
  Sampler window_keeper_;  // only its penalty window is used (no draws)
  std::vector<int32_t> staged_;
  int32_t staged_len_ = 0;
  bool window_dirty_ = true;  // the device's length starts at 0 either way; the first draw uploads
};

std::unique_ptr<TokenSampler> CudaBackend::make_sampler(const SamplerOptions& o) {
  validate(o);
  // The device chain ranks at most kDeviceMaxTopK candidates when it draws (temperature > 0), and
  // past kDeviceSamplerTopK (512) its threshold gather often overflows into one block-wide pass per
  // candidate (35 ms at top_k 1000 on an H100, kernel-check sample hot_wide): top_k off or past
  // that bound, the host sampler (the same chain on the copied row).
  static_assert(cuda::kDeviceSamplerTopK <= cuda::kDeviceMaxTopK);
  if (o.temperature > 0.0f && (o.top_k < 1 || o.top_k > cuda::kDeviceSamplerTopK)) return Backend::make_sampler(o);
  return std::make_unique<DeviceTokenSampler>(*this, o);
}

}  // namespace memra::backend::cuda_impl
