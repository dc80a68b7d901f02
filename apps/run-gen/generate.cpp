#include <cstdio>

#include "common/gen_text.h"
#include "common/loading.h"
#include "core/error.h"
#include "modes.h"
#include "sample/sampler.h"
#include "sample/stop.h"
#include "tokenizer/tokenizer.h"

namespace memra::rungen {


int run_generate(app::Context& ctx, const Options& o, std::shared_ptr<const gguf::File> file) {
  const auto& cfg = ctx.cfg;
  const std::string user = o.read_prompt();
  const auto tok = tok::Tokenizer::from_gguf(*file);
  auto& r = ctx.receipt.results();
  r["mode"] = cfg.run.chat ? "chat" : "generate";
  r["prompt"] = user;
  const gen::Prompt prompt = gen::build_prompt(ctx, o, *file, tok, user);
  r["prompt_ids"] = prompt.ids;
  // Before the load: a prompt that cannot fit fails in milliseconds, not after reading weights.
  MEMRA_CHECK((int64_t)prompt.ids.size() <= cfg.run.n_ctx, "prompt of {} tokens is longer than the context n_ctx={} (raise --ctx)",
              prompt.ids.size(), cfg.run.n_ctx);
  MEMRA_CHECK((int64_t)prompt.ids.size() + cfg.run.n_predict <= cfg.run.n_ctx,
              "prompt of {} tokens + {} to generate exceeds context n_ctx={} (raise --ctx or lower -n)",
              prompt.ids.size(), cfg.run.n_predict, cfg.run.n_ctx);

  app::Loaded l = app::load_session(ctx, file);
  MEMRA_CHECK(l.session->n_vocab() >= tok.n_vocab(),
              "the model's output has {} logits but its vocabulary has {} tokens", l.session->n_vocab(),
              tok.n_vocab());
  Sampler sampler(gen::sampler_options(cfg));
  for (int32_t id : prompt.ids) sampler.accept(id);
  // Greedy without penalties is the argmax alone: the backend picks it (on a GPU only the id comes
  // back, not the vocabulary's logits), which is the sampler's choice (memra::argmax) bit for bit.
  // Otherwise, with sample.on_backend, a backend sampler draws where the logits are (the same chain).
  const bool argmax_on_backend = gen::argmax_sampling(cfg);
  std::unique_ptr<backend::TokenSampler> be_sampler;
  if (!argmax_on_backend && cfg.sample.on_backend) {
    be_sampler = l.session->backend().make_sampler(gen::sampler_options(cfg));
    for (int32_t id : prompt.ids) be_sampler->accept(id);
  }

  StopCriteria stop{tok.info().eog, cfg.sample.stop};
  const bool echo_prompt = !cfg.run.chat;
  if (echo_prompt) {
    std::fwrite(user.data(), 1, user.size(), stdout);
    std::fflush(stdout);
  }
  gen::Streamer out(tok, stop, /*echo=*/true);
  engine::GenerateOptions go;
  go.n_predict = cfg.run.n_predict;
  go.eog_ids = tok.info().eog;
  const auto on_token = [&](int32_t id) {
    if (be_sampler)
      be_sampler->accept(id);
    else
      sampler.accept(id);
    if (tok.is_eog(id)) return true;  // generate() stops after it; nothing to print
    return out.push(id);
  };
  engine::SampleFn sample_fn;
  if (!argmax_on_backend) sample_fn = [&](std::span<const float> logits) { return sampler.sample(logits); };
  auto res = be_sampler ? engine::generate(*l.session, prompt.ids, go, *be_sampler, on_token)
                        : engine::generate(*l.session, prompt.ids, go, sample_fn, on_token);
  out.finish();
  if (res.stop == "callback") res.stop = "stop_string";
  gen::record_output(ctx, res.tokens, res.stop, out, res.n_prompt, res.prefill_ms, res.decode_ms);
  auto& m = ctx.receipt.metrics();
  m["sampling"] = argmax_on_backend ? "argmax on the backend"
                  : be_sampler         ? "backend sampler (" + be_sampler->where() + ")"
                                       : "host sampler";
  std::fprintf(stderr,
               "run-gen: %s | load %.0f ms | prompt %d tok, %.1f ms, %.1f tok/s | decode %zu tok, %.1f ms, "
               "%.2f tok/s | stop: %s\n",
               l.backend_name.c_str(), l.load_ms, res.n_prompt, res.prefill_ms, res.prefill_tok_s(),
               res.tokens.size(), res.decode_ms, res.decode_tok_s(), res.stop.c_str());
  return 0;
}

}  // namespace memra::rungen
