// kernel-check section "l2_stream": the L2 request kernel of the decode weight stream
// (launch_l2_prefetch, kernels.l2_stream_mib). It is a cache hint, so what it must show is that it
// writes nothing: the requested ranges (random bytes, odd sizes, several planes) and a poisoned
// buffer beside them read back byte-identical after the launch, for both request forms and both
// priorities; and the launcher refuses what the kernel cannot take (an unaligned start, too many
// ranges, an unknown form). --perf reports the time of one launch over 24 MiB (issue time: the
// fills complete after the kernel).
#include <memory>

#include "cases_ref.h"
#include "misc/misc_kernels.h"

namespace memra::kc {
namespace {

class L2PrefetchCase : public Case {
 public:
  L2PrefetchCase(int op, bool last, size_t mib) : op_(op), last_(last), mib_(mib) {}
  void generate(Env& env) override {
    // Three planes of one matrix-like allocation: a body of mib MiB + 48 bytes, an aux plane of
    // 4096 + 16 bytes at the next 256-byte boundary, a d plane of 30 bytes (not a multiple of 16).
    body_ = (mib_ << 20) + 48;
    aux_at_ = (body_ + 255) / 256 * 256;
    aux_ = 4096 + 16;
    d_at_ = (aux_at_ + aux_ + 255) / 256 * 256;
    d_ = 30;
    total_ = d_at_ + 256;
    host_ = env.random_bytes(total_);
    dev_ = static_cast<uint8_t*>(env.alloc_bytes(total_));
    env.upload_bytes(dev_, host_.data(), total_);
    guard_ = env.alloc_output<uint8_t>(4096);
  }
  cudaError_t launch(Env& env) override {
    cuda::L2PrefetchParams p;
    p.op = op_;
    p.evict_last = last_;
    p.ctas = 32;
    p.n = 3;
    p.p[0] = dev_;
    p.bytes[0] = body_;
    p.p[1] = dev_ + aux_at_;
    p.bytes[1] = aux_;
    p.p[2] = dev_ + d_at_;
    p.bytes[2] = d_;
    return cuda::launch_l2_prefetch(p, env.stream());
  }
  void reference(Env&) override {}
  Verdict compare(Env& env) override {
    const auto got = env.download(dev_, total_);
    const auto guard = env.download(guard_, 4096);
    const std::vector<uint8_t> poison(4096, 0xFF);
    // What the launcher must refuse (status only: nothing is launched).
    cuda::L2PrefetchParams bad;
    bad.n = 1;
    bad.p[0] = dev_ + 8;
    bad.bytes[0] = 64;
    const bool refuses_unaligned = cuda::launch_l2_prefetch(bad, env.stream()) == cudaErrorInvalidValue;
    bad.p[0] = dev_;
    bad.n = cuda::L2PrefetchParams::kMaxRanges + 1;
    const bool refuses_count = cuda::launch_l2_prefetch(bad, env.stream()) == cudaErrorInvalidValue;
    bad.n = 1;
    bad.op = 2;
    const bool refuses_op = cuda::launch_l2_prefetch(bad, env.stream()) == cudaErrorInvalidValue;
    if (!refuses_unaligned || !refuses_count || !refuses_op)
      return ref::fail(ref::cat("launcher accepted: ", refuses_unaligned ? "" : "an unaligned start ",
                                refuses_count ? "" : "too many ranges ", refuses_op ? "" : "an unknown form"));
    return ref::all_of({{"requested ranges", compare_bytes(got.data(), host_.data(), total_)},
                        {"poisoned guard", compare_bytes(guard.data(), poison.data(), poison.size())}});
  }
  PerfCount perf_count() const override { return {(double)(body_ + aux_ + d_), 0}; }

 private:
  int op_;
  bool last_;
  size_t mib_;
  size_t body_ = 0, aux_at_ = 0, aux_ = 0, d_at_ = 0, d_ = 0, total_ = 0;
  std::vector<uint8_t> host_;
  uint8_t* dev_ = nullptr;
  uint8_t* guard_ = nullptr;
};

void add_l2_cases(Registry& r) {
  for (int op : {0, 1})
    for (bool last : {false, true})
      for (size_t mib : {size_t{1}, size_t{24}}) {
        const std::string name = ref::cat("l2_prefetch/", op == 0 ? "bulk" : "line", last ? "_evict_last" : "", "/",
                                          mib, "MiB+3planes");
        r.add("l2_stream", name, [=] { return std::make_unique<L2PrefetchCase>(op, last, mib); });
      }
}
MEMRA_KC_REGISTER(add_l2_cases);

}  // namespace
}  // namespace memra::kc
