#pragma once
// Streaming GGUF writer: metadata and tensor infos are written first, then tensor data is
// streamed tensor by tensor in declaration order (never the whole model in RAM).
// Writing back what File read (same metadata order, same tensors and alignment) reproduces the
// original bytes of files laid out the usual way (llama.cpp / gguf-py): tensor data in
// declaration order, each tensor padded to the alignment (the last one too), and no padding at
// all after the metadata of a file without tensors. Every file under ../shared/models is.
// The constructor validates its input (duplicate keys or names, alignment, dims, block
// multiples, array item types) and writes the header; a Writer destroyed before finish()
// succeeded removes its incomplete file.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace memra::gguf {

struct TensorDecl {
  std::string name;
  std::vector<uint64_t> ne;
  QType type;
};

class Writer {
 public:
  // version 3 by default; alignment taken from general.alignment in `kv` when present, else 32.
  // With hash, every byte written also goes through SHA-256 (in the writing thread): sha256_hex()
  // is the file's digest once finished, without reading it back.
  Writer(const std::string& path, std::vector<KeyValue> kv, std::vector<TensorDecl> tensors,
         uint32_t version = 3, bool hash = false);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Size in bytes each declared tensor must receive.
  uint64_t tensor_bytes(size_t i) const;
  // Append the data of the next tensor (in declaration order); may be called several times
  // per tensor with consecutive chunks. Throws when more bytes arrive than declared.
  void write_tensor_data(const void* data, size_t n);
  // Pads, checks that every tensor received exactly its bytes, closes. Throws on I/O error.
  void finish();
  // The finished file's SHA-256 (hex); only for a writer constructed with hash.
  std::string sha256_hex() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Re-write a whole file (metadata, tensors and data) to `out_path`; used by round-trip tests.
void rewrite(const File& f, const std::string& out_path);

}  // namespace memra::gguf
