// Corruption sweep: every truncation and >= 10,000 seeded random mutations of a small GGUF must
// either throw memra::Error or yield a file that validates and can be read end to end. Anything
// else (another exception type, a crash, a sanitizer report under the asan preset) fails.
#include <random>

#include "gguf/writer.h"
#include "helpers.h"

using namespace memra;
using namespace memra::gguf;
using namespace memra::gguf::test;

namespace {

std::vector<uint8_t> small_gguf() {
  TempDir dir;
  const auto p = dir.file("small.gguf");
  {
    std::vector<KeyValue> kv = {
        {"general.architecture", Value::str("llama")},
        {"llama.block_count", Value::u32(2)},
        {"llama.rope.freq_base", Value::f32(10000.0f)},
        {"llama.attention.layer_norm_rms_epsilon", Value::f64(1e-5)},
        {"tokenizer.ggml.add_bos_token", Value::boolean(true)},
        {"tokenizer.ggml.tokens", Value::string_array({"<unk>", "<s>", "</s>", "hello", "world"})},
        {"tokenizer.ggml.scores",
         Value::array(ValueType::FLOAT32, {Value::f32(0), Value::f32(-1), Value::f32(-2)})},
        {"tokenizer.ggml.token_type", Value::array(ValueType::INT32, {Value::i32(2), Value::i32(3)})},
        {"t.nested", Value::array(ValueType::ARRAY, {Value::array(ValueType::INT8, {Value::i8(-1)})})},
        {"t.i64", Value::i64(-7)},
        {"t.u16", Value::u16(9)},
    };
    // Every tensor size is a multiple of the 32-byte alignment, so no padding follows the last
    // one and every strict prefix of the file is missing real data.
    Writer w(p, kv, {{"token_embd.weight", {8, 4}, QType::F32},
                     {"blk.0.attn_q.weight", {32, 16}, QType::Q4_0},
                     {"output_norm.weight", {16}, QType::F16}});
    for (size_t i = 0; i < 3; ++i) {
      std::vector<uint8_t> d(w.tensor_bytes(i));
      for (size_t j = 0; j < d.size(); ++j) d[j] = (uint8_t)(j * 7 + i);
      w.write_tensor_data(d.data(), d.size());
    }
    w.finish();
  }
  return read_bytes(p);
}

// Touches everything a valid file exposes, so sanitizers see any bad pointer it holds.
uint64_t exercise(const File& f) {
  uint64_t sum = describe(f).size();
  for (const auto& kv : f.metadata()) {
    try {  // typed getters may legitimately refuse a mutated type
      if (kv.value.type == ValueType::ARRAY) {
        const auto& a = kv.value.as_array();
        sum += a.items.size();
        if (a.elem_type == ValueType::STRING) sum += f.get_string_array(kv.key).size();
        if (a.elem_type == ValueType::FLOAT32) sum += f.get_f32_array(kv.key).size();
        if (a.elem_type == ValueType::INT32) sum += f.get_int_array(kv.key).size();
      } else if (kv.value.type == ValueType::STRING) {
        sum += f.get_string(kv.key).size();
      } else if (kv.value.is_integer()) {
        sum += (uint64_t)f.get_int(kv.key);
      } else if (kv.value.is_float()) {
        sum += (uint64_t)(f.get_float(kv.key) != 0);
      } else {
        sum += f.get_bool(kv.key);
      }
    } catch (const Error&) {
    }
  }
  for (const auto& t : f.tensors()) {
    const uint8_t* d = f.tensor_data(t);
    for (uint64_t i = 0; i < t.n_bytes; ++i) sum += d[i];
  }
  return sum + f.tensor_bytes() + f.type_histogram().size();
}

enum class Outcome { kError, kValid };

// Parses an exact-size heap copy (so an over-read hits ASan's redzone). Fails the test on any
// exception other than memra::Error.
Outcome check(const std::vector<uint8_t>& image, const std::string& what) {
  std::vector<uint8_t> copy(image);
  try {
    File f = File::parse(copy.data(), copy.size(), "corrupt.gguf");
    volatile uint64_t s = exercise(f);
    (void)s;
    return Outcome::kValid;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("corrupt.gguf"), std::string::npos) << what << ": " << msg;
    return Outcome::kError;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": non-memra exception: " << e.what();
  } catch (...) {
    ADD_FAILURE() << what << ": unknown exception";
  }
  return Outcome::kError;
}

}  // namespace

TEST(GgufCorruption, EveryTruncationIsAnError) {
  const auto full = small_gguf();
  File f = File::parse(full.data(), full.size(), "small");
  ASSERT_EQ(f.tensors().size(), 3u);
  const uint64_t data_end = f.data_offset() + f.tensors().back().offset + f.tensors().back().n_bytes;
  ASSERT_EQ(data_end, full.size());
  // Every prefix, through header, metadata, infos, padding and the tensor data.
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> prefix(full.begin(), full.begin() + (ptrdiff_t)n);
    EXPECT_EQ(check(prefix, fmt::format("truncated to {} bytes", n)), Outcome::kError)
        << "a file truncated to " << n << " of " << full.size() << " bytes was accepted";
  }
  EXPECT_EQ(check(full, "full"), Outcome::kValid);
}

TEST(GgufCorruption, RandomMutations) {
  const auto full = small_gguf();
  const uint64_t header_end = File::parse(full.data(), full.size()).data_offset();
  std::mt19937_64 rng(0x6d656d7261);  // fixed seed: failures reproduce
  constexpr int kMutations = 12000;
  int valid = 0, errors = 0;
  for (int i = 0; i < kMutations; ++i) {
    auto img = full;
    const int n_bytes = 1 + (int)(rng() % 4);
    std::string what = fmt::format("mutation #{}:", i);
    for (int k = 0; k < n_bytes; ++k) {
      // Mostly in the header/metadata/infos, where the parser's decisions are.
      const size_t pos = (rng() % 8) ? rng() % header_end : rng() % img.size();
      uint8_t v;
      switch (rng() % 4) {
        case 0: v = (uint8_t)(img[pos] ^ (1u << (rng() % 8))); break;  // bit flip
        case 1: v = (rng() % 2) ? 0x00 : 0xFF; break;                  // extremes
        case 2: v = (uint8_t)(img[pos] + ((rng() % 2) ? 1 : -1)); break;
        default: v = (uint8_t)rng(); break;
      }
      img[pos] = v;
      what += fmt::format(" [{}]={:02x}", pos, v);
    }
    (check(img, what) == Outcome::kValid ? valid : errors)++;
    if (::testing::Test::HasFailure()) break;  // one reproducible report is enough
  }
  // Both paths must be exercised, or the sweep proves nothing.
  EXPECT_GT(valid, 100) << "errors " << errors;
  EXPECT_GT(errors, 1000) << "valid " << valid;
  RecordProperty("valid", valid);
  RecordProperty("errors", errors);
  std::printf("mutations: %d valid, %d rejected\n", valid, errors);
}
