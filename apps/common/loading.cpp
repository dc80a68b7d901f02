#include "loading.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "common/backend_select.h"
#include "core/error.h"
#include "kv/kv.h"

namespace memra::app {

namespace {

// Below this a load is over before anyone wonders; above it a first run reads from disk (or a
// shared, busy machine pages it in) for long enough that a silent terminal looks hung.
constexpr uint64_t kProgressBytes = 64ull << 20;

// Touches one byte per page of every tensor so the mapping is read in here, where progress can
// be shown, instead of inside the first matmuls (host backends borrow the mapping) or an opaque
// upload (device backends).
void fault_in_with_progress(const gguf::File& f) {
  const uint64_t total = f.tensor_bytes();
  if (total < kProgressBytes) return;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const int step = tty ? 1 : 25;  // percent between updates; a log file gets a few lines only
  uint64_t done = 0;
  int shown = -step;
  volatile uint8_t sink = 0;
  auto report = [&](uint64_t at) {
    const int pct = (int)(at * 100 / total);
    if (pct < shown + step && at != total) return;
    shown = pct;
    std::fprintf(stderr, "%sloading %s: %3d%% of %.0f MiB%s", tty ? "\r" : "", f.path().c_str(), pct,
                 total / 1048576.0, tty ? "" : "\n");
    std::fflush(stderr);
  };
  for (const auto& t : f.tensors()) {
    const uint8_t* p = f.tensor_data(t);
    for (uint64_t off = 0; off < t.n_bytes; off += 4096) {
      sink = sink + p[off];
      if ((off & ((4u << 20) - 1)) == 0) report(done + off);  // every 4 MiB: big tensors move the bar too
    }
    done += t.n_bytes;
  }
  report(total);
  if (tty) std::fputc('\n', stderr);
}

}  // namespace

Loaded load_session(Context& ctx, std::shared_ptr<const gguf::File> file, const std::string& metrics_prefix) {
  const auto& cfg = ctx.cfg;
  const auto t0 = std::chrono::steady_clock::now();
  Loaded l;
  l.backend = make_backend(cfg, &l.backend_name);
  fault_in_with_progress(*file);
  engine::SessionOptions so;
  so.kv = kv_options(cfg, l.backend_name, cfg.run.n_ctx);
  l.session = std::make_unique<engine::Session>(std::move(file), *l.backend, so);
  ctx.receipt.wait_model_hash();  // (started by main: it read the file beside the load)
  l.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto& m = ctx.receipt.metrics();
  const std::string& p = metrics_prefix;
  m[p + "backend"] = l.backend_name;
  m[p + "load_ms"] = l.load_ms;
  m[p + "n_ctx"] = cfg.run.n_ctx;
  // The cache as the backend made it (kv.planes = auto resolves there).
  const kv::KvOptions& ko = l.session->kv_options();
  m[p + "kv_type_k"] = std::string(qtype_name(ko.type_k));
  m[p + "kv_type_v"] = std::string(qtype_name(ko.type_v));
  m[p + "kv_planes"] = ko.planes;
  m[p + "weight_bytes"] = l.session->model().weight_bytes();
  return l;
}

}  // namespace memra::app
