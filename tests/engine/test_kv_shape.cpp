// What the models tell a backend about their caches (model::Model::kv_shape): per attention layer its
// kv heads, head dims, the query heads reading it and whether its scores add attention sinks; a
// recurrent layer its state instead. A CUDA cache picks its layout from these (kv.planes = auto,
// backend::cuda_kv_options), so a wrong n_head or a missed sink would put a model on a kernel that
// does not apply. Expected values: the files' own metadata (the hparams' per-layer geometry) and the
// presence of each layer's attn_sinks tensor.
#include <gtest/gtest.h>

#include <string>

#include "ref_util.h"

namespace memra {
namespace {

void expect_shape(const std::string& file) {
  const std::string path = testref::shared_dir() + "/models/synth/" + file;
  auto rig = testref::make_rig(path, false, QType::F32, 16);
  const auto& model = rig.session->model();
  const auto& hp = model.hparams();
  const kv::KvShape s = model.kv_shape();
  ASSERT_EQ((int)s.layers.size(), hp.n_layer) << file;
  int attn_layers = 0;
  for (int l = 0; l < hp.n_layer; ++l) {
    const auto& ls = s.layers[(size_t)l];
    if (ls.recurrent()) {
      EXPECT_EQ(ls.n_head_kv, 0) << file << " layer " << l;
      continue;
    }
    ++attn_layers;
    const auto& g = hp.geom(l);
    EXPECT_EQ(ls.n_head, g.n_head) << file << " layer " << l;
    EXPECT_EQ(ls.n_head_kv, g.n_head_kv) << file << " layer " << l;
    EXPECT_EQ(ls.head_dim_k, g.head_dim_k) << file << " layer " << l;
    EXPECT_EQ(ls.head_dim_v, g.head_dim_v) << file << " layer " << l;
    EXPECT_EQ(ls.sinks, rig.file->find_tensor("blk." + std::to_string(l) + ".attn_sinks.weight") != nullptr)
        << file << " layer " << l;
  }
  EXPECT_GT(attn_layers, 0) << file;
}

TEST(KvShape, QueryHeadsAndSinksPerLayer) {
  MEMRA_REQUIRE_SHARED();
  for (const char* f : {"qwen3-f32.gguf", "llama-f32.gguf", "gpt-oss-f32.gguf", "qwen35-f32.gguf", "gemma3-f32.gguf",
                        "minimax-m3-f32.gguf", "step35-f32.gguf"})
    expect_shape(f);
}

TEST(KvShape, GptOssLayersHaveSinks) {
  MEMRA_REQUIRE_SHARED();
  auto rig = testref::make_rig(testref::shared_dir() + "/models/synth/gpt-oss-f32.gguf", false, QType::F32, 16);
  const kv::KvShape s = rig.session->model().kv_shape();
  ASSERT_FALSE(s.layers.empty());
  for (const auto& ls : s.layers) EXPECT_TRUE(ls.sinks);
}

}  // namespace
}  // namespace memra
