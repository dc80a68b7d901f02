#include "kv/kv.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "quant/quant.h"

namespace memra::kv {

namespace {

void encode_row(QType t, const float* src, uint8_t* dst, int64_t n) {
  switch (t) {
    case QType::F32: std::memcpy(dst, src, (size_t)n * sizeof(float)); return;
    case QType::F16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_fp16(src[i]);
      return;
    }
    default: ::memra::quantize_row(t, src, dst, n);
  }
}

void decode_row(QType t, const uint8_t* src, float* dst, int64_t n) {
  switch (t) {
    case QType::F32: std::memcpy(dst, src, (size_t)n * sizeof(float)); return;
    case QType::F16: {
      const auto* s = reinterpret_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(s[i]);
      return;
    }
    default: ::memra::dequantize_row(t, src, dst, n);
  }
}

}  // namespace

bool is_supported_kv_type(QType t) {
  return t == QType::F32 || t == QType::F16 || t == QType::Q8_0 || t == QType::Q5_1 ||
         t == QType::Q5_0 || t == QType::Q4_0 || t == QType::Q4_1;
}

QType parse_kv_type(const std::string& name) {
  auto t = qtype_from_name(name);
  MEMRA_CHECK(t && is_supported_kv_type(*t),
              "unknown KV cache type '{}' (accepted: f32, f16, q8_0, q5_1, q5_0, q4_0, q4_1)", name);
  return *t;
}

QType resolve_kv_type(const std::string& name, bool is_value, bool gpu) {
  if (name == "auto") return gpu ? (is_value ? QType::Q5_1 : QType::Q8_0) : QType::F16;
  return parse_kv_type(name);
}

KvCache::KvCache(KvShape shape, KvOptions opts) : shape_(std::move(shape)), opts_(opts) {
  MEMRA_CHECK(opts_.n_ctx > 0, "KV cache: n_ctx must be positive, got {}", opts_.n_ctx);
  MEMRA_CHECK(is_supported_kv_type(opts_.type_k), "KV cache: unsupported K type {}",
              qtype_name(opts_.type_k));
  MEMRA_CHECK(is_supported_kv_type(opts_.type_v), "KV cache: unsupported V type {}",
              qtype_name(opts_.type_v));
  for (size_t l = 0; l < shape_.layers.size(); ++l) {
    const auto& ls = shape_.layers[l];
    MEMRA_CHECK(ls.state_floats >= 0 && (!ls.recurrent() || ls.n_head_kv == 0),
                "KV cache: layer {} is recurrent ({} state floats) but also asks for {} kv heads", l,
                ls.state_floats, ls.n_head_kv);
    MEMRA_CHECK(ls.idx_dim >= 0 && (ls.idx_dim == 0 || !ls.recurrent()),
                "KV cache: layer {} asks for {} indexer-key floats per position{}", l, ls.idx_dim,
                ls.recurrent() ? " but is recurrent" : "");
    state_.emplace_back((size_t)ls.state_floats, 0.0f);
    state_pos_.push_back(0);
    idx_.emplace_back((size_t)ls.idx_dim * (size_t)opts_.n_ctx, 0.0f);
    idx_written_.push_back(0);
    auto kb = qtype_row_bytes(opts_.type_k, (uint64_t)ls.k_row());
    auto vb = qtype_row_bytes(opts_.type_v, (uint64_t)ls.v_row());
    MEMRA_CHECK(kb.has_value(),
                "KV cache: layer {} K row of {} elements (n_head_kv {} x head_dim {}) is not a "
                "multiple of the {} block size {}",
                l, ls.k_row(), ls.n_head_kv, ls.head_dim_k, qtype_name(opts_.type_k),
                qtype_traits(opts_.type_k).block_elems);
    MEMRA_CHECK(vb.has_value(),
                "KV cache: layer {} V row of {} elements (n_head_kv {} x head_dim {}) is not a "
                "multiple of the {} block size {}",
                l, ls.v_row(), ls.n_head_kv, ls.head_dim_v, qtype_name(opts_.type_v),
                qtype_traits(opts_.type_v).block_elems);
    k_row_bytes_.push_back(*kb);
    v_row_bytes_.push_back(*vb);
    k_.emplace_back((size_t)*kb * (size_t)opts_.n_ctx);
    v_.emplace_back((size_t)*vb * (size_t)opts_.n_ctx);
  }
}

size_t KvCache::bytes() const {
  size_t b = 0;
  for (size_t l = 0; l < k_.size(); ++l)
    b += k_[l].size() + v_[l].size() + (state_[l].size() + idx_[l].size()) * sizeof(float);
  return b;
}

void KvCache::write(int layer, int pos0, int n, const float* k, int64_t ld_k, const float* v,
                    int64_t ld_v) {
  MEMRA_CHECK(layer >= 0 && layer < n_layer(), "KV cache: layer {} out of range [0, {})", layer,
              n_layer());
  MEMRA_CHECK(pos0 >= 0 && n >= 0 && (int64_t)pos0 + n <= opts_.n_ctx,
              "KV cache full: writing positions [{}, {}) exceeds context n_ctx={}", pos0, pos0 + n,
              opts_.n_ctx);
  const auto& ls = shape_.layers[(size_t)layer];
  MEMRA_CHECK(!ls.recurrent(), "KV cache: layer {} is recurrent and holds no K/V rows", layer);
  for (int i = 0; i < n; ++i) {
    encode_row(opts_.type_k, k + i * ld_k, k_[(size_t)layer].data() + (size_t)(pos0 + i) * k_row_bytes_[(size_t)layer], ls.k_row());
    encode_row(opts_.type_v, v + i * ld_v, v_[(size_t)layer].data() + (size_t)(pos0 + i) * v_row_bytes_[(size_t)layer], ls.v_row());
  }
  n_written_ = std::max(n_written_, pos0 + n);
}

void KvCache::read_k(int layer, int pos0, int n, float* out) const {
  MEMRA_CHECK(layer >= 0 && layer < n_layer() && pos0 >= 0 && (int64_t)pos0 + n <= opts_.n_ctx,
              "KV cache: read of layer {} positions [{}, {}) out of range", layer, pos0, pos0 + n);
  const auto& ls = shape_.layers[(size_t)layer];
  for (int i = 0; i < n; ++i)
    decode_row(opts_.type_k, k_[(size_t)layer].data() + (size_t)(pos0 + i) * k_row_bytes_[(size_t)layer],
               out + (int64_t)i * ls.k_row(), ls.k_row());
}

void KvCache::read_v(int layer, int pos0, int n, float* out) const {
  MEMRA_CHECK(layer >= 0 && layer < n_layer() && pos0 >= 0 && (int64_t)pos0 + n <= opts_.n_ctx,
              "KV cache: read of layer {} positions [{}, {}) out of range", layer, pos0, pos0 + n);
  const auto& ls = shape_.layers[(size_t)layer];
  for (int i = 0; i < n; ++i)
    decode_row(opts_.type_v, v_[(size_t)layer].data() + (size_t)(pos0 + i) * v_row_bytes_[(size_t)layer],
               out + (int64_t)i * ls.v_row(), ls.v_row());
}

const float* KvCache::k_f32(int layer) const {
  if (opts_.type_k != QType::F32) return nullptr;
  return reinterpret_cast<const float*>(k_[(size_t)layer].data());
}

const float* KvCache::v_f32(int layer) const {
  if (opts_.type_v != QType::F32) return nullptr;
  return reinterpret_cast<const float*>(v_[(size_t)layer].data());
}

void KvCache::write_index(int layer, int pos0, int n, const float* src, int64_t ld) {
  MEMRA_CHECK(layer >= 0 && layer < n_layer(), "KV cache: layer {} out of range [0, {})", layer, n_layer());
  const int dim = shape_.layers[(size_t)layer].idx_dim;
  MEMRA_CHECK(dim > 0, "KV cache: layer {} keeps no indexer keys", layer);
  MEMRA_CHECK(pos0 >= 0 && n >= 0 && (int64_t)pos0 + n <= opts_.n_ctx,
              "KV cache full: writing indexer keys [{}, {}) exceeds context n_ctx={}", pos0, pos0 + n, opts_.n_ctx);
  MEMRA_CHECK(pos0 <= idx_written_[(size_t)layer],
              "KV cache: layer {} indexer keys written at position {} but only {} positions hold keys", layer, pos0,
              idx_written_[(size_t)layer]);
  for (int i = 0; i < n; ++i)
    std::memcpy(idx_[(size_t)layer].data() + (size_t)(pos0 + i) * (size_t)dim, src + i * ld,
                (size_t)dim * sizeof(float));
  idx_written_[(size_t)layer] = std::max(idx_written_[(size_t)layer], pos0 + n);
}

const float* KvCache::index_keys(int layer) const {
  MEMRA_CHECK(layer >= 0 && layer < n_layer() && shape_.layers[(size_t)layer].idx_dim > 0,
              "KV cache: layer {} keeps no indexer keys", layer);
  return idx_[(size_t)layer].data();
}

int KvCache::index_written(int layer) const {
  MEMRA_CHECK(layer >= 0 && layer < n_layer(), "KV cache: layer {} out of range [0, {})", layer, n_layer());
  return idx_written_[(size_t)layer];
}

void KvCache::truncate(int n) {
  MEMRA_CHECK(n >= 0, "KV cache: truncate to negative length {}", n);
  for (auto& w : idx_written_) w = std::min(w, n);
  if (n < ckpt_n_) ckpt_n_ = -1;  // a checkpoint past the new end would describe positions no longer held
  if (n >= n_written_) return;
  if (has_state()) {
    MEMRA_CHECK(n == 0, "KV cache: cannot roll a recurrent layer's state back from position {} to {} (only a "
                "reset to 0 is possible)", n_written_, n);
    for (auto& st : state_) std::fill(st.begin(), st.end(), 0.0f);
    std::fill(state_pos_.begin(), state_pos_.end(), 0);
  }
  n_written_ = n;
}

void KvCache::save_checkpoint() {
  ckpt_state_ = state_;
  ckpt_state_pos_ = state_pos_;
  ckpt_n_ = n_written_;
}

void KvCache::rollback_to_checkpoint() {
  MEMRA_CHECK(ckpt_n_ >= 0 && ckpt_n_ <= n_written_, "KV cache: no checkpoint at or before position {} to roll back to",
              n_written_);
  for (size_t l = 0; l < state_.size(); ++l) std::copy(ckpt_state_[l].begin(), ckpt_state_[l].end(), state_[l].begin());
  state_pos_ = ckpt_state_pos_;
  for (auto& w : idx_written_) w = std::min(w, ckpt_n_);
  n_written_ = ckpt_n_;
}

float* KvCache::state(int layer) {
  MEMRA_CHECK(layer >= 0 && layer < n_layer() && shape_.layers[(size_t)layer].recurrent(),
              "KV cache: layer {} has no recurrent state", layer);
  return state_[(size_t)layer].data();
}

int KvCache::state_pos(int layer) const {
  MEMRA_CHECK(layer >= 0 && layer < n_layer(), "KV cache: layer {} out of range [0, {})", layer, n_layer());
  return state_pos_[(size_t)layer];
}

void KvCache::advance(int layer, int n_end) {
  MEMRA_CHECK(layer >= 0 && layer < n_layer(), "KV cache: layer {} out of range [0, {})", layer, n_layer());
  MEMRA_CHECK(n_end >= state_pos_[(size_t)layer] && n_end <= opts_.n_ctx,
              "KV cache full: position {} exceeds context n_ctx={}", n_end, opts_.n_ctx);
  state_pos_[(size_t)layer] = n_end;
  n_written_ = std::max(n_written_, n_end);
}

bool KvCache::has_state() const {
  for (const auto& ls : shape_.layers)
    if (ls.recurrent()) return true;
  return false;
}

}  // namespace memra::kv
