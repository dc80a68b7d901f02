// Speculative decoding's premise on the CUDA backend (lib/engine/speculative.h, run-spec): every
// row of a verify batch has the logits bytes of the one-token step at its position, not only row 0
// (the decode == verify tests in gpu_models_attn.cpp / gpu_models_mmvs.cpp check row 0). With it a
// verify batch chooses as decoding would, so run-spec's output is plain greedy decoding's bit for
// bit on the device too. The steps run as run-spec runs them: one-token steps (the second onward
// replayed from the captured graph), the cache rolled back, then the same tokens as one batch.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "backend_cuda/gpu_model_runs.h"
#include "engine/session.h"
#include "engine/speculative.h"
#include "sample/sampler.h"
#include "sample/sampler_corners.h"

using namespace memra;
using namespace memra::gputest;

TEST(CudaModels, VerifyRowsEqualDecodeSteps) {
  MEMRA_REQUIRE_GPU();
  MEMRA_REQUIRE_FIXTURES();
  for (const char* file : {"qwen3-q4_k_m.gguf", "qwen3-q8_0.gguf", "llama-q8_0.gguf", "llama-q4_k_m.gguf"}) {
    // 20 keys (one split, no combine) and 300 (several splits and the combine).
    for (int n_prompt : {kPrompt, 300}) {
      ModelRun run = open_run(backend::make_cuda_backend(gpu_config(true)), shared_dir() + "/models/synth/" + file,
                              kv::KvOptions{512, QType::Q8_0, QType::Q5_1});
      const int64_t nv = run.model->hparams().n_vocab;
      std::vector<int32_t> prompt((size_t)n_prompt);
      for (int i = 0; i < n_prompt; ++i) prompt[(size_t)i] = (int32_t)((i * 29 + 5) % nv);
      (void)step(run, prompt, 0, false);
      for (int n : {2, 5, 8}) {
        SCOPED_TRACE(testing::Message() << file << ", " << n_prompt << " keys, batch of " << n);
        std::vector<int32_t> t((size_t)n);
        for (int i = 0; i < n; ++i) t[(size_t)i] = (int32_t)((i * 37 + 11 * n) % nv);
        std::vector<std::vector<float>> ones;
        run.kv->truncate(n_prompt);
        for (int i = 0; i < n; ++i) ones.push_back(step(run, std::span<const int32_t>(&t[(size_t)i], 1), n_prompt + i, false));
        run.kv->truncate(n_prompt);
        const auto all = step(run, t, n_prompt, true);
        ASSERT_GE(all.size(), (size_t)(n * nv));
        for (int i = 0; i < n; ++i) {
          ASSERT_GE(ones[(size_t)i].size(), (size_t)nv);
          EXPECT_EQ(0, std::memcmp(all.data() + (size_t)i * nv, ones[(size_t)i].data(), (size_t)nv * 4))
              << "verify row " << i << " differs from the one-token step at position " << n_prompt + i;
        }
      }
    }
  }
}

// Backend::argmax_rows on the device (the greedy path of run-gen, run-spec and generate() without a
// sample function: only the ids come back) against memra::argmax of the same rows copied to the
// host, for a decode row and a verify batch, and a row with NaN, ties and a maximum in the last
// column written through from_host.
TEST(CudaModels, ArgmaxRowsEqualHostArgmax) {
  MEMRA_REQUIRE_GPU();
  MEMRA_REQUIRE_FIXTURES();
  ModelRun run = open_run(backend::make_cuda_backend(gpu_config(true)), shared_dir() + "/models/synth/qwen3-q4_k_m.gguf",
                          kv::KvOptions{64, QType::Q8_0, QType::Q5_1});
  const int64_t nv = run.model->hparams().n_vocab;
  std::vector<int32_t> ids(kPrompt);
  for (int i = 0; i < kPrompt; ++i) ids[(size_t)i] = (int32_t)((i * 31 + 3) % nv);
  auto check = [&](backend::View v) {
    std::vector<float> h((size_t)(v.rows * v.cols));
    run.be->to_host(v, h.data());
    std::vector<int32_t> got((size_t)v.rows, -1);
    run.be->argmax_rows(v, got);
    for (int64_t r = 0; r < v.rows; ++r)
      EXPECT_EQ(got[(size_t)r], argmax(std::span<const float>(h).subspan((size_t)(r * v.cols), (size_t)v.cols)))
          << "row " << r << " of " << v.rows;
  };
  const auto all = run.all.view(kPrompt, nv);
  run.model->forward(*run.be, *run.kv, ids, 0, true, all);
  check(all);
  const int32_t next[1] = {7};
  const auto one = run.one.view(1, nv);
  run.model->forward(*run.be, *run.kv, next, kPrompt, false, one);
  check(one);
  std::vector<float> edge((size_t)(3 * nv), -1.0f);
  edge[0] = std::numeric_limits<float>::quiet_NaN();                    // row 0: NaN first, then a tie
  edge[5] = edge[9] = 2.0f;
  edge[(size_t)nv + (size_t)nv - 1] = 1e30f;                            // row 1: the last column
  for (int64_t c = 0; c < nv; ++c) edge[(size_t)(2 * nv + c)] = std::numeric_limits<float>::quiet_NaN();  // row 2: all NaN
  const auto ev = run.all.view(3, nv);
  run.be->from_host(edge.data(), ev);
  std::vector<int32_t> got(3, -1);
  run.be->argmax_rows(ev, got);
  EXPECT_EQ(got, (std::vector<int32_t>{5, (int32_t)nv - 1, 0}));
}

// run-spec's loop on the device: the output is plain greedy decoding's (generate() without a sample
// function) with prompt lookup and with the model drafting for itself (every proposal accepted when
// every verify row is its one-token step's bytes), and a k of 8 is capped at max_verify_rows() - 1
// (batches of 9 rows take the GEMM path at the default kernels.gemm_min_batch).
TEST(CudaModels, SpeculativeEqualsGreedy) {
  MEMRA_REQUIRE_GPU();
  MEMRA_REQUIRE_FIXTURES();
  // qwen35: recurrent layers, rolled back through KvStore checkpoints (device copies of the states).
  for (const char* name : {"qwen3-q4_k_m.gguf", "llama-q8_0.gguf", "qwen35-q4_k_m.gguf"}) {
    SCOPED_TRACE(name);
    auto file = std::make_shared<const gguf::File>(gguf::File::open(shared_dir() + "/models/synth/" + name));
    auto be = backend::make_cuda_backend(gpu_config(true)), be_draft = backend::make_cuda_backend(gpu_config(true));
    ASSERT_EQ(be->max_verify_rows(), 8);
    engine::SessionOptions so;
    so.kv = kv::KvOptions{256, QType::Q8_0, QType::Q5_1};
    engine::Session target(file, *be, so), draft(file, *be_draft, so);
    std::vector<int32_t> prompt(12);
    for (int i = 0; i < 12; ++i) prompt[(size_t)i] = (int32_t)((i * 41 + 9) % target.n_vocab());
    const auto plain = engine::generate(target, prompt, {64, {}}, engine::SampleFn{}).tokens;
    for (int k : {4, 8}) {
      engine::NgramDrafter ng(1, 3);
      target.reset();
      const auto a = engine::generate_speculative(target, ng, prompt, {64, k, {}, std::nullopt});
      EXPECT_EQ(a.tokens, plain) << "ngram, k = " << k;
      EXPECT_EQ(a.k, std::min(k, 7));
      engine::ModelDrafter md(draft);
      target.reset();
      const auto b = engine::generate_speculative(target, md, prompt, {64, k, {}, std::nullopt});
      EXPECT_EQ(b.tokens, plain) << "self draft, k = " << k;
      EXPECT_EQ(b.n_accepted, b.n_drafted) << "self draft, k = " << k;
    }
  }
}

// Sampled speculative decoding on the device (SpecOptions::sampling: the rows' logits come to the
// host sampler). Temperature 0 with penalties: plain penalized greedy's output, token for token.
// Temperature 0.9: a draft that is the target itself with the same sampler options proposes from
// q = p whenever a verify row is its one-token step's bytes, so the rejection rule accepts every
// proposal (u q(x) < p(x) for every u < 1).
TEST(CudaModels, SpeculativeSamplingRows) {
  MEMRA_REQUIRE_GPU();
  MEMRA_REQUIRE_FIXTURES();
  for (const char* name : {"qwen3-q4_k_m.gguf", "qwen35-q4_k_m.gguf"}) {
    SCOPED_TRACE(name);
    auto file = std::make_shared<const gguf::File>(gguf::File::open(shared_dir() + "/models/synth/" + name));
    auto be = backend::make_cuda_backend(gpu_config(true)), be_draft = backend::make_cuda_backend(gpu_config(true));
    engine::SessionOptions so;
    so.kv = kv::KvOptions{256, QType::Q8_0, QType::Q5_1};
    engine::Session target(file, *be, so), draft(file, *be_draft, so);
    std::vector<int32_t> prompt(12);
    for (int i = 0; i < 12; ++i) prompt[(size_t)i] = (int32_t)((i * 41 + 9) % target.n_vocab());
    SamplerOptions pen;
    pen.temperature = 0.0f;
    pen.repeat_penalty = 1.3f;
    pen.frequency_penalty = 0.2f;
    Sampler plain_sampler(pen);
    for (int32_t id : prompt) plain_sampler.accept(id);
    const auto plain = engine::generate(target, prompt, {48, {}}, [&](std::span<const float> l) {
                         const int32_t id = plain_sampler.sample(l);
                         plain_sampler.accept(id);
                         return id;
                       }).tokens;
    SamplerOptions warm = pen;
    warm.temperature = 0.9f;
    warm.top_k = 20;
    warm.seed = 7;
    for (int k : {3, 7}) {
      engine::NgramDrafter ng(1, 3);
      target.reset();
      const auto a = engine::generate_speculative(target, ng, prompt, {48, k, {}, pen});
      EXPECT_EQ(a.tokens, plain) << "penalized greedy, ngram, k = " << k;
      engine::ModelDrafter md(draft, pen);
      target.reset();
      const auto b = engine::generate_speculative(target, md, prompt, {48, k, {}, pen});
      EXPECT_EQ(b.tokens, plain) << "penalized greedy, self draft, k = " << k;
      engine::ModelDrafter ms(draft, warm);
      target.reset();
      const auto c = engine::generate_speculative(target, ms, prompt, {48, k, {}, warm});
      EXPECT_EQ((int)c.tokens.size(), 48);
      EXPECT_EQ(c.n_accepted, c.n_drafted) << "sampled self draft, k = " << k;
    }
  }
}

// Backend::make_sampler on the device (run-gen's sample.on_backend; kernels/sample: the chain, the
// penalty window and the draw counter in device memory, only the id back) against the host path
// (the row copied to the host, memra::Sampler): generate() through each from the same seed gives the
// same tokens, over the options' corners (defaults, penalties over a short window, greedy after
// penalties, top_k 1, a wide top_k and a high temperature), on two synth models. top_k off or past
// kDeviceSamplerTopK (512) gets the host sampler (where() says so).
TEST(CudaModels, DeviceSamplerMatchesHostSampler) {
  MEMRA_REQUIRE_GPU();
  MEMRA_REQUIRE_FIXTURES();
  const auto cases = testsample::sampler_corners(20264402);
  for (const char* name : {"qwen3-q4_k_m.gguf", "llama-q8_0.gguf"}) {
    auto file = std::make_shared<const gguf::File>(gguf::File::open(shared_dir() + "/models/synth/" + name));
    auto be = backend::make_cuda_backend(gpu_config(true));
    engine::SessionOptions so;
    so.kv = kv::KvOptions{256, QType::Q8_0, QType::Q5_1};
    engine::Session s(file, *be, so);
    const int nv = s.n_vocab();
    std::vector<int32_t> prompt(12);
    for (int i = 0; i < 12; ++i) prompt[(size_t)i] = (int32_t)((i * 31 + 7) % nv);
    for (const auto& [what, opts] : cases) {
      SCOPED_TRACE(std::string(name) + ", " + what);
      std::vector<std::vector<int32_t>> runs;
      for (bool device : {false, true}) {
        s.reset();
        Sampler host(opts);
        auto ts = be->make_sampler(opts);
        EXPECT_EQ(ts->where(), "device");
        for (int32_t id : prompt) {
          host.accept(id);
          ts->accept(id);
        }
        engine::GenerateOptions go;
        go.n_predict = 32;
        const auto r = device ? engine::generate(s, prompt, go, *ts,
                                                 [&](int32_t id) {
                                                   ts->accept(id);
                                                   return true;
                                                 })
                              : engine::generate(
                                    s, prompt, go, [&](std::span<const float> l) { return host.sample(l); },
                                    [&](int32_t id) {
                                      host.accept(id);
                                      return true;
                                    });
        runs.push_back(r.tokens);
      }
      EXPECT_EQ(runs[0], runs[1]);
      EXPECT_EQ(runs[1].size(), 32u);
    }
  }
  auto be = backend::make_cuda_backend(gpu_config(true));
  SamplerOptions off;
  off.top_k = 0;
  EXPECT_EQ(be->make_sampler(off)->where(), "host");
  off.top_k = 512;
  EXPECT_EQ(be->make_sampler(off)->where(), "device");
  off.top_k = 513;  // past kDeviceSamplerTopK: the kernel's slow pass fallback, the host is faster
  EXPECT_EQ(be->make_sampler(off)->where(), "host");
  off.temperature = 0.0f;  // greedy: no ranking, any top_k
  EXPECT_EQ(be->make_sampler(off)->where(), "device");
}
