#pragma once
// Test helpers for lib/gguf: a temporary folder, whole-file reads, and a raw little-endian byte
// builder for hand-made (also deliberately malformed) GGUF images.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf.h"

// EXPECT_HAS(text, needle): the text contains the needle (prints the text when it does not).
#define EXPECT_HAS(text, needle)                                                     \
  do {                                                                               \
    const std::string t_ = (text);                                                   \
    const std::string n_ = (needle);                                                 \
    EXPECT_NE(t_.find(n_), std::string::npos) << "'" << n_ << "' not in: " << t_;    \
  } while (0)

namespace memra::gguf::test {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("memra_gguf_" + std::to_string(::getpid()) + "_" + (info ? info->name() : "x"));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<uint8_t> out(fs::file_size(path));
  in.read(reinterpret_cast<char*>(out.data()), (std::streamsize)out.size());
  EXPECT_EQ((size_t)in.gcount(), out.size()) << "short read of " << path;
  return out;
}

inline fs::path shared_dir() { return fs::path(MEMRA_SHARED_DIR); }

// Raw GGUF bytes, little-endian, written field by field.
struct Raw {
  std::vector<uint8_t> b;
  template <typename T>
  Raw& put(T x) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &x, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  Raw& u32(uint32_t x) { return put(x); }
  Raw& u64(uint64_t x) { return put(x); }
  Raw& str(const std::string& s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Raw& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  Raw& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  Raw& kv_str(const std::string& key, const std::string& v) { return str(key).u32(8).str(v); }
  Raw& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).u32((uint32_t)ne.size());
    for (auto d : ne) u64(d);
    return u32(type).u64(offset);
  }
  Raw& pad(size_t a = 32) {
    while (b.size() % a) b.push_back(0);
    return *this;
  }
  Raw& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
};

// Parses `bytes` and returns the error message, or "" when the image is valid.
inline std::string parse_error(const std::vector<uint8_t>& bytes, const std::string& name = "t.gguf") {
  try {
    File::parse(bytes.data(), bytes.size(), name);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace memra::gguf::test
