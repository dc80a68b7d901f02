#include "model/loader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace memra::model {

std::string shape_str(const std::vector<int64_t>& ne) { return fmt::format("[{}]", fmt::join(ne, ", ")); }

const backend::Weight& WeightLoader::get(const std::string& name, std::vector<int64_t> ne) {
  const auto* w = find(name, ne);
  MEMRA_CHECK(w, "model '{}' ({}): missing tensor '{}' (expected shape {})", file_->path(), arch_,
              name, shape_str(ne));
  return *w;
}

const backend::Weight* WeightLoader::find(const std::string& name, std::vector<int64_t> ne) {
  for (const auto& w : weights_)
    if (w.name == name) return &w;
  const auto* t = file_->find_tensor(name);
  if (!t) return nullptr;
  std::vector<int64_t> actual(t->ne.begin(), t->ne.end());
  MEMRA_CHECK(actual == ne, "model '{}' ({}): tensor '{}' has shape {}, expected {}", file_->path(),
              arch_, name, shape_str(actual), shape_str(ne));
  const uint8_t* data = file_->tensor_data(*t);
  // The mapping lives as long as the File; the aliasing shared_ptr keeps it alive for the
  // weight without copying on host backends.
  std::shared_ptr<const void> keep(file_, data);
  weights_.push_back(be_.upload_weight(name, t->type, actual, data, std::move(keep)));
  bytes_ += t->n_bytes;
  return &weights_.back();
}

const backend::Weight& WeightLoader::get_rows_permuted(const std::string& name, std::vector<int64_t> ne,
                                                       const std::vector<int64_t>& rows) {
  for (const auto& w : weights_)
    MEMRA_CHECK(w.name != name, "internal: tensor '{}' loaded twice", name);
  const auto* t = file_->find_tensor(name);
  MEMRA_CHECK(t, "model '{}' ({}): missing tensor '{}' (expected shape {})", file_->path(), arch_, name,
              shape_str(ne));
  std::vector<int64_t> actual(t->ne.begin(), t->ne.end());
  MEMRA_CHECK(actual == ne, "model '{}' ({}): tensor '{}' has shape {}, expected {}", file_->path(), arch_, name,
              shape_str(actual), shape_str(ne));
  const uint64_t n_rows = t->rows(), row_bytes = t->n_bytes / std::max<uint64_t>(n_rows, 1);
  MEMRA_CHECK(rows.size() == n_rows, "internal: {} row indices for the {} rows of '{}'", rows.size(), n_rows, name);
  const uint8_t* src = file_->tensor_data(*t);
  auto copy = std::make_shared<std::vector<uint8_t>>(t->n_bytes);
  for (size_t i = 0; i < rows.size(); ++i) {
    MEMRA_CHECK(rows[i] >= 0 && (uint64_t)rows[i] < n_rows, "internal: row index {} out of range", rows[i]);
    std::memcpy(copy->data() + i * row_bytes, src + (uint64_t)rows[i] * row_bytes, row_bytes);
  }
  const uint8_t* data = copy->data();
  std::shared_ptr<const void> keep(copy, data);
  weights_.push_back(be_.upload_weight(name, t->type, actual, data, std::move(keep)));
  bytes_ += t->n_bytes;
  return weights_.back();
}

}  // namespace memra::model
