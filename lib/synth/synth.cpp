#include "synth/synth.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <future>

#include "core/error.h"
#include "core/half.h"
#include "core/parallel.h"
#include "core/sha256.h"
#include "core/timer.h"
#include "gguf/writer.h"
#include "quant/quant.h"
#include "synth/rng.h"

namespace memra::synth {
namespace {

using gguf::KeyValue;
using gguf::Value;
using gguf::ValueType;

// One unit of work: rows that are encoded together. A row for most types; for FP8 a band of up
// to 128 rows inside one expert, because a scale-grid block spans 128 rows.
struct Unit {
  uint64_t first_row, n_rows, grid_offset;
};

std::vector<Unit> units_of(const TensorPlan& t) {
  std::vector<Unit> u;
  const uint64_t rows = t.rows();
  if (t.type != QType::FP8_E4M3) {
    u.reserve(rows);
    for (uint64_t r = 0; r < rows; ++r) u.push_back({r, 1, 0});
    return u;
  }
  const uint64_t out = t.ne.size() > 1 ? t.ne[1] : 1;
  const uint64_t experts = rows / out;
  const uint64_t bands = (out + kFp8Block - 1) / kFp8Block;
  const uint64_t grid_cols = (t.ne[0] + kFp8Block - 1) / kFp8Block;
  for (uint64_t e = 0; e < experts; ++e)
    for (uint64_t b = 0; b < bands; ++b)
      u.push_back({e * out + b * kFp8Block, std::min(kFp8Block, out - b * kFp8Block),
                   (e * bands + b) * grid_cols});
  return u;
}

// Hands finished chunks to a background thread so the disk write of chunk i overlaps the
// generation of chunk i+1; writes stay in order because only one is ever in flight.
class Pipeline {
 public:
  explicit Pipeline(gguf::Writer& w) : w_(w) {}
  ~Pipeline() {
    if (pending_.valid()) pending_.wait();
  }
  std::vector<uint8_t> take_buffer(size_t n) {
    std::vector<uint8_t> b = std::move(spare_);
    b.resize(n);
    return b;
  }
  void submit(std::vector<uint8_t> buf) {
    drain();
    pending_ = std::async(std::launch::async, [this, b = std::move(buf)]() mutable {
      w_.write_tensor_data(b.data(), b.size());
      return std::move(b);
    });
  }
  void drain() {
    if (pending_.valid()) spare_ = pending_.get();  // rethrows a write error here
  }

 private:
  gguf::Writer& w_;
  std::future<std::vector<uint8_t>> pending_;
  std::vector<uint8_t> spare_;
};

void encode_units(const TensorPlan& t, uint64_t seed, const std::vector<Unit>& units, size_t ub,
                  size_t ue, uint8_t* dst, std::vector<float>& grid, ThreadPool& pool) {
  const uint64_t ne0 = t.ne[0];
  const uint64_t row_bytes = *qtype_row_bytes(t.type, ne0);
  const uint64_t base_row = units[ub].first_row;
  const uint64_t grid_cols = (ne0 + kFp8Block - 1) / kFp8Block;
  pool.parallel_for(ue - ub, [&](size_t b, size_t e) {
    std::vector<float> scratch;
    for (size_t i = ub + b; i < ub + e; ++i) {
      const Unit& u = units[i];
      scratch.resize(u.n_rows * ne0);
      generate_rows(t, seed, u.first_row, u.n_rows, scratch.data());
      uint8_t* out = dst + (u.first_row - base_row) * row_bytes;
      if (t.type == QType::FP8_E4M3) {
        quantize_fp8_rows(scratch.data(), out, (int64_t)u.n_rows, (int64_t)ne0,
                          grid.data() + u.grid_offset, 1, (int64_t)grid_cols);
      } else {
        for (uint64_t r = 0; r < u.n_rows; ++r)
          quantize_row(t.type, scratch.data() + r * ne0, out + r * row_bytes, (int64_t)ne0);
      }
    }
  });
}

}  // namespace

void generate_rows(const TensorPlan& t, uint64_t seed, uint64_t first_row, uint64_t n_rows, float* out) {
  MEMRA_CHECK(t.init != Init::ScaleGrid, "synth: '{}' is a scale grid; it is computed, not generated", t.name);
  const CounterRng rng(seed, t.name);
  const float mean = t.init == Init::Norm ? 1.0f : 0.0f;
  rng.fill_normal(first_row * t.ne[0], n_rows * t.ne[0], mean, kWeightStd, out);
}

std::vector<KeyValue> make_metadata(const Plan& p, const Vocab& v, uint64_t seed) {
  const Dims& d = p.dims;
  const std::string a = d.arch;
  std::vector<KeyValue> kv;
  auto u32 = [&](std::string k, uint64_t x) {
    MEMRA_CHECK(x <= 0xFFFFFFFFull, "synth: metadata {} = {} does not fit u32", k, x);
    kv.push_back({std::move(k), Value::u32((uint32_t)x)});
  };
  kv.push_back({"general.architecture", Value::str(a)});
  kv.push_back({"general.name", Value::str(d.name)});
  kv.push_back({"general.type", Value::str("model")});
  u32(a + ".context_length", d.context_length);
  u32(a + ".embedding_length", d.n_embd);
  u32(a + ".block_count", d.n_layer);
  u32(a + ".feed_forward_length", d.n_ff);
  u32(a + ".attention.head_count", d.n_head);
  u32(a + ".attention.head_count_kv", d.n_head_kv);
  kv.push_back({a + ".rope.freq_base", Value::f32((float)d.rope_freq_base)});
  kv.push_back({a + ".attention.layer_norm_rms_epsilon", Value::f32((float)d.rms_eps)});
  u32(a + ".attention.key_length", d.head_dim);
  u32(a + ".attention.value_length", d.head_dim);
  if (d.arch == "llama") {  // the Llama 3 converter writes these two as well
    u32(a + ".vocab_size", d.n_vocab);
    u32(a + ".rope.dimension_count", d.head_dim);
  }
  if (d.is_moe()) {
    u32(a + ".expert_count", d.n_expert);
    u32(a + ".expert_used_count", d.n_expert_used);
    u32(a + ".expert_feed_forward_length", d.n_ff_exp);
  }
  u32("general.file_type", mix_file_type(p.mix));
  u32("general.quantization_version", 2);
  kv.push_back({"tokenizer.ggml.model", Value::str("gpt2")});
  kv.push_back({"tokenizer.ggml.pre", Value::str(std::string(vocab_pre(d.vocab)))});
  kv.push_back({"tokenizer.ggml.tokens", Value::string_array(v.tokens)});
  std::vector<Value> types;
  types.reserve(v.types.size());
  for (int32_t t : v.types) types.push_back(Value::i32(t));
  kv.push_back({"tokenizer.ggml.token_type", Value::array(ValueType::INT32, std::move(types))});
  kv.push_back({"tokenizer.ggml.merges", Value::string_array(v.merges)});
  u32("tokenizer.ggml.bos_token_id", v.bos);
  u32("tokenizer.ggml.eos_token_id", v.eos);
  u32("tokenizer.ggml.padding_token_id", v.pad);
  kv.push_back({"tokenizer.ggml.add_bos_token", Value::boolean(v.add_bos)});
  kv.push_back({"tokenizer.ggml.add_eos_token", Value::boolean(false)});
  kv.push_back({"memra.synth.mix", Value::str(std::string(mix_name(p.mix)))});
  kv.push_back({"memra.synth.seed", Value::u64(seed)});
  return kv;
}

WriteResult write_model(const Plan& p, const WriteOptions& o) {
  MEMRA_CHECK(!o.path.empty(), "synth: no output path given");
  MEMRA_CHECK(o.chunk_bytes > 0, "synth: chunk_bytes must be > 0");
  Stopwatch sw;
  ThreadPool pool(o.threads);
  WriteResult res;
  res.threads = pool.size();
  res.tensor_bytes = p.tensor_bytes();

  const Vocab vocab = make_vocab(p.dims, o.seed);
  std::vector<gguf::TensorDecl> decls;
  for (const auto& t : p.tensors) decls.push_back({t.name, t.ne, t.type});
  try {
    gguf::Writer w(o.path, make_metadata(p, vocab, o.seed), decls, 3, o.hash);
    Pipeline pipe(w);
    std::vector<float> grid;  // scale grid of the last FP8 tensor, written right after it
    for (size_t ti = 0; ti < p.tensors.size(); ++ti) {
      const TensorPlan& t = p.tensors[ti];
      MEMRA_CHECK(w.tensor_bytes(ti) == t.bytes(), "synth: writer and plan disagree on the size of '{}'", t.name);
      if (t.init == Init::ScaleGrid) {
        MEMRA_CHECK(grid.size() == t.n_elements(), "synth: scale grid '{}' does not follow its FP8 tensor", t.name);
        auto buf = pipe.take_buffer(grid.size() * sizeof(float));
        std::memcpy(buf.data(), grid.data(), buf.size());
        pipe.submit(std::move(buf));
      } else {
        const auto units = units_of(t);
        if (t.type == QType::FP8_E4M3) {
          const uint64_t gc = (t.ne[0] + kFp8Block - 1) / kFp8Block;
          grid.assign(units.size() * gc, 0.0f);
        }
        const uint64_t row_bytes = *qtype_row_bytes(t.type, t.ne[0]);
        size_t ub = 0;
        while (ub < units.size()) {
          size_t ue = ub;
          uint64_t bytes = 0;
          while (ue < units.size() && (ue == ub || bytes + units[ue].n_rows * row_bytes <= o.chunk_bytes))
            bytes += units[ue++].n_rows * row_bytes;
          auto buf = pipe.take_buffer(bytes);
          Stopwatch es;
          encode_units(t, o.seed, units, ub, ue, buf.data(), grid, pool);
          res.seconds_encode += es.seconds();
          Stopwatch ws;
          pipe.submit(std::move(buf));
          res.seconds_wait += ws.seconds();
          ub = ue;
        }
      }
      if (o.progress) o.progress(ti, p.tensors.size(), t.name);
    }
    Stopwatch ws;
    pipe.drain();
    w.finish();
    res.seconds_wait += ws.seconds();
    if (o.hash) res.sha256 = w.sha256_hex();
  } catch (...) {
    std::error_code ec;  // a half-written model must not be mistaken for a finished one
    std::filesystem::remove(o.path, ec);
    throw;
  }
  res.seconds_write = sw.seconds();
  res.file_bytes = std::filesystem::file_size(o.path);
  return res;
}

}  // namespace memra::synth
