#pragma once
// Helpers for the llama.cpp reference files in ../shared/reference: JSON Lines reading, base64,
// error figures, and a Session factory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/session.h"
#include "gguf/gguf.h"

namespace memra::testref {

inline std::string shared_dir() { return MEMRA_SHARED_DIR; }
inline bool have_shared() { return std::filesystem::exists(shared_dir() + "/reference/README.md"); }

#define MEMRA_REQUIRE_SHARED()                                                               \
  do {                                                                                       \
    if (!::memra::testref::have_shared())                                                    \
      GTEST_SKIP() << "shared fixtures not found at " << ::memra::testref::shared_dir()      \
                   << " (models and llama.cpp references live in ../shared)";                \
  } while (0)

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

inline std::vector<uint8_t> base64_decode(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const int v = val(c);
    if (v < 0) continue;  // '=' padding
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back((uint8_t)(acc >> bits));
    }
  }
  return out;
}

inline std::vector<float> b64_floats(const std::string& s) {
  auto b = base64_decode(s);
  std::vector<float> f(b.size() / 4);
  std::memcpy(f.data(), b.data(), f.size() * 4);
  return f;
}

// max |a - ref| / max |ref|
inline double rel_max_err(const float* a, const float* ref, size_t n) {
  double md = 0, mr = 0;
  for (size_t i = 0; i < n; ++i) {
    md = std::max(md, std::fabs((double)a[i] - ref[i]));
    mr = std::max(mr, std::fabs((double)ref[i]));
  }
  return mr > 0 ? md / mr : md;
}

// logit(best) - logit(second best)
inline double top2_margin(const float* l, size_t n) {
  double a = -INFINITY, b = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    if (l[i] > a) {
      b = a;
      a = l[i];
    } else if (l[i] > b) {
      b = l[i];
    }
  }
  return a - b;
}

inline int32_t argmax(const float* l, size_t n) {
  return (int32_t)(std::max_element(l, l + n) - l);
}

struct Rig {
  std::shared_ptr<const gguf::File> file;
  std::unique_ptr<backend::Backend> be;
  std::unique_ptr<engine::Session> session;
};

// GELU in llama.cpp's CPU numerics (f16 table) unless told otherwise: the references are its CPU
// path's outputs. llamacpp_fa: the reference ran with flash attention on, so attention rounds like
// ggml's flash attention (AttentionNumerics::GgmlFlashAttn) on top of llama.cpp's f32 arithmetic
// order (F32Order::Ggml, which keeps the values it rounds bit-identical).
inline Rig make_rig(const std::string& model_path, bool quantize_activations, QType kv_type,
                    int n_ctx = 256, int threads = 2,
                    backend::GeluNumerics gelu = backend::GeluNumerics::GgmlF16Table, bool llamacpp_fa = false) {
  Rig r;
  r.file = std::make_shared<const gguf::File>(gguf::File::open(model_path));
  backend::CpuBackendOptions bo;
  bo.threads = threads;
  bo.quantize_activations = quantize_activations;
  bo.gelu_numerics = gelu;
  if (llamacpp_fa) {
    bo.attention_numerics = backend::AttentionNumerics::GgmlFlashAttnF32Cache;
    bo.f32_order = backend::F32Order::Ggml;
  }
  r.be = backend::make_cpu_backend(bo);
  engine::SessionOptions so;
  so.kv = {n_ctx, kv_type, kv_type};
  r.session = std::make_unique<engine::Session>(r.file, *r.be, so);
  return r;
}

}  // namespace memra::testref
