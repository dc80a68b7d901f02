// Bad input: each a memra::Error whose message names what is wrong. Broken models are written
// with gguf::Writer into a temp dir from the synthetic llama model.
#include <fmt/format.h>

#include <filesystem>
#include <cstring>
#include <functional>
#include <unistd.h>

#include "core/error.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "ref_util.h"

namespace memra {
namespace {

namespace fs = std::filesystem;

struct Tensor {
  gguf::TensorDecl decl;
  const uint8_t* data;
  uint64_t bytes;
};

// Copies src with edits applied to its metadata and tensor list; returns the new path.
std::string derive(const std::string& src, const std::string& name,
                   const std::function<void(std::vector<gguf::KeyValue>&, std::vector<Tensor>&)>& edit) {
  auto f = gguf::File::open(src);
  std::vector<gguf::KeyValue> kv = f.metadata();
  std::vector<Tensor> ts;
  for (const auto& t : f.tensors()) ts.push_back({{t.name, t.ne, t.type}, f.tensor_data(t), t.n_bytes});
  edit(kv, ts);
  const fs::path dir = fs::temp_directory_path() / fmt::format("memra_engine_errors_{}", ::getpid());
  fs::create_directories(dir);
  const std::string out = (dir / name).string();
  std::vector<gguf::TensorDecl> decls;
  for (const auto& t : ts) decls.push_back(t.decl);
  gguf::Writer w(out, kv, decls);
  for (size_t i = 0; i < ts.size(); ++i) {
    const uint64_t need = w.tensor_bytes(i);
    std::vector<uint8_t> buf(need, 0);
    std::memcpy(buf.data(), ts[i].data, std::min(need, ts[i].bytes));
    w.write_tensor_data(buf.data(), buf.size());
  }
  w.finish();
  return out;
}

std::string llama_path() { return testref::shared_dir() + "/models/synth/llama-f32.gguf"; }

// Loads the model and returns the error text ("" when it loaded).
std::string load_error(const std::string& path) {
  std::string msg;
  try {
    auto rig = testref::make_rig(path, false, QType::F32, 64, 1);
  } catch (const Error& e) {
    msg = e.what();
  }
  fs::remove(path);
  return msg;
}

void expect_contains(const std::string& msg, const std::string& what) {
  EXPECT_NE(msg.find(what), std::string::npos) << "message: '" << msg << "' lacks '" << what << "'";
}

TEST(BadInput, UnknownArchitecture) {
  MEMRA_REQUIRE_SHARED();
  auto p = derive(llama_path(), "unknown_arch.gguf", [](auto& kv, auto&) {
    for (auto& e : kv)
      if (e.key == "general.architecture") e.value = gguf::Value::str("mamba9");
  });
  const auto msg = load_error(p);
  expect_contains(msg, "unknown architecture 'mamba9'");
  expect_contains(msg, "qwen3moe");  // lists what is supported
}

TEST(BadInput, MissingTensor) {
  MEMRA_REQUIRE_SHARED();
  auto p = derive(llama_path(), "missing_tensor.gguf", [](auto&, auto& ts) {
    std::erase_if(ts, [](const Tensor& t) { return t.decl.name == "blk.1.ffn_up.weight"; });
  });
  const auto msg = load_error(p);
  expect_contains(msg, "missing tensor 'blk.1.ffn_up.weight'");
  expect_contains(msg, "[256, 512]");
}

TEST(BadInput, WrongShapeTensor) {
  MEMRA_REQUIRE_SHARED();
  auto p = derive(llama_path(), "wrong_shape.gguf", [](auto&, auto& ts) {
    for (auto& t : ts)
      if (t.decl.name == "blk.0.attn_k.weight") t.decl.ne = {256, 64};
  });
  const auto msg = load_error(p);
  expect_contains(msg, "tensor 'blk.0.attn_k.weight' has shape [256, 64], expected [256, 128]");
}

TEST(BadInput, MissingMetadataKey) {
  MEMRA_REQUIRE_SHARED();
  auto p = derive(llama_path(), "missing_key.gguf", [](auto& kv, auto&) {
    std::erase_if(kv, [](const gguf::KeyValue& e) { return e.key == "llama.attention.head_count"; });
  });
  expect_contains(load_error(p), "missing metadata key 'llama.attention.head_count'");
}

TEST(BadInput, PromptLongerThanContext) {
  MEMRA_REQUIRE_SHARED();
  auto rig = testref::make_rig(llama_path(), false, QType::F32, 16, 1);
  std::vector<int32_t> prompt(10, 5);
  auto greedy = [](std::span<const float> l) { return engine::argmax(l); };
  try {
    engine::generate(*rig.session, prompt, {8, {}}, greedy);
    FAIL() << "no error";
  } catch (const Error& e) {
    expect_contains(e.what(), "prompt of 10 tokens + 8 to generate exceeds context n_ctx=16");
  }
  std::vector<int32_t> long_prompt(17, 5);
  try {
    rig.session->prefill(long_prompt);
    FAIL() << "no error";
  } catch (const Error& e) {
    expect_contains(e.what(), "prompt of 17 tokens");
    expect_contains(e.what(), "n_ctx=16");
  }
  // Within the context it runs, and the session stays usable after the errors.
  auto r = engine::generate(*rig.session, prompt, {6, {}}, greedy);
  EXPECT_EQ(r.tokens.size(), 6u);
}

TEST(BadInput, TokenIdOutOfVocabulary) {
  MEMRA_REQUIRE_SHARED();
  auto rig = testref::make_rig(llama_path(), false, QType::F32, 16, 1);
  std::vector<int32_t> ids = {1, 1024};
  try {
    rig.session->prefill(ids);
    FAIL() << "no error";
  } catch (const Error& e) {
    expect_contains(e.what(), "token id 1024 out of range [0, 1024)");
  }
}

TEST(BadInput, QuantizedKvNeedsWholeBlocks) {
  MEMRA_REQUIRE_SHARED();
  // stories260K: 4 kv heads x head_dim 8 = 32 per position: q8_0 fits, and runs.
  auto ok = testref::make_rig(testref::shared_dir() + "/models/stories260K.gguf", false, QType::Q8_0, 32, 1);
  std::vector<int32_t> ids = {1, 403, 407};
  EXPECT_EQ(ok.session->prefill(ids).size(), 512u);
}

// The other new architectures name what is missing or inconsistent too.
std::string synth_path(const char* f) { return testref::shared_dir() + "/models/synth/" + f; }

TEST(BadInput, Qwen35MissingSsmKeyAndInconsistentSizes) {
  MEMRA_REQUIRE_SHARED();
  auto p = derive(synth_path("qwen35-f32.gguf"), "q35_missing_key.gguf", [](auto& kv, auto&) {
    std::erase_if(kv, [](const gguf::KeyValue& e) { return e.key == "qwen35.ssm.conv_kernel"; });
  });
  expect_contains(load_error(p), "missing metadata key 'qwen35.ssm.conv_kernel'");
  p = derive(synth_path("qwen35-f32.gguf"), "q35_inner.gguf", [](auto& kv, auto&) {
    for (auto& e : kv)
      if (e.key == "qwen35.ssm.inner_size") e.value = gguf::Value::u32(200);
  });
  expect_contains(load_error(p), "inconsistent ssm metadata");
}

TEST(BadInput, GptOssMissingSinksAndGemma3BadPattern) {
  MEMRA_REQUIRE_SHARED();
  auto p = derive(synth_path("gpt-oss-f32.gguf"), "oss_sinks.gguf", [](auto&, auto& ts) {
    std::erase_if(ts, [](const Tensor& t) { return t.decl.name == "blk.1.attn_sinks.weight"; });
  });
  expect_contains(load_error(p), "missing tensor 'blk.1.attn_sinks.weight'");
  p = derive(synth_path("gemma3-f32.gguf"), "g3_pattern.gguf", [](auto& kv, auto&) {
    for (auto& e : kv)
      if (e.key == "gemma3.attention.sliding_window_pattern")
        e.value = gguf::Value::array(gguf::ValueType::BOOL, {gguf::Value::boolean(true)});
  });
  expect_contains(load_error(p), "has 1 entries for 2 layers");
}

// minimax-m3: the sparse attention's metadata and tensors are required, by name.
std::string minimax_path() { return testref::shared_dir() + "/models/synth/minimax-m3-f32.gguf"; }

TEST(BadInput, MinimaxMissingIndexerKey) {
  MEMRA_REQUIRE_SHARED();
  auto p = derive(minimax_path(), "mm_missing_key.gguf", [](auto& kv, auto&) {
    std::erase_if(kv, [](const gguf::KeyValue& e) { return e.key == "minimax-m3.attention.indexer.block_size"; });
  });
  expect_contains(load_error(p), "missing metadata key 'minimax-m3.attention.indexer.block_size'");
}

TEST(BadInput, MinimaxMissingIndexerTensor) {
  MEMRA_REQUIRE_SHARED();
  auto p = derive(minimax_path(), "mm_missing_tensor.gguf", [](auto&, auto& ts) {
    std::erase_if(ts, [](const Tensor& t) { return t.decl.name == "blk.1.indexer.k_norm.weight"; });
  });
  const auto msg = load_error(p);
  expect_contains(msg, "missing tensor 'blk.1.indexer.k_norm.weight'");
  expect_contains(msg, "mm_missing_tensor.gguf");
}

TEST(BadInput, MinimaxLocalBlocksBeyondTopK) {
  MEMRA_REQUIRE_SHARED();
  auto p = derive(minimax_path(), "mm_local.gguf", [](auto& kv, auto&) {
    for (auto& e : kv)
      if (e.key == "minimax-m3.attention.indexer.local_blocks") e.value = gguf::Value::u32(3);
  });
  const auto msg = load_error(p);
  expect_contains(msg, "'minimax-m3.attention.indexer.local_blocks' = 3");
  expect_contains(msg, "top_k >= local_blocks >= 1");
}

// Session behaviour the app relies on, on every architecture's f32 file (sliding windows, recurrent
// state, MoE): decode after a prefill equals one longer prefill, chunked prefill equals one batch,
// and reset starts over (a recurrent state back to zero).
const char* const kSessionModels[] = {"qwen3-f32.gguf",  "llama-f32.gguf",  "gemma3-f32.gguf",    "gemma4-f32.gguf", "minimax-m3-f32.gguf",
                                      "gpt-oss-f32.gguf", "step35-f32.gguf", "qwen35-f32.gguf", "qwen35moe-f32.gguf"};

std::vector<int32_t> session_ids(size_t n) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back((int32_t)((i * 389 + 17) % 1000));
  return ids;
}

TEST(Session, DecodeEqualsPrefillAndResetStartsOver) {
  MEMRA_REQUIRE_SHARED();
  for (const char* m : kSessionModels) {
    auto rig = testref::make_rig(testref::shared_dir() + "/models/synth/" + m, false, QType::F32, 64, 2);
    const auto ids = session_ids(24);  // past the 16-position windows
    const auto all = rig.session->prefill(ids, true);
    rig.session->reset();
    EXPECT_EQ(rig.session->n_past(), 0);
    rig.session->prefill(std::span<const int32_t>(ids).first(20));
    std::vector<float> last;
    for (size_t i = 20; i < ids.size(); ++i) last = rig.session->decode(ids[i]);
    const size_t nv = last.size();
    EXPECT_LE(testref::rel_max_err(last.data(), all.data() + (ids.size() - 1) * nv, nv), 1e-5) << m;
    EXPECT_EQ(rig.session->n_past(), (int)ids.size()) << m;
  }
}

TEST(Session, ChunkedPrefillEqualsOneBatch) {
  MEMRA_REQUIRE_SHARED();
  for (const char* m : kSessionModels) {
    auto file = std::make_shared<const gguf::File>(gguf::File::open(testref::shared_dir() + "/models/synth/" + m));
    auto be = backend::make_cpu_backend({2, false});
    engine::SessionOptions a, b;
    a.kv = b.kv = {64, QType::F32, QType::F32};
    b.max_batch = 3;
    engine::Session sa(file, *be, a), sb(file, *be, b);
    const auto ids = session_ids(40);
    const auto la = sa.prefill(ids, true), lb = sb.prefill(ids, true);
    EXPECT_LE(testref::rel_max_err(lb.data(), la.data(), la.size()), 1e-5) << m;
  }
}

}  // namespace
}  // namespace memra
