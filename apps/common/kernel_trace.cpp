#include "kernel_trace.h"

#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#ifdef MEMRA_HAVE_CUPTI
#include <cupti_activity.h>
#endif

namespace memra::app {

std::string short_kernel_name(const std::string& demangled) {
  std::string s = demangled;
  for (const std::string pre : {"memra::cuda::", "(anonymous namespace)::", "void "}) {
    for (size_t p = s.find(pre); p != std::string::npos; p = s.find(pre)) s.erase(p, pre.size());
  }
  // Drop the parameter list: the last top-level '(' .. ')'.
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (s[i] == '(' && depth == 0 && i > 0) return s.substr(0, i);
  }
  return s;
}

TraceSummary summarize_trace(const std::vector<KernelRecord>& recs, int steps, bool by_grid) {
  TraceSummary t;
  if (recs.empty() || steps <= 0) return t;
  std::vector<KernelRecord> r = recs;
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  struct Acc {
    double n = 0, dur = 0, exposed = 0;
  };
  std::map<std::string, Acc> acc;
  uint64_t covered_to = r.front().start_ns;
  double busy = 0;
  for (const auto& k : r) {
    const uint64_t s = std::max(k.start_ns, covered_to);
    const double exposed = k.end_ns > s ? (double)(k.end_ns - s) : 0.0;
    covered_to = std::max(covered_to, k.end_ns);
    busy += exposed;
    auto& a = acc[by_grid ? short_kernel_name(k.name) + " [" + std::to_string(k.grid) + "]" : short_kernel_name(k.name)];
    a.n += 1;
    a.dur += (double)(k.end_ns - k.start_ns);
    a.exposed += exposed;
  }
  const double wall = (double)(covered_to - r.front().start_ns);
  t.wall_us_per_step = wall / 1e3 / steps;
  t.busy_us_per_step = busy / 1e3 / steps;
  t.idle_us_per_step = (wall - busy) / 1e3 / steps;
  t.kernels_per_step = (int)(r.size() / (size_t)steps);
  for (const auto& [name, a] : acc)
    t.kinds.push_back({name, a.n / steps, a.dur / a.n / 1e3, a.exposed / 1e3 / steps});
  std::sort(t.kinds.begin(), t.kinds.end(),
            [](const auto& a, const auto& b) { return a.exposed_us_per_step > b.exposed_us_per_step; });
  return t;
}

#ifdef MEMRA_HAVE_CUPTI
namespace {

// The CUPTI entry points, resolved from libcupti at run time.
struct Cupti {
  void* lib = nullptr;
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*flush_all)(uint32_t) = nullptr;
  CUptiResult (*next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*timestamp)(uint64_t*) = nullptr;
};

Cupti& cupti() {
  static Cupti c;
  return c;
}

std::mutex g_mu;
std::vector<KernelRecord> g_recs;

std::string demangle(const char* n) {
  if (!n) return "?";
  int st = 0;
  char* d = abi::__cxa_demangle(n, nullptr, nullptr, &st);
  std::string s = (st == 0 && d) ? d : n;
  std::free(d);
  return s;
}

constexpr size_t kBuf = 8 << 20;

void CUPTIAPI buffer_requested(uint8_t** buf, size_t* size, size_t* max_records) {
  *buf = static_cast<uint8_t*>(std::aligned_alloc(8, kBuf));
  *size = *buf ? kBuf : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lk(g_mu);
  while (cupti().next_record(buf, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    KernelRecord r;
    r.name = demangle(k->name);
    r.start_ns = k->start;
    r.end_ns = k->end;
    r.stream = k->streamId;
    r.graph_node = k->graphNodeId;
    r.grid = k->gridX * k->gridY * k->gridZ;
    g_recs.push_back(std::move(r));
  }
  std::free(buf);
}

template <class F>
bool sym(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

}  // namespace

std::unique_ptr<KernelTrace> KernelTrace::start(std::string* why) {
  auto& c = cupti();
  if (!c.lib) {
    c.lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!c.lib) {
      if (why) *why = std::string("cannot load libcupti.so.13 (") + dlerror() + ")";
      return nullptr;
    }
    if (!sym(c.lib, "cuptiActivityRegisterCallbacks", c.register_callbacks) || !sym(c.lib, "cuptiActivityEnable", c.enable) ||
        !sym(c.lib, "cuptiActivityDisable", c.disable) || !sym(c.lib, "cuptiActivityFlushAll", c.flush_all) ||
        !sym(c.lib, "cuptiActivityGetNextRecord", c.next_record) || !sym(c.lib, "cuptiGetTimestamp", c.timestamp)) {
      if (why) *why = "libcupti.so.13 lacks the activity API";
      dlclose(c.lib);
      c.lib = nullptr;
      return nullptr;
    }
    if (c.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
      if (why) *why = "cuptiActivityRegisterCallbacks failed";
      return nullptr;
    }
  }
  {
    std::lock_guard<std::mutex> lk(g_mu);
    g_recs.clear();
  }
  if (c.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    if (why) *why = "cuptiActivityEnable(CONCURRENT_KERNEL) failed";
    return nullptr;
  }
  std::unique_ptr<KernelTrace> t(new KernelTrace());
  t->active_ = true;
  // Records of kernels that ran before this point could still arrive in this trace's buffers (work
  // in flight when it started): stop() leaves them out by this time.
  if (c.timestamp(&t->t0_ns_) != CUPTI_SUCCESS) t->t0_ns_ = 0;
  return t;
}

std::vector<KernelRecord> KernelTrace::stop() {
  if (!active_) return {};
  active_ = false;
  auto& c = cupti();
  c.flush_all(1);
  c.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  c.flush_all(1);
  std::lock_guard<std::mutex> lk(g_mu);
  std::vector<KernelRecord> out;
  for (auto& r : g_recs)
    if (r.start_ns >= t0_ns_) out.push_back(std::move(r));
  g_recs.clear();
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  return out;
}

#else

std::unique_ptr<KernelTrace> KernelTrace::start(std::string* why) {
  if (why) *why = "this build has no CUPTI headers (scripts/bootstrap.sh installs them under /opt/memra-deps/cupti)";
  return nullptr;
}
std::vector<KernelRecord> KernelTrace::stop() { return {}; }

#endif

KernelTrace::~KernelTrace() {
  if (active_) stop();
}

}  // namespace memra::app
