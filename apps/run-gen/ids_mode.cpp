#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "common/loading.h"
#include "modes.h"

namespace memra::rungen {

namespace {

// Raw little-endian f32, no header: what numpy.fromfile(..., "<f4") and other engines' dumps read.
void write_f32_le(const std::string& path, const std::vector<float>& v) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  MEMRA_CHECK(out.good(), "--logits-out: cannot create '{}'", path);
  static_assert(sizeof(float) == 4);
  const uint16_t probe = 1;
  uint8_t first = 0;
  std::memcpy(&first, &probe, 1);
  MEMRA_CHECK(first == 1, "--logits-out: big-endian hosts are not supported");
  out.write(reinterpret_cast<const char*>(v.data()), (std::streamsize)(v.size() * sizeof(float)));
  out.close();
  MEMRA_CHECK(out.good(), "--logits-out: write error on '{}'", path);
}

}  // namespace

int run_ids(app::Context& ctx, const Options& o, std::shared_ptr<const gguf::File> file) {
  const auto& cfg = ctx.cfg;
  const auto ids = parse_id_list(o.ids, "--ids");
  MEMRA_CHECK(!ids.empty(), "--ids: no token ids given");
  auto& r = ctx.receipt.results();
  r["mode"] = "ids";
  r["prompt_ids"] = ids;
  MEMRA_CHECK((int64_t)ids.size() <= cfg.run.n_ctx, "--ids: prompt of {} tokens is longer than the context n_ctx={} (raise --ctx)",
              ids.size(), cfg.run.n_ctx);
  MEMRA_CHECK((int64_t)ids.size() + cfg.run.n_predict <= cfg.run.n_ctx,
              "prompt of {} tokens + {} to generate exceeds context n_ctx={} (raise --ctx or lower -n)",
              ids.size(), cfg.run.n_predict, cfg.run.n_ctx);

  app::Loaded l = app::load_session(ctx, file);
  const int64_t nv = l.session->n_vocab();
  check_ids(ids, nv, "--ids");
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const std::vector<float> logits = l.session->prefill(ids, /*all_logits=*/true);
  const double prefill_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  if (!o.logits_out.empty()) {
    write_f32_le(o.logits_out, logits);
    r["logits"] = {{"path", o.logits_out},
                   {"shape", {(int64_t)ids.size(), nv}},
                   {"layout", "raw little-endian f32, row-major [position][vocab], no header"}};
  }

  // Greedy continuation from the last position (the comparison a porter makes first).
  std::vector<int32_t> gen;
  const auto t1 = clock::now();
  std::vector<float> last(logits.end() - nv, logits.end());
  for (int i = 0; i < cfg.run.n_predict; ++i) {
    const int32_t id = engine::argmax(last);
    gen.push_back(id);
    if (i + 1 < cfg.run.n_predict) last = l.session->decode(id);
  }
  const double decode_ms = std::chrono::duration<double, std::milli>(clock::now() - t1).count();
  r["generated_ids"] = gen;
  auto& m = ctx.receipt.metrics();
  m["n_prompt"] = ids.size();
  m["prompt_ms"] = prefill_ms;
  m["n_generated"] = gen.size();
  m["decode_ms"] = decode_ms;
  std::fprintf(stderr, "run-gen: %s | load %.0f ms | %zu ids, %.1f ms | greedy %zu tok, %.1f ms%s%s\n",
               l.backend_name.c_str(), l.load_ms, ids.size(), prefill_ms, gen.size(), decode_ms,
               o.logits_out.empty() ? "" : " | logits -> ", o.logits_out.c_str());
  return 0;
}

}  // namespace memra::rungen
