#pragma once
// Decode-step graph bookkeeping, kept free of CUDA types so its rules are unit-tested on the CPU
// (tests/backend_cuda/test_step_graph.cpp).
//
// A captured step bakes in every device address its kernels touch. Weights and backend-owned
// workspaces never move while a graph exists (grown workspaces are retired, not freed, until the
// graphs are dropped); what may differ between two forwards is the caller's memory: the model
// (its weights), its scratch, its logits view and the kv store. StepKey is exactly that set, plus
// the weight generation (bumped whenever a weight is freed, so a new model at a recycled address
// never matches an old graph) and the kv store's serial (never an address, for the same reason).
//
// Policy: only single-token steps are graphed (prefill shapes vary and run once). The first step
// at a key runs eagerly (it sizes every workspace, so no allocation happens under capture and a
// failing op shows its own error); the second captures and launches; later ones replay.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memra::cuda {

struct StepKey {
  const void* owner = nullptr;
  const void* scratch = nullptr;
  const void* logits = nullptr;
  int64_t logits_rows = 0, logits_cols = 0, logits_ld = 0;
  uint64_t kv_serial = 0;
  uint64_t weight_gen = 0;
  int n_tokens = 0;
  int attn_head_split = 0;  // query heads per attention block (kernels.attn_head_split_keys / attn_head_pair_keys)
  bool attn_one_split = false;  // every row one split, no combine launch (kernels.attn_one_split_no_combine)
  int64_t attn_grid = 0;  // the decode attention's trimmed grid (kernels.attn_grid_round; cuda::attn_decode_grid_key)
  bool operator==(const StepKey&) const = default;
};

enum class StepMode { Eager, Capture, Replay };

// have_graph: a graph for this key exists; seen: a step at this key already ran (eagerly).
inline StepMode choose_step_mode(bool graphs_enabled, int n_tokens, bool have_graph, bool seen) {
  if (!graphs_enabled || n_tokens != 1) return StepMode::Eager;
  if (have_graph) return StepMode::Replay;
  return seen ? StepMode::Capture : StepMode::Eager;
}

// A small most-recently-used list of (key, value): a speculative decoder alternates two models,
// so more than one graph is live; the oldest beyond `cap` is evicted (returned to the caller,
// which destroys it).
template <class V>
class StepCache {
 public:
  explicit StepCache(size_t cap) : cap_(cap) {}
  V* find(const StepKey& k) {
    for (size_t i = 0; i < items_.size(); ++i)
      if (items_[i].first == k) {
        if (i + 1 != items_.size()) {
          auto it = std::move(items_[i]);
          items_.erase(items_.begin() + (std::ptrdiff_t)i);
          items_.push_back(std::move(it));
        }
        return &items_.back().second;
      }
    return nullptr;
  }
  // Inserts (replacing an equal key's value); returns the evicted values.
  std::vector<V> insert(const StepKey& k, V v) {
    std::vector<V> out;
    for (size_t i = 0; i < items_.size(); ++i)
      if (items_[i].first == k) {
        out.push_back(std::move(items_[i].second));
        items_.erase(items_.begin() + (std::ptrdiff_t)i);
        break;
      }
    items_.emplace_back(k, std::move(v));
    while (items_.size() > cap_) {
      out.push_back(std::move(items_.front().second));
      items_.erase(items_.begin());
    }
    return out;
  }
  // Removes everything; returns the values.
  std::vector<V> clear() {
    std::vector<V> out;
    for (auto& it : items_) out.push_back(std::move(it.second));
    items_.clear();
    return out;
  }
  size_t size() const { return items_.size(); }

 private:
  size_t cap_;
  std::vector<std::pair<StepKey, V>> items_;
};

// Keys that ran eagerly once (the "seen" set), bounded like the cache.
class SeenKeys {
 public:
  explicit SeenKeys(size_t cap) : cap_(cap) {}
  bool contains(const StepKey& k) const {
    for (const auto& x : keys_)
      if (x == k) return true;
    return false;
  }
  void add(const StepKey& k) {
    if (contains(k)) return;
    keys_.push_back(k);
    if (keys_.size() > cap_) keys_.erase(keys_.begin());
  }
  void clear() { keys_.clear(); }

 private:
  size_t cap_;
  std::vector<StepKey> keys_;
};

}  // namespace memra::cuda
