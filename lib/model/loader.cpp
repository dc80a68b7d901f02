#include "model/loader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

}  // namespace memra::model
