// Writing tiny presets: the files load in our gguf reader with the metadata and tensor table of
// the plan, the data decodes to what the generator produced, and the bytes do not depend on the
// thread count or chunk size.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/sha256.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "synth/synth.h"
#include "tokenizer/tokenizer.h"

using namespace memra;
using namespace memra::synth;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("memra_test_synth_" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

WriteResult write(const Plan& p, const fs::path& file, uint64_t seed = 1234, int threads = 2,
                  uint64_t chunk = 64ull << 20) {
  WriteOptions o;
  o.path = file.string();
  o.seed = seed;
  o.threads = threads;
  o.chunk_bytes = chunk;
  return write_model(p, o);
}

void check_file_matches_plan(const gguf::File& f, const Plan& p) {
  const Dims& d = p.dims;
  const std::string a = d.arch;
  EXPECT_EQ(f.get_string("general.architecture"), a);
  EXPECT_EQ(f.get_string("general.name"), d.name);
  EXPECT_EQ(f.get_int(a + ".embedding_length"), (int64_t)d.n_embd);
  EXPECT_EQ(f.get_int(a + ".block_count"), (int64_t)d.n_layer);
  EXPECT_EQ(f.get_int(a + ".feed_forward_length"), (int64_t)d.n_ff);
  EXPECT_EQ(f.get_int(a + ".attention.head_count"), (int64_t)d.n_head);
  EXPECT_EQ(f.get_int(a + ".attention.head_count_kv"), (int64_t)d.n_head_kv);
  EXPECT_EQ(f.get_int(a + ".attention.key_length"), (int64_t)d.head_dim);
  EXPECT_EQ(f.get_int(a + ".attention.value_length"), (int64_t)d.head_dim);
  EXPECT_EQ(f.get_int(a + ".context_length"), (int64_t)d.context_length);
  EXPECT_FLOAT_EQ((float)f.get_float(a + ".rope.freq_base"), (float)d.rope_freq_base);
  EXPECT_FLOAT_EQ((float)f.get_float(a + ".attention.layer_norm_rms_epsilon"), (float)d.rms_eps);
  if (d.is_moe()) {
    EXPECT_EQ(f.get_int(a + ".expert_count"), (int64_t)d.n_expert);
    EXPECT_EQ(f.get_int(a + ".expert_used_count"), (int64_t)d.n_expert_used);
    EXPECT_EQ(f.get_int(a + ".expert_feed_forward_length"), (int64_t)d.n_ff_exp);
  } else {
    EXPECT_EQ(f.find("qwen3moe.expert_count"), nullptr);
  }
  if (a == "llama") {
    EXPECT_EQ(f.get_int("llama.vocab_size"), (int64_t)d.n_vocab);
    EXPECT_EQ(f.get_int("llama.rope.dimension_count"), (int64_t)d.head_dim);
  }
  EXPECT_EQ(f.get_int("general.file_type"), (int64_t)mix_file_type(p.mix));
  EXPECT_EQ(f.get_int("general.quantization_version"), 2);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), d.vocab == VocabStyle::Qwen ? "qwen2" : "llama-bpe");
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), d.n_vocab);
  EXPECT_EQ(f.get_int_array("tokenizer.ggml.token_type").size(), d.n_vocab);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.merges").size(), d.n_regular_tokens - 256);
  const auto bos = f.get_int("tokenizer.ggml.bos_token_id"), eos = f.get_int("tokenizer.ggml.eos_token_id");
  if (d.vocab == VocabStyle::Qwen) {
    EXPECT_EQ(tokens[bos], "<|endoftext|>");
    EXPECT_EQ(tokens[eos], "<|im_end|>");
    EXPECT_EQ(tokens[eos - 1], "<|im_start|>");
    EXPECT_FALSE(f.get_bool("tokenizer.ggml.add_bos_token"));
  } else {
    EXPECT_EQ(tokens[bos], "<|begin_of_text|>");
    EXPECT_EQ(tokens[eos], "<|eot_id|>");
    EXPECT_TRUE(f.get_bool("tokenizer.ggml.add_bos_token"));
  }
  ASSERT_EQ(f.tensors().size(), p.tensors.size());
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    EXPECT_EQ(f.tensors()[i].name, p.tensors[i].name);
    EXPECT_EQ(f.tensors()[i].ne, p.tensors[i].ne) << p.tensors[i].name;
    EXPECT_EQ(f.tensors()[i].type, p.tensors[i].type) << p.tensors[i].name;
  }
  EXPECT_EQ(f.tensor_bytes(), p.tensor_bytes());
}

// Sample mean and standard deviation of a decoded tensor.
std::pair<double, double> moments(const std::vector<float>& x) {
  double s = 0, s2 = 0;
  for (float v : x) {
    s += v;
    s2 += (double)v * v;
  }
  const double m = s / x.size();
  return {m, std::sqrt(s2 / x.size() - m * m)};
}

std::vector<float> decode(const gguf::File& f, const gguf::TensorInfo& t) {
  std::vector<float> out(t.n_elements);
  const uint64_t row_bytes = *qtype_row_bytes(t.type, t.ne[0]);
  const uint8_t* src = f.tensor_data(t);
  for (uint64_t r = 0; r < t.rows(); ++r)
    dequantize_row(t.type, src + r * row_bytes, out.data() + r * t.ne[0], (int64_t)t.ne[0]);
  return out;
}

}  // namespace

TEST(SynthWrite, TinyPresetsLoadWithPlanMetadataAndTypes) {
  TempDir tmp;
  for (const char* preset : {"qwen3-8b-tiny", "llama3-8b-tiny", "qwen3-30b-a3b-tiny", "qwen3-32b-tiny"}) {
    SCOPED_TRACE(preset);
    const Plan p = make_plan(find_preset(preset).dims, Mix::Q4_K_M);
    const fs::path file = tmp.path / (std::string(preset) + ".gguf");
    const WriteResult r = write(p, file);
    EXPECT_EQ(r.file_bytes, fs::file_size(file));
    EXPECT_EQ(r.tensor_bytes, p.tensor_bytes());
    EXPECT_EQ(r.sha256, sha256_file_hex(file.string()));
    const auto f = gguf::File::open(file.string());
    check_file_matches_plan(f, p);
    const auto h = f.type_histogram();
    EXPECT_GT(h.at("Q6_K"), 0u);
    EXPECT_GT(h.at("Q4_K"), 0u);
  }
}

TEST(SynthWrite, EveryMixLoadsAndDecodesToTheGeneratedWeights) {
  TempDir tmp;
  for (Mix m : all_mixes()) {
    SCOPED_TRACE(std::string(mix_name(m)));
    const Plan p = make_plan(find_preset("qwen3-8b-tiny").dims, m);
    const fs::path file = tmp.path / (std::string(mix_name(m)) + ".gguf");
    write(p, file, 99, 2, 100000);
    const auto f = gguf::File::open(file.string());
    check_file_matches_plan(f, p);
    EXPECT_EQ(f.get_int("memra.synth.seed"), 99);
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      const TensorPlan& t = p.tensors[i];
      const auto& info = f.tensors()[i];
      if (t.init == Init::ScaleGrid) continue;
      std::vector<float> want(t.n_elements());
      generate_rows(t, 99, 0, t.rows(), want.data());
      std::vector<float> got;
      if (t.type == QType::FP8_E4M3) {
        const auto& g = f.tensors()[i + 1];
        const float* grid = reinterpret_cast<const float*>(f.tensor_data(g));
        got.resize(t.n_elements());
        dequantize_fp8_rows(f.tensor_data(info), got.data(), (int64_t)t.rows(), (int64_t)t.ne[0], grid,
                            (int64_t)g.ne[1], (int64_t)g.ne[0]);
        // E4M3 keeps 3 mantissa bits: relative error <= 2^-4 for normals, plus the subnormal step
        // of the block (scale * 2^-9) near zero.
        for (size_t k = 0; k < got.size(); ++k) {
          const float scale = grid[(k / t.ne[0]) / 128 * g.ne[0] + (k % t.ne[0]) / 128];
          ASSERT_LE(std::abs(got[k] - want[k]), std::abs(want[k]) / 16 + scale / 512 + 1e-12f) << t.name << " " << k;
        }
      } else {
        got = decode(f, info);
      }
      // Plumbing: every row is the encoding of its generated values, whatever the chunking.
      if (t.type == QType::F32) {
        EXPECT_EQ(got, want) << t.name;
      } else if (t.type != QType::FP8_E4M3) {
        std::vector<uint8_t> enc(t.bytes());
        const uint64_t rb = *qtype_row_bytes(t.type, t.ne[0]);
        for (uint64_t r = 0; r < t.rows(); ++r) quantize_row(t.type, want.data() + r * t.ne[0], enc.data() + r * rb, (int64_t)t.ne[0]);
        EXPECT_EQ(0, std::memcmp(enc.data(), f.tensor_data(info), enc.size())) << t.name;
      }
      // Distribution (from the spec, not from our generator): weights N(0, 0.02), norms 1 + N(0, 0.02).
      const auto [mean, sd] = moments(got);
      const double want_mean = t.init == Init::Norm ? 1.0 : 0.0;
      const double n = (double)got.size();
      EXPECT_NEAR(mean, want_mean, 6 * 0.02 / std::sqrt(n) + 1e-4) << t.name;
      // Small tensors (norms of 32 values) only bound the spread loosely; 4-bit rounding adds
      // noise of ~10% of the weight scale.
      EXPECT_NEAR(sd, 0.02, n < 1000 ? 0.01 : 0.02 * 0.08) << t.name;
    }
  }
}

TEST(SynthWrite, BytesIndependentOfThreadsAndChunks) {
  TempDir tmp;
  for (Mix m : {Mix::Q4_K_M, Mix::FP8}) {
    SCOPED_TRACE(std::string(mix_name(m)));
    Dims d = find_preset("qwen3-30b-a3b-tiny").dims;
    set_dim(d, "n_layer", "2");  // 3-D expert tensors, small enough to write three times
    const Plan p = make_plan(d, m);
    const auto a = write(p, tmp.path / "a.gguf", 5, 1, 64ull << 20);
    const auto b = write(p, tmp.path / "b.gguf", 5, 3, 3000);  // many small chunks, odd thread count
    const auto c = write(p, tmp.path / "c.gguf", 6, 2, 1 << 20);
    EXPECT_EQ(a.sha256, b.sha256);
    EXPECT_EQ(a.file_bytes, b.file_bytes);
    EXPECT_NE(a.sha256, c.sha256) << "another seed gives other weights";
    EXPECT_EQ(a.threads, 1);
    EXPECT_EQ(b.threads, 3);
  }
}

TEST(SynthWrite, UnwritablePathIsAnErrorAndLeavesNoFile) {
  const Plan p = make_plan(find_preset("qwen3-8b-tiny").dims, Mix::F16);
  WriteOptions o;
  o.path = "/nonexistent-dir/x/model.gguf";
  EXPECT_THROW(write_model(p, o), Error);
  EXPECT_FALSE(fs::exists(o.path));
}

// Every key (and its GGUF value type) that llama.cpp's gguf-py writes for these archs in the
// shared tiny models is present in ours with the same type; llama.cpp's loader rejects a key of
// the wrong type. The llama file there has an SPM vocabulary, so its SPM-only keys are skipped.
TEST(SynthWrite, MetadataKeysAndTypesAsGgufPyWritesThem) {
  const std::string dir = std::string(MEMRA_SHARED_DIR) + "/models/synth";
  if (!fs::exists(dir)) GTEST_SKIP() << "shared models not present: " << dir;
  TempDir tmp;
  const std::pair<const char*, const char*> cases[] = {{"qwen3-f32.gguf", "qwen3-8b-tiny"},
                                                       {"qwen3moe-f32.gguf", "qwen3-30b-a3b-tiny"},
                                                       {"llama-f32.gguf", "llama3-8b-tiny"}};
  for (const auto& [ref_name, preset] : cases) {
    SCOPED_TRACE(ref_name);
    Dims d = find_preset(preset).dims;
    set_dim(d, "n_layer", "1");
    const fs::path file = tmp.path / (std::string(preset) + ".gguf");
    write(make_plan(d, Mix::F16), file);
    const auto ours = gguf::File::open(file.string());
    const auto ref = gguf::File::open(dir + "/" + ref_name);
    for (const auto& kv : ref.metadata()) {
      if (kv.key == "tokenizer.ggml.scores" || kv.key == "tokenizer.ggml.unknown_token_id") continue;
      const gguf::Value* v = ours.find(kv.key);
      ASSERT_NE(v, nullptr) << "missing " << kv.key;
      EXPECT_EQ(v->type, kv.value.type) << kv.key;
      if (v->type == gguf::ValueType::ARRAY) {
        EXPECT_EQ(v->as_array().elem_type, kv.value.as_array().elem_type) << kv.key;
      }
    }
  }
}

// The synthetic vocabularies load in our tokenizer (llama.cpp's BPE semantics): specials parse to
// their ids, text round-trips, and the ASCII-bigram-first merges make English text shorter in
// tokens than in bytes.
TEST(SynthWrite, VocabularyWorksWithOurTokenizer) {
  TempDir tmp;
  for (const char* preset : {"qwen3-8b-tiny", "llama3-8b-tiny"}) {
    SCOPED_TRACE(preset);
    Dims d = find_preset(preset).dims;
    set_dim(d, "n_layer", "1");
    const fs::path file = tmp.path / "v.gguf";
    write(make_plan(d, Mix::F16), file);
    const auto f = gguf::File::open(file.string());
    const auto tok = tok::Tokenizer::from_gguf(f);
    const Vocab v = make_vocab(d, 1234);
    EXPECT_EQ(tok.n_vocab(), (int32_t)d.n_vocab);
    EXPECT_EQ(tok.bos(), (int32_t)v.bos);
    EXPECT_EQ(tok.eos(), (int32_t)v.eos);
    EXPECT_TRUE(tok.is_eog((int32_t)v.eos));
    const std::string special = d.vocab == VocabStyle::Qwen ? "<|im_start|>" : "<|start_header_id|>";
    const std::string text = "Hello world, the quick brown fox " + special + "user\nünïcödé 12345";
    const auto ids = tok.tokenize(text, false, true);
    EXPECT_NE(std::find(ids.begin(), ids.end(), tok.find_token(special)), ids.end());
    EXPECT_EQ(tok.detokenize(ids), text);
    const std::string ascii = "the quick brown fox jumps over the lazy dog";
    EXPECT_LT(tok.tokenize(ascii, false, false).size(), ascii.size());
    const auto with_bos = tok.tokenize("hi", true, false);
    ASSERT_FALSE(with_bos.empty());
    EXPECT_EQ(with_bos.front() == (int32_t)v.bos, v.add_bos);
  }
}
