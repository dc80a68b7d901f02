#include "core/parallel.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace memra {

struct ThreadPool::Impl {
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable cv_work, cv_done;
  const std::function<void(size_t, size_t)>* fn = nullptr;
  size_t n = 0, chunk = 0, n_chunks = 0, next = 0, done = 0;
  uint64_t generation = 0;
  bool stop = false;
  std::exception_ptr error;

  void run_chunks(std::unique_lock<std::mutex>& lk) {
    while (next < n_chunks) {
      const size_t c = next++;
      lk.unlock();
      const size_t b = c * chunk, e = std::min(n, b + chunk);
      std::exception_ptr err;
      try {
        (*fn)(b, e);
      } catch (...) {
        err = std::current_exception();
      }
      lk.lock();
      if (err && !error) error = err;
      if (++done == n_chunks) cv_done.notify_all();
    }
  }
};

ThreadPool::ThreadPool(int n_threads) : impl_(std::make_unique<Impl>()) {
  if (n_threads <= 0) n_threads = (int)std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < n_threads; ++i) {
    impl_->workers.emplace_back([this] {
      Impl& s = *impl_;
      uint64_t seen = 0;
      std::unique_lock<std::mutex> lk(s.mu);
      for (;;) {
        s.cv_work.wait(lk, [&] { return s.stop || s.generation != seen; });
        if (s.stop) return;
        seen = s.generation;
        s.run_chunks(lk);
      }
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv_work.notify_all();
  for (auto& t : impl_->workers) t.join();
}

int ThreadPool::size() const { return (int)impl_->workers.size() + 1; }

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t min_chunk) {
  if (n == 0) return;
  const size_t threads = (size_t)size();
  size_t chunk = std::max(min_chunk, (n + threads - 1) / threads);
  if (threads == 1 || chunk >= n) {
    fn(0, n);
    return;
  }
  Impl& s = *impl_;
  std::unique_lock<std::mutex> lk(s.mu);
  s.fn = &fn;
  s.n = n;
  s.chunk = chunk;
  s.n_chunks = (n + chunk - 1) / chunk;
  s.next = 0;
  s.done = 0;
  s.error = nullptr;
  ++s.generation;
  s.cv_work.notify_all();
  s.run_chunks(lk);
  s.cv_done.wait(lk, [&] { return s.done == s.n_chunks; });
  s.fn = nullptr;
  if (s.error) std::rethrow_exception(s.error);
}

}  // namespace memra
