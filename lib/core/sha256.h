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
  void blocks(const uint8_t* p, size_t n);  // n whole 64-byte blocks
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);

namespace sha256_detail {  // the two block functions, for tests and benchmarks
void blocks_portable(uint32_t h[8], const uint8_t* p, size_t n);
void blocks_shani(uint32_t h[8], const uint8_t* p, size_t n);  // only where shani_available()
bool shani_available();  // x86-64 with the SHA extensions (and SSSE3 / SSE4.1)
}  // namespace sha256_detail
// Hash of a file's bytes (streams it; throws memra::Error when unreadable).
std::string sha256_file_hex(const std::string& path);

}  // namespace memra
