// apps/common's kv_options: how the kv.* keys become a backend's cache options. kv.planes is a CUDA
// cache layout: on the CUDA backend it sets the planes and makes an "auto" V q8_0 (the layout holds
// q8_0 K and V only); the CPU backend's options ignore it (its cache holds the same values in GGUF
// blocks) and keep the CPU's auto types. An explicit V type stays as written, so a q5_1 V reaches
// the CUDA cache's check (a clear error there, CudaKv).
#include <gtest/gtest.h>

#include "common/backend_select.h"
#include "config/config.h"

using namespace memra;

TEST(KvOptions, PlanesResolvePerBackend) {
  const Config plain = load_config({}, {});
  EXPECT_FALSE(plain.kv.planes);
  const kv::KvOptions d = app::kv_options(plain, "cuda", 1000);
  EXPECT_FALSE(d.planes);
  EXPECT_EQ(d.type_k, QType::Q8_0);
  EXPECT_EQ(d.type_v, QType::Q5_1);
  EXPECT_EQ(d.n_ctx, 1000);

  const Config on = load_config({}, {"kv.planes=true"});
  const kv::KvOptions g = app::kv_options(on, "cuda", 64);
  EXPECT_TRUE(g.planes);
  EXPECT_EQ(g.type_k, QType::Q8_0);
  EXPECT_EQ(g.type_v, QType::Q8_0);
  const kv::KvOptions c = app::kv_options(on, "cpu", 64);
  EXPECT_FALSE(c.planes);
  EXPECT_EQ(c.type_k, QType::F16);
  EXPECT_EQ(c.type_v, QType::F16);

  const Config explicit_v = load_config({}, {"kv.planes=true", "kv.type_v=q5_1"});
  const kv::KvOptions e = app::kv_options(explicit_v, "cuda", 64);
  EXPECT_TRUE(e.planes);
  EXPECT_EQ(e.type_v, QType::Q5_1);
}

TEST(KvOptions, PlanesKeyIsABool) {
  EXPECT_THROW(load_config({}, {"kv.planes=\"yes\""}), std::exception);
}
