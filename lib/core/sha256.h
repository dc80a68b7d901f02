#pragma once
// SHA-256 (FIPS 180-4), streaming. Used for model and config hashes in receipts.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace memra {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::array<uint8_t, 32> finish();
  std::string finish_hex();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);
// Hash of a file's bytes (streams it; throws memra::Error when unreadable).
std::string sha256_file_hex(const std::string& path);

}  // namespace memra
