// Writer: every value type round-trips through File; layout follows the GGUF rules.
#include <cmath>
#include <limits>

#include "gguf/writer.h"
#include "helpers.h"

using namespace memra;
using namespace memra::gguf;
using namespace memra::gguf::test;

namespace {

const std::string kUtf8WithNul = std::string("utf8 \xc3\xa9 and a ") + '\0' + " byte";

std::vector<KeyValue> all_types_kv() {
  std::vector<KeyValue> kv = {
      {"general.architecture", Value::str("llama")},
      {"t.u8", Value::u8(250)},
      {"t.i8", Value::i8(-120)},
      {"t.u16", Value::u16(65000)},
      {"t.i16", Value::i16(-32000)},
      {"t.u32", Value::u32(4000000000u)},
      {"t.i32", Value::i32(-2000000000)},
      {"t.u64", Value::u64(std::numeric_limits<uint64_t>::max())},
      {"t.i64", Value::i64(std::numeric_limits<int64_t>::min())},
      {"t.f32", Value::f32(0.1f)},
      {"t.f64", Value::f64(-1e300)},
      {"t.bool", Value::boolean(true)},
      {"t.str", Value::str(kUtf8WithNul)},
      {"t.strs", Value::string_array({"<unk>", "", "a b"})},
      {"t.f32s", Value::array(ValueType::FLOAT32, {Value::f32(1.5f), Value::f32(-2.0f)})},
      {"t.i32s", Value::array(ValueType::INT32, {Value::i32(-1), Value::i32(7)})},
      {"t.empty", Value::array(ValueType::UINT64, {})},
      {"t.nested", Value::array(ValueType::ARRAY,
                                {Value::array(ValueType::UINT8, {Value::u8(1), Value::u8(2)}),
                                 Value::string_array({"x"})})},
  };
  return kv;
}

}  // namespace

TEST(GgufWriter, AllValueTypesRoundTrip) {
  TempDir dir;
  const auto p = dir.file("all.gguf");
  const std::vector<TensorDecl> decls = {
      {"a", {4, 3}, QType::F32}, {"b", {64, 2}, QType::Q4_0}, {"c", {5}, QType::F16}};
  {
    Writer w(p, all_types_kv(), decls);
    for (size_t i = 0; i < decls.size(); ++i) {
      std::vector<uint8_t> d(w.tensor_bytes(i));
      for (size_t j = 0; j < d.size(); ++j) d[j] = (uint8_t)(i * 31 + j);
      // Odd-sized chunks: the writer must stitch them into one tensor.
      for (size_t off = 0; off < d.size(); off += 7)
        w.write_tensor_data(d.data() + off, std::min<size_t>(7, d.size() - off));
    }
    w.finish();
  }
  File f = File::open(p);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_int("t.u8"), 250);
  EXPECT_EQ(f.get_int("t.i8"), -120);
  EXPECT_EQ(f.get_int("t.u16"), 65000);
  EXPECT_EQ(f.get_int("t.i16"), -32000);
  EXPECT_EQ(f.get_int("t.u32"), 4000000000LL);
  EXPECT_EQ(f.get_int("t.i32"), -2000000000);
  EXPECT_EQ(f.find("t.u64")->as_uint(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f.get_int("t.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ((float)f.get_float("t.f32"), 0.1f);
  EXPECT_EQ(f.get_float("t.f64"), -1e300);
  EXPECT_TRUE(f.get_bool("t.bool"));
  EXPECT_EQ(f.get_string("t.str"), kUtf8WithNul);
  EXPECT_EQ(f.get_string_array("t.strs"), (std::vector<std::string>{"<unk>", "", "a b"}));
  EXPECT_EQ(f.get_f32_array("t.f32s"), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(f.get_int_array("t.i32s"), (std::vector<int64_t>{-1, 7}));
  EXPECT_TRUE(f.find("t.empty")->as_array().items.empty());
  EXPECT_EQ(f.find("t.empty")->as_array().elem_type, ValueType::UINT64);
  const Array& nested = f.find("t.nested")->as_array();
  ASSERT_EQ(nested.items.size(), 2u);
  EXPECT_EQ(nested.items[0].as_array().items[1].as_int(), 2);
  EXPECT_EQ(nested.items[1].as_array().items[0].as_string(), "x");
  // Exact scalar types survive (needed for byte-identical rewrites).
  for (const auto& kv : all_types_kv()) EXPECT_EQ(f.find(kv.key)->type, kv.value.type) << kv.key;
  // The Value::f32 factory stores a float widened exactly.
  EXPECT_EQ(f.find("t.f32")->type, ValueType::FLOAT32);

  ASSERT_EQ(f.tensors().size(), 3u);
  // Sizes from the GGUF rules: F32 4 B/elem; Q4_0 18 B per 32; F16 2 B/elem.
  EXPECT_EQ(f.tensor("a").n_bytes, 48u);
  EXPECT_EQ(f.tensor("b").n_bytes, 4u * 18u);
  EXPECT_EQ(f.tensor("c").n_bytes, 10u);
  EXPECT_EQ(f.tensor("a").rows(), 3u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(f.tensor("a").offset, 0u);
  EXPECT_EQ(f.tensor("b").offset, 64u);   // 48 padded to 64
  EXPECT_EQ(f.tensor("c").offset, 160u);  // 64 + 72 padded to 96
  EXPECT_EQ(f.file_size(), f.data_offset() + 192u);  // last tensor padded too
  for (size_t i = 0; i < decls.size(); ++i) {
    const auto& t = f.tensors()[i];
    const uint8_t* d = f.tensor_data(t);
    for (size_t j = 0; j < t.n_bytes; ++j) ASSERT_EQ(d[j], (uint8_t)(i * 31 + j)) << t.name << " " << j;
  }
  EXPECT_EQ(f.type_histogram(), (std::map<std::string, uint64_t>{{"F16", 1}, {"F32", 1}, {"Q4_0", 1}}));
  EXPECT_EQ(f.tensor_bytes(), 48u + 72u + 10u);

  // Re-writing what was read is byte-identical.
  const auto p2 = dir.file("all2.gguf");
  rewrite(f, p2);
  EXPECT_EQ(read_bytes(p), read_bytes(p2));
}

TEST(GgufWriter, Version2AndCustomAlignment) {
  TempDir dir;
  const auto p = dir.file("v2.gguf");
  {
    Writer w(p, {{"general.alignment", Value::u32(128)}}, {{"x", {3}, QType::F32}, {"y", {1}, QType::I8}}, 2);
    const float x[3] = {1, 2, 3};
    w.write_tensor_data(x, sizeof(x));
    const int8_t y = -5;
    w.write_tensor_data(&y, 1);
    w.finish();
  }
  const auto bytes = read_bytes(p);
  uint32_t version;
  std::memcpy(&version, bytes.data() + 4, 4);
  EXPECT_EQ(version, 2u);
  File f = File::open(p);
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.alignment(), 128u);
  EXPECT_EQ(f.data_offset() % 128, 0u);
  EXPECT_EQ(f.tensor("y").offset, 128u);
  EXPECT_EQ(*(const int8_t*)f.tensor_data(f.tensor("y")), -5);
  EXPECT_EQ(f.file_size(), f.data_offset() + 256u);
}

TEST(GgufWriter, NoTensorsMeansNoPadding) {
  TempDir dir;
  const auto p = dir.file("vocab.gguf");
  {
    Writer w(p, {{"k", Value::u8(1)}}, {});
    w.finish();
  }
  // 24-byte header + key (8 + 1) + type (4) + value (1), no padding after the metadata.
  EXPECT_EQ(read_bytes(p).size(), 24u + 9u + 4u + 1u);
  File f = File::open(p);
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.tensor_bytes(), 0u);
}

TEST(GgufWriter, DescribeShowsMetadataAndTensors) {
  TempDir dir;
  const auto p = dir.file("d.gguf");
  std::vector<std::string> many;
  for (int i = 0; i < 100; ++i) many.push_back("tok" + std::to_string(i));
  {
    Writer w(p, {{"general.architecture", Value::str("llama")}, {"tokenizer.ggml.tokens", Value::string_array(many)}},
             {{"token_embd.weight", {32, 4}, QType::Q8_0}});
    std::vector<uint8_t> d(w.tensor_bytes(0));
    w.write_tensor_data(d.data(), d.size());
    w.finish();
  }
  const std::string s = describe(File::open(p), 3);
  EXPECT_HAS(s, "architecture llama");
  EXPECT_HAS(s, "[STRING x 100] [\"tok0\", \"tok1\", \"tok2\", ... +97 more]");
  EXPECT_EQ(s.find("tok3"), std::string::npos) << "array not abbreviated";
  EXPECT_HAS(s, "token_embd.weight");
  EXPECT_HAS(s, "Q8_0");
  EXPECT_HAS(s, "[32, 4]");
  EXPECT_HAS(s, "136");  // 4 rows x 34 bytes
}
