// Each validation error class: the message must name the file and the problem.
#include <limits>

#include "gguf/writer.h"
#include "helpers.h"

using namespace memra;
using namespace memra::gguf;
using namespace memra::gguf::test;

namespace {

constexpr uint32_t kF32 = 0, kQ4_0 = 2, kF64 = 28;

// A valid base: one string key, one F32 tensor of 8 elements.
Raw valid_one_tensor() {
  Raw r;
  r.header(1, 1).kv_str("general.architecture", "llama").tensor("w", {8}, kF32, 0).pad().zeros(32);
  return r;
}

#define EXPECT_PARSE_ERROR(bytes, ...)                                    \
  do {                                                                    \
    const std::string msg_ = parse_error(bytes);                          \
    EXPECT_HAS(msg_, "t.gguf"); /* the message must name the file */ \
    for (const char* s_ : {__VA_ARGS__}) EXPECT_HAS(msg_, (s_)); \
  } while (0)

}  // namespace

TEST(GgufValidation, BaseImageIsValid) {
  EXPECT_EQ(parse_error(valid_one_tensor().b), "");
}

TEST(GgufValidation, BadMagic) {
  auto b = valid_one_tensor().b;
  b[0] = 'X';
  EXPECT_PARSE_ERROR(b, "not a GGUF file", "magic", "XGUF");
}

TEST(GgufValidation, Version1Rejected) {
  Raw r;
  r.header(0, 0, 1);
  EXPECT_PARSE_ERROR(r.b, "version 1 is not supported");
}

TEST(GgufValidation, UnknownVersionRejected) {
  Raw r;
  r.header(0, 0, 4);
  EXPECT_PARSE_ERROR(r.b, "unsupported GGUF version 4");
}

TEST(GgufValidation, BigEndianRejected) {
  Raw r;
  r.header(0, 0, 0x03000000u);
  EXPECT_PARSE_ERROR(r.b, "big-endian");
}

TEST(GgufValidation, Version2Accepted) {
  Raw r;
  r.header(0, 1, 2).kv_u32("a.b", 7);
  File f = File::parse(r.b.data(), r.b.size(), "t.gguf");
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.get_int("a.b"), 7);
}

TEST(GgufValidation, EmptyAndTruncatedHeader) {
  EXPECT_PARSE_ERROR(std::vector<uint8_t>{}, "truncated", "0 bytes");
  Raw r;
  r.header(0, 0);
  r.b.resize(10);
  EXPECT_PARSE_ERROR(r.b, "truncated", "tensor count");
}

TEST(GgufValidation, CountsBeyondFile) {
  Raw a;
  a.header(std::numeric_limits<uint64_t>::max(), 0);
  EXPECT_PARSE_ERROR(a.b, "tensor count", "cannot fit");
  Raw b;
  b.header(0, 1ull << 40);
  EXPECT_PARSE_ERROR(b.b, "key/value count", "cannot fit");
}

TEST(GgufValidation, StringLengthBeyondFile) {
  Raw r;
  r.header(0, 1).u64(1ull << 62);  // key length
  r.zeros(16);
  EXPECT_PARSE_ERROR(r.b, "string length", "exceeds");
  Raw v;  // string value longer than the file, length close to 2^64 (no overflow on add)
  v.header(0, 1).str("k").u32(8).u64(std::numeric_limits<uint64_t>::max()).zeros(4);
  EXPECT_PARSE_ERROR(v.b, "metadata key 'k'", "string length", "exceeds");
}

TEST(GgufValidation, ArrayCountBeyondFile) {
  Raw r;  // 2^61 u32 items claimed; would be a huge allocation if trusted
  r.header(0, 1).str("k").u32(9).u32(4).u64(1ull << 61).zeros(64);
  EXPECT_PARSE_ERROR(r.b, "metadata key 'k'", "array count", "cannot fit");
  Raw s;  // string array: each item needs at least 8 bytes
  s.header(0, 1).str("k").u32(9).u32(8).u64(9).zeros(64);
  EXPECT_PARSE_ERROR(s.b, "array count 9", "cannot fit");
}

TEST(GgufValidation, UnknownValueTypes) {
  Raw r;
  r.header(0, 1).str("k").u32(13).zeros(8);
  EXPECT_PARSE_ERROR(r.b, "metadata key 'k'", "unknown value type 13");
  Raw a;
  a.header(0, 1).str("k").u32(9).u32(99).u64(0);
  EXPECT_PARSE_ERROR(a.b, "unknown array element type 99");
}

TEST(GgufValidation, InvalidBool) {
  Raw r;
  r.header(0, 1).str("k").u32(7).put<uint8_t>(2);
  EXPECT_PARSE_ERROR(r.b, "BOOL", "must be 0 or 1");
}

TEST(GgufValidation, EmptyKey) {
  Raw r;
  r.header(0, 1).str("").u32(4).u32(1);
  EXPECT_PARSE_ERROR(r.b, "metadata key #0", "empty");
}

TEST(GgufValidation, NestingTooDeep) {
  Raw r;
  r.header(0, 1).str("k").u32(9);
  for (int i = 0; i < 20; ++i) r.u32(9).u64(1);
  r.u32(4).u64(0);
  EXPECT_PARSE_ERROR(r.b, "nested deeper");
}

TEST(GgufValidation, DuplicateKey) {
  Raw r;
  r.header(0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2);
  EXPECT_PARSE_ERROR(r.b, "duplicate metadata key 'a.b'");
}

TEST(GgufValidation, Alignment) {
  for (uint32_t bad : {0u, 3u, 48u}) {
    Raw r;
    r.header(0, 1).kv_u32("general.alignment", bad);
    EXPECT_PARSE_ERROR(r.b, "general.alignment", "power of two");
  }
  Raw t;
  t.header(0, 1).kv_str("general.alignment", "32");
  EXPECT_PARSE_ERROR(t.b, "general.alignment must be UINT32", "STRING");
  Raw ok;  // 64-byte alignment moves the data section and the offset rule
  ok.header(1, 1).kv_u32("general.alignment", 64).tensor("w", {16}, kF32, 0).pad(64).zeros(64);
  File f = File::parse(ok.b.data(), ok.b.size(), "t.gguf");
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
}

TEST(GgufValidation, NDims) {
  for (uint32_t nd : {0u, 5u}) {
    Raw r;
    r.header(1, 0).str("w").u32(nd);
    for (uint32_t i = 0; i < nd; ++i) r.u64(1);
    r.u32(kF32).u64(0).pad().zeros(32);
    EXPECT_PARSE_ERROR(r.b, "tensor 'w'", "n_dims", "must be 1..4");
  }
}

TEST(GgufValidation, ZeroAndOverflowingDims) {
  Raw z;
  z.header(1, 0).tensor("w", {8, 0}, kF32, 0).pad().zeros(64);
  EXPECT_PARSE_ERROR(z.b, "tensor 'w'", "ne[1] is zero");
  Raw big;
  big.header(1, 0).tensor("w", {1ull << 63}, kF32, 0).pad().zeros(64);
  EXPECT_PARSE_ERROR(big.b, "tensor 'w'", "overflows int64");
  Raw prod;
  prod.header(1, 0).tensor("w", {1ull << 32, 1ull << 32}, kF32, 0).pad().zeros(64);
  EXPECT_PARSE_ERROR(prod.b, "tensor 'w'", "element count overflows");
  Raw bytes;  // 2^62 F64 elements fit int64, their 2^65 bytes do not fit uint64
  bytes.header(1, 0).tensor("w", {1ull << 62}, kF64, 0).pad().zeros(64);
  EXPECT_PARSE_ERROR(bytes.b, "tensor 'w'", "byte size overflows");
}

TEST(GgufValidation, UnknownTensorTypeNamesTensorAndId) {
  for (uint32_t id : {4u, 31u, 99u, 4095u}) {
    Raw r;
    r.header(1, 0).tensor("blk.0.attn_q.weight", {32}, id, 0).pad().zeros(128);
    const std::string want = fmt::format("unknown tensor type id {}", id);
    EXPECT_PARSE_ERROR(r.b, "tensor 'blk.0.attn_q.weight'", want.c_str());
  }
}

TEST(GgufValidation, RowNotMultipleOfBlock) {
  Raw r;
  r.header(1, 0).tensor("w", {33, 2}, kQ4_0, 0).pad().zeros(128);
  EXPECT_PARSE_ERROR(r.b, "tensor 'w'", "ne[0] = 33", "not a multiple of the Q4_0 block size 32");
}

TEST(GgufValidation, UnalignedOffset) {
  Raw r;
  r.header(1, 0).tensor("w", {8}, kF32, 4).pad().zeros(64);
  EXPECT_PARSE_ERROR(r.b, "tensor 'w'", "data offset 4 is not a multiple of the alignment 32");
}

TEST(GgufValidation, TensorPastEndOfFile) {
  auto b = valid_one_tensor().b;
  b.resize(b.size() - 1);  // 32 bytes of data needed, 31 present
  EXPECT_PARSE_ERROR(b, "truncated data", "tensor 'w'", "holds only 31 bytes");
  Raw far;
  far.header(1, 0).tensor("w", {8}, kF32, 1ull << 40).pad().zeros(32);
  EXPECT_PARSE_ERROR(far.b, "truncated data", "tensor 'w'");
  Raw wrap;  // offset + bytes wraps around 2^64
  wrap.header(1, 0).tensor("w", {8}, kF32, std::numeric_limits<uint64_t>::max() - 31).pad().zeros(32);
  EXPECT_PARSE_ERROR(wrap.b, "tensor 'w'");
}

TEST(GgufValidation, DataSectionMissing) {
  Raw r;  // infos end mid-way to the aligned data offset: the data section start is beyond EOF
  r.header(1, 0).tensor("w", {8}, kF32, 0);
  EXPECT_PARSE_ERROR(r.b, "truncated", "data section starts at offset 64");
}

TEST(GgufValidation, DuplicateTensorName) {
  Raw r;
  r.header(2, 0).tensor("w", {8}, kF32, 0).tensor("w", {8}, kF32, 32).pad().zeros(64);
  EXPECT_PARSE_ERROR(r.b, "duplicate tensor name 'w'");
}

TEST(GgufValidation, OverlappingTensors) {
  Raw r;
  r.header(2, 0).tensor("a", {16}, kF32, 0).tensor("b", {8}, kF32, 32).pad().zeros(128);
  EXPECT_PARSE_ERROR(r.b, "tensors 'a'", "'b'", "overlap");
}

TEST(GgufValidation, OpenMissingFileNamesPath) {
  try {
    File::open("/nonexistent/dir/model.gguf");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), ("/nonexistent/dir/model.gguf"));
  }
}

TEST(GgufValidation, TypedGetterErrors) {
  Raw r;
  r.header(0, 3).kv_u32("n", 5).kv_str("s", "x").str("neg").u32(5).put<int32_t>(-3);
  File f = File::parse(r.b.data(), r.b.size(), "t.gguf");
  auto msg = [&](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_HAS(msg([&] { f.get_int("missing.key"); }), ("missing metadata key 'missing.key'"));
  EXPECT_HAS(msg([&] { f.get_string("n"); }), ("key 'n'"));
  EXPECT_HAS(msg([&] { f.get_string("n"); }), ("expected a STRING value, found UINT32"));
  EXPECT_HAS(msg([&] { f.get_int("s"); }), ("expected an integer value, found STRING"));
  EXPECT_HAS(msg([&] { f.find("neg")->as_uint(); }), ("negative"));
  EXPECT_HAS(msg([&] { f.get_string_array("s"); }), ("expected an ARRAY value"));
  EXPECT_HAS(msg([&] { f.tensor("nope"); }), ("no tensor named 'nope'"));
  EXPECT_EQ(f.get_int("neg"), -3);
  EXPECT_EQ(f.get_float("n"), 5.0);  // integers widen to float
  EXPECT_FALSE(f.find_int("absent").has_value());
  EXPECT_EQ(f.find_string("s").value(), "x");
}

TEST(GgufValidation, WriterRejectsBadInput) {
  TempDir dir;
  const auto p = dir.file("w.gguf");
  auto msg = [&](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_HAS(msg([&] { Writer(p, {}, {{"a", {8}, QType::F32}, {"a", {8}, QType::F32}}); }),
              ("duplicate tensor name 'a'"));
  EXPECT_HAS(msg([&] { Writer(p, {{"k", Value::u8(1)}, {"k", Value::u8(2)}}, {}); }),
              ("duplicate metadata key 'k'"));
  EXPECT_HAS(msg([&] { Writer(p, {}, {{"q", {33}, QType::Q4_0}}); }),
              ("not a multiple of the Q4_0 block size 32"));
  EXPECT_HAS(msg([&] { Writer(p, {{"general.alignment", Value::u32(24)}}, {}); }),
              ("power of two"));
  EXPECT_HAS(msg([&] { Writer(p, {}, {}, 1); }), ("version 1"));
  EXPECT_HAS(msg([&] { Value::array(ValueType::UINT8, {Value::str("x")}); }),
              ("array item 0 is STRING"));
  EXPECT_HAS(msg([&] {
                Writer w(p, {}, {{"a", {8}, QType::F32}});
                const float x[9] = {};
                w.write_tensor_data(x, sizeof(x));
              }),
              ("more bytes of tensor data"));
  EXPECT_HAS(msg([&] {
                Writer w(p, {}, {{"a", {8}, QType::F32}});
                const float x[4] = {};
                w.write_tensor_data(x, sizeof(x));
                w.finish();
              }),
              ("tensor 'a' received 16 of its 32 bytes"));
  EXPECT_FALSE(fs::exists(p)) << "an unfinished writer must not leave a file behind";
}
