#pragma once
// A small fixed thread pool: parallel_for splits [0, n) into contiguous chunks, one per worker.
// Deterministic: each index is processed by exactly one call and results are written by index,
// so outputs never depend on the thread count.
#include <cstddef>
#include <functional>
#include <memory>

namespace memra {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads <= 0: hardware concurrency
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;
  // fn(begin, end) over disjoint chunks covering [0, n). Exceptions are rethrown in the caller.
  void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t min_chunk = 1);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memra
