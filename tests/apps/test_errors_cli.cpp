// Bad input: exit code 1, a clear message on stderr, and a receipt with status "error" whose
// error text names the problem. Broken models are derived from stories260K with gguf::Writer.
#include <fmt/format.h>

#include <cstring>
#include <functional>

#include "gguf/writer.h"
#include "receipt/receipt.h"
#include "run_util.h"

namespace memra::apptest {
namespace {

struct Tensor {
  gguf::TensorDecl decl;
  const uint8_t* data;
  uint64_t bytes;
};

using Edit = std::function<void(std::vector<gguf::KeyValue>&, std::vector<Tensor>&)>;

std::string stories() { return shared_dir() + "/models/stories260K.gguf"; }

// stories260K with `edit` applied to its metadata and tensor list; tensor data is copied (and
// zero-padded or cut when an edit changed a size).
std::string derive(const std::string& name, const Edit& edit) {
  auto f = gguf::File::open(stories());
  std::vector<gguf::KeyValue> kv = f.metadata();
  std::vector<Tensor> ts;
  for (const auto& t : f.tensors()) ts.push_back({{t.name, t.ne, t.type}, f.tensor_data(t), t.n_bytes});
  edit(kv, ts);
  const std::string out = (scratch() / name).string();
  std::vector<gguf::TensorDecl> decls;
  for (const auto& t : ts) decls.push_back(t.decl);
  gguf::Writer w(out, kv, decls);
  for (size_t i = 0; i < ts.size(); ++i) {
    std::vector<uint8_t> buf(w.tensor_bytes(i), 0);
    std::memcpy(buf.data(), ts[i].data, std::min<uint64_t>(buf.size(), ts[i].bytes));
    w.write_tensor_data(buf.data(), buf.size());
  }
  w.finish();
  return out;
}

// Runs and checks the error contract; every needle must appear in the receipt's error text.
void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& needles) {
  auto res = run_gen(args);
  std::string cmd;
  for (const auto& a : args) cmd += " " + a;
  EXPECT_EQ(res.code, 1) << cmd << "\n" << res.describe();
  ASSERT_TRUE(res.receipt.is_object()) << cmd << ": no receipt written";
  EXPECT_EQ(res.receipt["status"], "error") << cmd;
  EXPECT_TRUE(validate_receipt(res.receipt).empty()) << cmd << ": receipt does not validate";
  const std::string msg = res.receipt.value("error", "");
  for (const auto& n : needles) {
    EXPECT_NE(msg.find(n), std::string::npos) << cmd << ": error '" << msg << "' does not mention '" << n << "'";
    EXPECT_NE(res.err.find(n), std::string::npos) << cmd << ": stderr does not mention '" << n << "'";
  }
}

TEST(RunGenErrors, PromptLongerThanContext) {
  MEMRA_APPS_REQUIRE_SHARED();
  expect_error({stories(), "-p", "Once upon a time, there was a little boy named Tim. He liked to play.", "--ctx", "8",
                "-n", "4"},
               {"longer than the context n_ctx=8"});
  expect_error({stories(), "--ids", "1,2,3,4,5,6,7,8,9,10", "--ctx", "8", "-n", "0"}, {"longer than the context n_ctx=8"});
  // The prompt fits but the tokens asked for do not: refused up front, not cut short silently.
  expect_error({stories(), "-p", "Once upon a time", "--ctx", "8", "-n", "4"},
               {"prompt of 5 tokens + 4 to generate exceeds context n_ctx=8"});
}

TEST(RunGenErrors, UnknownArchitecture) {
  MEMRA_APPS_REQUIRE_SHARED();
  const auto p = derive("unknown_arch.gguf", [](auto& kv, auto&) {
    for (auto& e : kv)
      if (e.key == "general.architecture") e.value = gguf::Value::str("nosucharch");
  });
  expect_error({p, "-p", "Hello", "-n", "2"}, {"unknown architecture", "nosucharch"});
}

TEST(RunGenErrors, MissingTensor) {
  MEMRA_APPS_REQUIRE_SHARED();
  const auto p = derive("missing_tensor.gguf", [](auto&, auto& ts) {
    std::erase_if(ts, [](const Tensor& t) { return t.decl.name == "blk.0.attn_k.weight"; });
  });
  expect_error({p, "-p", "Hello", "-n", "2"}, {"missing tensor", "blk.0.attn_k.weight"});
}

TEST(RunGenErrors, WrongShapeTensor) {
  MEMRA_APPS_REQUIRE_SHARED();
  const auto p = derive("wrong_shape.gguf", [](auto&, auto& ts) {
    for (auto& t : ts)
      if (t.decl.name == "output_norm.weight") t.decl.ne[0] *= 2;
  });
  expect_error({p, "-p", "Hello", "-n", "2"}, {"output_norm.weight", "shape"});
}

TEST(RunGenErrors, BadGguf) {
  MEMRA_APPS_REQUIRE_SHARED();
  const fs::path notgguf = scratch() / "not_a_model.gguf";
  write_file(notgguf, "this is not a GGUF file at all, just some text");
  expect_error({notgguf.string(), "-p", "Hello"}, {"not_a_model.gguf", "magic"});
  // Truncated in the middle of the metadata.
  const std::string whole = slurp(stories());
  const fs::path cut = scratch() / "truncated.gguf";
  write_file(cut, whole.substr(0, 200));
  expect_error({cut.string(), "-p", "Hello"}, {"truncated.gguf"});
  expect_error({(scratch() / "does_not_exist.gguf").string(), "-p", "Hello"}, {"does_not_exist.gguf"});
}

TEST(RunGenErrors, BadTokenIds) {
  MEMRA_APPS_REQUIRE_SHARED();
  expect_error({stories(), "--ids", "1,99999,3"}, {"--ids", "bad token id 99999"});
  expect_error({stories(), "--ids", "1,-4"}, {"--ids", "bad token id -4"});
  expect_error({stories(), "--ids", "1,two"}, {"--ids", "bad token id 'two'"});
  expect_error({stories(), "--detokenize", "1,512"}, {"--detokenize", "bad token id 512", "512 tokens"});
  expect_error({stories(), "--detokenize", "1,,2"}, {"--detokenize", "empty item"});
}

TEST(RunGenErrors, MissingPromptAndBadCombinations) {
  MEMRA_APPS_REQUIRE_SHARED();
  expect_error({stories()}, {"no prompt given"});
  expect_error({stories(), "-p", "x", "--logits-out", (scratch() / "l.f32").string()}, {"--logits-out needs --ids"});
  expect_error({stories(), "--chat", "-p", "Hi", "-n", "2"}, {"tokenizer.chat_template", "--template-file"});
}

}  // namespace
}  // namespace memra::apptest
