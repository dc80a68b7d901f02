#pragma once
// Shared helpers for the tokenizer tests: locating ../shared, loading and caching vocabularies.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace memra::tok::test {

inline std::filesystem::path shared_dir() { return MEMRA_SHARED_DIR; }
inline bool have_shared() { return std::filesystem::exists(shared_dir() / "models" / "vocab"); }

#define MEMRA_REQUIRE_SHARED()                                                         \
  do {                                                                                 \
    if (!::memra::tok::test::have_shared())                                            \
      GTEST_SKIP() << "shared fixtures not found at " << MEMRA_SHARED_DIR              \
                   << " (models/vocab); these tests compare against llama.cpp outputs"; \
  } while (0)

// Tokenizers keyed by path relative to shared/models, loaded once per test binary.
inline const Tokenizer& vocab(const std::string& rel) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(rel);
  if (it == cache.end()) {
    const auto f = gguf::File::open((shared_dir() / "models" / rel).string());
    it = cache.emplace(rel, std::make_unique<Tokenizer>(Tokenizer::from_gguf(f))).first;
  }
  return *it->second;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t i : ids) {
    if (!s.empty()) s.push_back(' ');
    s.append(std::to_string(i));
  }
  return s;
}

}  // namespace memra::tok::test
