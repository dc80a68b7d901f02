// Backend::make_sampler (the tokens of sampled generation drawn where the logits are) and the
// engine's generate() through it: the draws are memra::Sampler's, draw for draw, window and counter
// included. On the CPU backend the sampler is the default (the row to the host, memra::Sampler);
// the CUDA one is checked against the same sampler in tests/backend_cuda (DeviceSamplerMatchesHostSampler).
#include <random>

#include "core/error.h"
#include "ref_util.h"
#include "sample/sampler_corners.h"

namespace memra {
namespace {

// sampler_corners, and top_k off (the whole vocabulary ranked: the host sampler on every backend).
std::vector<std::pair<const char*, SamplerOptions>> cases() {
  auto c = testsample::sampler_corners(7);
  SamplerOptions wide = c.back().second;
  wide.top_k = 0;
  c.emplace_back("top_k off, the whole vocabulary", wide);
  return c;
}

// The backend sampler's draws from rows of logits in backend memory against memra::Sampler's on the
// same rows, each drawn token accepted into both windows.
TEST(TokenSampler, CpuBackendDrawsWhatSamplerDraws) {
  auto be = backend::make_cpu_backend({});
  const int64_t n_vocab = 997;
  backend::Buffer buf = be->alloc(n_vocab);
  std::mt19937 rng(20264401);
  std::normal_distribution<float> nd(0.0f, 2.5f);
  for (const auto& [name, opts] : cases()) {
    SCOPED_TRACE(name);
    auto ts = be->make_sampler(opts);
    EXPECT_EQ(ts->where(), "host");
    Sampler ref(opts);
    std::vector<int32_t> got, want;
    for (int step = 0; step < 48; ++step) {
      std::vector<float> row((size_t)n_vocab);
      for (auto& x : row) x = nd(rng);
      // Tokens the window will have seen get a head start, so the penalties decide some draws.
      for (int32_t t : want) row[(size_t)t] += 3.0f;
      be->from_host(row.data(), buf.view(1, n_vocab));
      const int32_t a = ts->sample(buf.view(1, n_vocab));
      const int32_t b = ref.sample(row);
      got.push_back(a);
      want.push_back(b);
      ts->accept(a);
      ref.accept(b);
    }
    EXPECT_EQ(got, want);
  }
}

// make_sampler validates its options as memra::Sampler does.
TEST(TokenSampler, BadOptionsAreRefused) {
  auto be = backend::make_cpu_backend({});
  SamplerOptions o;
  o.top_p = 0.0f;
  EXPECT_THROW(be->make_sampler(o), memra::Error);
}

// generate() through a backend sampler gives the tokens of generate() with memra::Sampler on the host
// logits (both windows fed the prompt and each generated token), on stories260K.
TEST(TokenSampler, GenerateThroughBackendSamplerEqualsHostSampler) {
  MEMRA_REQUIRE_SHARED();
  const std::vector<int32_t> prompt = {1, 365, 107, 471, 263};
  for (const auto& [name, opts] : cases()) {
    SCOPED_TRACE(name);
    std::vector<std::vector<int32_t>> runs;
    for (bool on_backend : {false, true}) {
      auto rig = testref::make_rig(testref::shared_dir() + "/models/stories260K.gguf", false, QType::F32);
      Sampler host(opts);
      auto ts = rig.be->make_sampler(opts);
      for (int32_t id : prompt) {
        host.accept(id);
        ts->accept(id);
      }
      engine::GenerateOptions go;
      go.n_predict = 40;
      engine::GenerateResult r;
      if (on_backend) {
        r = engine::generate(*rig.session, prompt, go, *ts, [&](int32_t id) {
          ts->accept(id);
          return true;
        });
      } else {
        r = engine::generate(
            *rig.session, prompt, go, [&](std::span<const float> l) { return host.sample(l); },
            [&](int32_t id) {
              host.accept(id);
              return true;
            });
      }
      EXPECT_EQ(r.tokens.size(), 40u);
      runs.push_back(r.tokens);
    }
    EXPECT_EQ(runs[0], runs[1]);
  }
}

}  // namespace
}  // namespace memra
