#include "pm_sampling.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#ifdef MEMRA_HAVE_CUPTI
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#endif

namespace memra::app {

#ifdef MEMRA_HAVE_CUPTI
namespace {

// The CUPTI entry points of PM sampling, resolved from libcupti at run time.
struct Api {
  void* lib = nullptr;
  CUptiResult (*result_string)(CUptiResult, const char**) = nullptr;
  CUptiResult (*prof_init)(CUpti_Profiler_Initialize_Params*) = nullptr;
  CUptiResult (*prof_deinit)(CUpti_Profiler_DeInitialize_Params*) = nullptr;
  CUptiResult (*chip_name)(CUpti_Device_GetChipName_Params*) = nullptr;
  CUptiResult (*availability)(CUpti_PmSampling_GetCounterAvailability_Params*) = nullptr;
  CUptiResult (*host_init)(CUpti_Profiler_Host_Initialize_Params*) = nullptr;
  CUptiResult (*host_deinit)(CUpti_Profiler_Host_Deinitialize_Params*) = nullptr;
  CUptiResult (*add_metrics)(CUpti_Profiler_Host_ConfigAddMetrics_Params*) = nullptr;
  CUptiResult (*config_size)(CUpti_Profiler_Host_GetConfigImageSize_Params*) = nullptr;
  CUptiResult (*config_image)(CUpti_Profiler_Host_GetConfigImage_Params*) = nullptr;
  CUptiResult (*evaluate)(CUpti_Profiler_Host_EvaluateToGpuValues_Params*) = nullptr;
  CUptiResult (*enable)(CUpti_PmSampling_Enable_Params*) = nullptr;
  CUptiResult (*disable)(CUpti_PmSampling_Disable_Params*) = nullptr;
  CUptiResult (*set_config)(CUpti_PmSampling_SetConfig_Params*) = nullptr;
  CUptiResult (*data_size)(CUpti_PmSampling_GetCounterDataSize_Params*) = nullptr;
  CUptiResult (*data_init)(CUpti_PmSampling_CounterDataImage_Initialize_Params*) = nullptr;
  CUptiResult (*start)(CUpti_PmSampling_Start_Params*) = nullptr;
  CUptiResult (*stop)(CUpti_PmSampling_Stop_Params*) = nullptr;
  CUptiResult (*decode)(CUpti_PmSampling_DecodeData_Params*) = nullptr;
  CUptiResult (*data_info)(CUpti_PmSampling_GetCounterDataInfo_Params*) = nullptr;
  CUptiResult (*sample_info)(CUpti_PmSampling_CounterData_GetSampleInfo_Params*) = nullptr;
};

// A zeroed parameter struct of CUPTI's with its size set (pPriv and every output null / zero).
template <class P>
P params(size_t struct_size) {
  P p;
  std::memset(&p, 0, sizeof p);
  p.structSize = struct_size;
  return p;
}

template <class F>
bool sym(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

// The API, loaded once; null with *why where libcupti or one of its entry points is missing.
const Api* api(std::string* why) {
  static Api a;
  static std::string err;
  static bool tried = false;
  if (!tried) {
    tried = true;
    // (the profiler's own libraries, loaded first through this executable's run path, so that
    // CUPTI's later loads of them by name find them; a missing one makes cuptiProfilerInitialize
    // or the host API fail and say so)
    for (const char* n : {"libnvperf_host.so", "libnvperf_target.so"}) (void)dlopen(n, RTLD_NOW | RTLD_GLOBAL);
    a.lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!a.lib) {
      err = std::string("cannot load libcupti.so.13 (") + dlerror() + ")";
    } else if (!sym(a.lib, "cuptiGetResultString", a.result_string) || !sym(a.lib, "cuptiProfilerInitialize", a.prof_init) ||
               !sym(a.lib, "cuptiProfilerDeInitialize", a.prof_deinit) || !sym(a.lib, "cuptiDeviceGetChipName", a.chip_name) ||
               !sym(a.lib, "cuptiPmSamplingGetCounterAvailability", a.availability) ||
               !sym(a.lib, "cuptiProfilerHostInitialize", a.host_init) || !sym(a.lib, "cuptiProfilerHostDeinitialize", a.host_deinit) ||
               !sym(a.lib, "cuptiProfilerHostConfigAddMetrics", a.add_metrics) ||
               !sym(a.lib, "cuptiProfilerHostGetConfigImageSize", a.config_size) ||
               !sym(a.lib, "cuptiProfilerHostGetConfigImage", a.config_image) ||
               !sym(a.lib, "cuptiProfilerHostEvaluateToGpuValues", a.evaluate) || !sym(a.lib, "cuptiPmSamplingEnable", a.enable) ||
               !sym(a.lib, "cuptiPmSamplingDisable", a.disable) || !sym(a.lib, "cuptiPmSamplingSetConfig", a.set_config) ||
               !sym(a.lib, "cuptiPmSamplingGetCounterDataSize", a.data_size) ||
               !sym(a.lib, "cuptiPmSamplingCounterDataImageInitialize", a.data_init) || !sym(a.lib, "cuptiPmSamplingStart", a.start) ||
               !sym(a.lib, "cuptiPmSamplingStop", a.stop) || !sym(a.lib, "cuptiPmSamplingDecodeData", a.decode) ||
               !sym(a.lib, "cuptiPmSamplingGetCounterDataInfo", a.data_info) ||
               !sym(a.lib, "cuptiPmSamplingCounterDataGetSampleInfo", a.sample_info)) {
      err = "libcupti.so.13 lacks the PM sampling or profiler host API";
      a.lib = nullptr;
    }
  }
  if (!a.lib) {
    if (why) *why = err;
    return nullptr;
  }
  return &a;
}

// false with *why = "<what>: <CUPTI's message>" unless r is CUPTI_SUCCESS.
bool ok(const Api& a, CUptiResult r, const char* what, std::string* why) {
  if (r == CUPTI_SUCCESS) return true;
  const char* s = nullptr;
  a.result_string(r, &s);
  if (why) *why = std::string(what) + ": " + (s ? s : "unknown CUPTI error") + " (" + std::to_string((int)r) + ")";
  return false;
}

}  // namespace

struct PmSampler::State {
  const Api* a = nullptr;
  bool profiler = false, sampling = false, running = false;
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_PmSampling_Object* obj = nullptr;
  std::vector<std::string> names;
  std::vector<const char*> cnames;
  std::vector<uint8_t> availability, config, data;

  ~State() {
    if (!a) return;
    if (running) {
      auto p = params<CUpti_PmSampling_Stop_Params>(CUpti_PmSampling_Stop_Params_STRUCT_SIZE);
      p.pPmSamplingObject = obj;
      a->stop(&p);
    }
    if (sampling) {
      auto p = params<CUpti_PmSampling_Disable_Params>(CUpti_PmSampling_Disable_Params_STRUCT_SIZE);
      p.pPmSamplingObject = obj;
      a->disable(&p);
    }
    if (host) {
      auto p = params<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
      p.pHostObject = host;
      a->host_deinit(&p);
    }
    if (profiler) {
      auto p = params<CUpti_Profiler_DeInitialize_Params>(CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
      a->prof_deinit(&p);
    }
  }
};

std::unique_ptr<PmSampler> PmSampler::start(int device, const std::vector<std::string>& metrics, uint64_t interval_ns,
                                            uint32_t max_samples, std::string* why) {
  const Api* a = api(why);
  if (!a) return nullptr;
  if (metrics.empty() || interval_ns == 0 || max_samples == 0) {
    if (why) *why = "no metric, interval or sample count";
    return nullptr;
  }
  std::unique_ptr<PmSampler> ps(new PmSampler());
  ps->s_ = std::make_unique<State>();
  State& s = *ps->s_;
  s.a = a;
  s.names = metrics;
  for (const auto& n : s.names) s.cnames.push_back(n.c_str());

  auto ip = params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
  if (!ok(*a, a->prof_init(&ip), "cuptiProfilerInitialize", why)) return nullptr;
  s.profiler = true;
  auto cp = params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  cp.deviceIndex = (size_t)device;
  if (!ok(*a, a->chip_name(&cp), "cuptiDeviceGetChipName", why)) return nullptr;
  auto av = params<CUpti_PmSampling_GetCounterAvailability_Params>(CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE);
  av.deviceIndex = (size_t)device;
  if (!ok(*a, a->availability(&av), "cuptiPmSamplingGetCounterAvailability (size)", why)) return nullptr;
  s.availability.resize(av.counterAvailabilityImageSize);
  av.pCounterAvailabilityImage = s.availability.data();
  if (!ok(*a, a->availability(&av), "cuptiPmSamplingGetCounterAvailability", why)) return nullptr;

  auto hp = params<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  hp.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
  hp.pChipName = cp.pChipName;
  hp.pCounterAvailabilityImage = s.availability.data();
  if (!ok(*a, a->host_init(&hp), "cuptiProfilerHostInitialize", why)) return nullptr;
  s.host = hp.pHostObject;
  auto am = params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  am.pHostObject = s.host;
  am.ppMetricNames = s.cnames.data();
  am.numMetrics = s.cnames.size();
  if (!ok(*a, a->add_metrics(&am), "cuptiProfilerHostConfigAddMetrics", why)) return nullptr;
  auto cs = params<CUpti_Profiler_Host_GetConfigImageSize_Params>(CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  cs.pHostObject = s.host;
  if (!ok(*a, a->config_size(&cs), "cuptiProfilerHostGetConfigImageSize", why)) return nullptr;
  s.config.resize(cs.configImageSize);
  auto ci = params<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  ci.pHostObject = s.host;
  ci.configImageSize = s.config.size();
  ci.pConfigImage = s.config.data();
  if (!ok(*a, a->config_image(&ci), "cuptiProfilerHostGetConfigImage", why)) return nullptr;

  auto en = params<CUpti_PmSampling_Enable_Params>(CUpti_PmSampling_Enable_Params_STRUCT_SIZE);
  en.deviceIndex = (size_t)device;
  if (!ok(*a, a->enable(&en), "cuptiPmSamplingEnable", why)) return nullptr;
  s.obj = en.pPmSamplingObject;
  s.sampling = true;
  auto sc = params<CUpti_PmSampling_SetConfig_Params>(CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE);
  sc.pPmSamplingObject = s.obj;
  sc.configSize = s.config.size();
  sc.pConfig = s.config.data();
  sc.hardwareBufferSize = (size_t)128 << 20;  // (8 steps at 1 us: ~16k records)
  sc.samplingInterval = interval_ns;
  sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  if (!ok(*a, a->set_config(&sc), "cuptiPmSamplingSetConfig", why)) return nullptr;
  auto ds = params<CUpti_PmSampling_GetCounterDataSize_Params>(CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE);
  ds.pPmSamplingObject = s.obj;
  ds.pMetricNames = s.cnames.data();
  ds.numMetrics = s.cnames.size();
  ds.maxSamples = max_samples;
  if (!ok(*a, a->data_size(&ds), "cuptiPmSamplingGetCounterDataSize", why)) return nullptr;
  s.data.resize(ds.counterDataSize);
  auto di = params<CUpti_PmSampling_CounterDataImage_Initialize_Params>(CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  di.pPmSamplingObject = s.obj;
  di.counterDataSize = s.data.size();
  di.pCounterData = s.data.data();
  if (!ok(*a, a->data_init(&di), "cuptiPmSamplingCounterDataImageInitialize", why)) return nullptr;
  auto st = params<CUpti_PmSampling_Start_Params>(CUpti_PmSampling_Start_Params_STRUCT_SIZE);
  st.pPmSamplingObject = s.obj;
  if (!ok(*a, a->start(&st), "cuptiPmSamplingStart", why)) return nullptr;
  s.running = true;
  return ps;
}

std::vector<PmSample> PmSampler::stop(std::string* why) {
  State& s = *s_;
  const Api& a = *s.a;
  if (!s.running) {
    if (why) *why = "not sampling";
    return {};
  }
  s.running = false;
  auto sp = params<CUpti_PmSampling_Stop_Params>(CUpti_PmSampling_Stop_Params_STRUCT_SIZE);
  sp.pPmSamplingObject = s.obj;
  if (!ok(a, a.stop(&sp), "cuptiPmSamplingStop", why)) return {};
  // The hardware buffer into the counter data image until its records end (or the image is full).
  for (int round = 0; round < 1024; ++round) {
    auto dd = params<CUpti_PmSampling_DecodeData_Params>(CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE);
    dd.pPmSamplingObject = s.obj;
    dd.pCounterDataImage = s.data.data();
    dd.counterDataImageSize = s.data.size();
    if (!ok(a, a.decode(&dd), "cuptiPmSamplingDecodeData", why)) return {};
    if (dd.overflow) {
      if (why) *why = "the PM sampling hardware buffer overflowed (a longer interval or fewer steps)";
      return {};
    }
    if (dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_OTHER) break;
  }
  auto in = params<CUpti_PmSampling_GetCounterDataInfo_Params>(CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE);
  in.pCounterDataImage = s.data.data();
  in.counterDataImageSize = s.data.size();
  if (!ok(a, a.data_info(&in), "cuptiPmSamplingGetCounterDataInfo", why)) return {};
  std::vector<PmSample> out;
  out.reserve(in.numCompletedSamples);
  for (size_t i = 0; i < in.numCompletedSamples; ++i) {
    auto si = params<CUpti_PmSampling_CounterData_GetSampleInfo_Params>(CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE);
    si.pPmSamplingObject = s.obj;
    si.pCounterDataImage = s.data.data();
    si.counterDataImageSize = s.data.size();
    si.sampleIndex = i;
    if (!ok(a, a.sample_info(&si), "cuptiPmSamplingCounterDataGetSampleInfo", why)) return {};
    PmSample smp;
    smp.start_ns = si.startTimestamp;
    smp.end_ns = si.endTimestamp;
    smp.values.assign(s.cnames.size(), 0.0);
    auto ev = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    ev.pHostObject = s.host;
    ev.pCounterDataImage = s.data.data();
    ev.counterDataImageSize = s.data.size();
    ev.rangeIndex = i;
    ev.ppMetricNames = s.cnames.data();
    ev.numMetrics = s.cnames.size();
    ev.pMetricValues = smp.values.data();
    if (!ok(a, a.evaluate(&ev), "cuptiProfilerHostEvaluateToGpuValues", why)) return {};
    out.push_back(std::move(smp));
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; });
  return out;
}

#else

struct PmSampler::State {};
std::unique_ptr<PmSampler> PmSampler::start(int, const std::vector<std::string>&, uint64_t, uint32_t, std::string* why) {
  if (why) *why = "this build has no CUPTI headers (scripts/bootstrap.sh installs them under /opt/memra-deps/cupti)";
  return nullptr;
}
std::vector<PmSample> PmSampler::stop(std::string* why) {
  if (why) *why = "this build has no CUPTI headers";
  return {};
}

#endif

PmSampler::~PmSampler() = default;

}  // namespace memra::app
