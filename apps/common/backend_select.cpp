#include "common/backend_select.h"

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

#if defined(MEMRA_HAVE_CUDA) && __has_include("backend/cuda/cuda_backend.h")
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/runtime.h"
#define MEMRA_CUDA_BACKEND 1
#endif

namespace memra::app {

std::unique_ptr<backend::Backend> make_backend(const Config& cfg, std::string* chosen) {
  std::string want = cfg.run.backend;
#ifdef MEMRA_CUDA_BACKEND
  if (want == "auto") want = cuda::device_count() > 0 ? "cuda" : "cpu";
  if (want == "cuda") {
    if (chosen) *chosen = "cuda";
    return backend::make_cuda_backend(cfg);
  }
#else
  if (want == "auto") want = "cpu";
  if (want == "cuda") MEMRA_FAIL("run.backend = cuda but this build has no CUDA backend (built with MEMRA_CUDA=OFF?)");
#endif
  if (chosen) *chosen = "cpu";
  backend::CpuBackendOptions o;
  o.threads = cfg.threads.n;
  o.quantize_activations = cfg.cpu.quantize_activations;
  o.attention_numerics = cfg.cpu.attention == "llamacpp"      ? backend::AttentionNumerics::GgmlFlashAttn
                         : cfg.cpu.attention == "llamacpp_fa" ? backend::AttentionNumerics::GgmlFlashAttnF32Cache
                                                              : backend::AttentionNumerics::Exact;
  o.gelu_numerics = cfg.cpu.gelu == "llamacpp" ? backend::GeluNumerics::GgmlF16Table : backend::GeluNumerics::Exact;
  return backend::make_cpu_backend(o);
}

kv::KvOptions kv_options(const Config& cfg, const std::string& backend_name, int n_ctx) {
  const bool gpu = backend_name == "cuda";
  kv::KvOptions o;
  o.n_ctx = n_ctx;
  o.type_k = kv::resolve_kv_type(cfg.kv.type_k, false, gpu);
  // kv.planes = on: the layout required (an auto V is q8_0 then); auto: the CUDA cache decides per model
  // (backend::cuda_kv_options); the CPU cache ignores the key.
  const bool on = gpu && cfg.kv.planes == "on";
  o.type_v = on && cfg.kv.type_v == "auto" ? QType::Q8_0 : kv::resolve_kv_type(cfg.kv.type_v, true, gpu);
  o.planes = on;
  o.planes_auto = gpu && cfg.kv.planes == "auto";
  o.type_v_auto = cfg.kv.type_v == "auto";
  return o;
}

}  // namespace memra::app
