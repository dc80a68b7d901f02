#pragma once
// Uploads named GGUF tensors to a backend after checking their shapes; every failure names the
// tensor, the expected and the actual shape.
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gguf/gguf.h"

namespace memra::model {

class WeightLoader {
 public:
  WeightLoader(std::shared_ptr<const gguf::File> file, backend::Backend& be, std::string arch)
      : file_(std::move(file)), be_(be), arch_(std::move(arch)) {}

  // Required tensor with exactly this shape (ggml order, ne[0] first).
  const backend::Weight& get(const std::string& name, std::vector<int64_t> ne);
  // Optional tensor: nullptr when absent; a present tensor of the wrong shape is still an error.
  const backend::Weight* find(const std::string& name, std::vector<int64_t> ne);
  // Required tensor whose rows (ne[0] elements each) are uploaded in the order rows[i] = source
  // row of uploaded row i (a host copy; the values of each row are unchanged).
  const backend::Weight& get_rows_permuted(const std::string& name, std::vector<int64_t> ne,
                                           const std::vector<int64_t>& rows);
  bool has(const std::string& name) const { return file_->find_tensor(name) != nullptr; }
  const gguf::File& file() const { return *file_; }

  // Bytes uploaded so far.
  uint64_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<const gguf::File> file_;
  backend::Backend& be_;
  std::string arch_;
  std::deque<backend::Weight> weights_;  // stable addresses
  uint64_t bytes_ = 0;

 public:
  // Weights stay valid while the loader lives; models keep it as a member.
  const std::deque<backend::Weight>& weights() const { return weights_; }
};

std::string shape_str(const std::vector<int64_t>& ne);

}  // namespace memra::model
