// apps/common's kv_options: how the kv.* keys become a backend's cache options. kv.planes is a CUDA
// cache layout: "on" sets the planes on the CUDA backend and makes an "auto" V q8_0 (the layout holds
// q8_0 K and V only); "auto" (the default) leaves the choice to the CUDA cache (planes_auto, with
// type_v_auto saying whether V may become q8_0 there: backend::cuda_kv_options, tested in
// test_backend_cuda); the CPU backend's options ignore it (its cache holds the same values in GGUF
// blocks) and keep the CPU's auto types. An explicit V type stays as written, so a q5_1 V reaches
// the CUDA cache's check (a clear error there, CudaKv).
#include <gtest/gtest.h>

#include "common/backend_select.h"
#include "config/config.h"

using namespace memra;

TEST(KvOptions, PlanesResolvePerBackend) {
  const Config plain = load_config({}, {});
  EXPECT_EQ(plain.kv.planes, "auto");
  const kv::KvOptions d = app::kv_options(plain, "cuda", 1000);
  EXPECT_FALSE(d.planes);
  EXPECT_TRUE(d.planes_auto);
  EXPECT_TRUE(d.type_v_auto);
  EXPECT_EQ(d.type_k, QType::Q8_0);
  EXPECT_EQ(d.type_v, QType::Q5_1);  // where the CUDA cache does not take the planes
  EXPECT_EQ(d.n_ctx, 1000);
  const kv::KvOptions dc = app::kv_options(plain, "cpu", 1000);
  EXPECT_FALSE(dc.planes);
  EXPECT_FALSE(dc.planes_auto);
  EXPECT_EQ(dc.type_v, QType::F16);

  const Config on = load_config({}, {"kv.planes=\"on\""});
  const kv::KvOptions g = app::kv_options(on, "cuda", 64);
  EXPECT_TRUE(g.planes);
  EXPECT_FALSE(g.planes_auto);
  EXPECT_EQ(g.type_k, QType::Q8_0);
  EXPECT_EQ(g.type_v, QType::Q8_0);
  const kv::KvOptions c = app::kv_options(on, "cpu", 64);
  EXPECT_FALSE(c.planes);
  EXPECT_EQ(c.type_k, QType::F16);
  EXPECT_EQ(c.type_v, QType::F16);

  const Config explicit_v = load_config({}, {"kv.planes=\"on\"", "kv.type_v=\"q5_1\""});
  const kv::KvOptions e = app::kv_options(explicit_v, "cuda", 64);
  EXPECT_TRUE(e.planes);
  EXPECT_EQ(e.type_v, QType::Q5_1);
  const Config auto_q51 = load_config({}, {"kv.type_v=\"q5_1\""});
  const kv::KvOptions a = app::kv_options(auto_q51, "cuda", 64);
  EXPECT_TRUE(a.planes_auto);
  EXPECT_FALSE(a.type_v_auto);  // an explicit q5_1 V: the CUDA cache keeps the default layout

  const Config off = load_config({}, {"kv.planes=\"off\""});
  const kv::KvOptions f = app::kv_options(off, "cuda", 64);
  EXPECT_FALSE(f.planes);
  EXPECT_FALSE(f.planes_auto);
  EXPECT_EQ(f.type_v, QType::Q5_1);
}

TEST(KvOptions, PlanesKeyIsAutoOnOrOff) {
  EXPECT_THROW(load_config({}, {"kv.planes=\"yes\""}), std::exception);
  EXPECT_THROW(load_config({}, {"kv.planes=true"}), std::exception);  // the boolean spelling before "auto"
}
