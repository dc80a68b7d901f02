// Speculative decoding's premise on the CUDA backend (lib/engine/speculative.h, run-spec): every
// row of a verify batch has the logits bytes of the one-token step at its position, not only row 0
// (the decode == verify tests in gpu_models_attn.cpp / gpu_models_mmvs.cpp check row 0). With it a
// verify batch chooses as decoding would, so run-spec's output is plain greedy decoding's bit for
// bit on the device too. The steps run as run-spec runs them: one-token steps (the second onward
// replayed from the captured graph), the cache rolled back, then the same tokens as one batch.
#include <gtest/gtest.h>

#include <cstring>

#include "backend_cuda/gpu_model_runs.h"

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
