// run-spec: speculative decoding (lib/engine/speculative.h). A draft model of the same
// vocabulary, or prompt lookup, proposes tokens; the target scores them in one batch and keeps
// the ones it would have chosen. Greedy (--temp 0, the default): the output is the target's plain
// greedy output (penalties included); --check proves it for the run at hand (a second, plain
// generation compared token for token; a failed gate otherwise) and records both speeds. Sampled
// (--temp > 0): the rejection rule keeps the output distributed as plain sampling's, which no
// single run can show (tests/engine/test_speculative_sampling.cpp does, over thousands), so
// --check is refused there.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "common/app.h"
#include "common/gen_options.h"
#include "common/gen_text.h"
#include "common/loading.h"
#include "core/error.h"
#include "core/sha256.h"
#include "engine/speculative.h"
#include "gguf/gguf.h"
#include "sample/stop.h"
#include "tokenizer/tokenizer.h"

namespace memra::spec {
namespace {

struct Options : gen::Options {
  std::string draft_model, drafter;
  int draft_max = 0;
  double draft_p_min = 0;
  bool check = false;
  CLI::Option *o_draft_model = nullptr, *o_drafter = nullptr, *o_draft_max = nullptr, *o_check = nullptr,
              *o_draft_p_min = nullptr;
};

void add_options(CLI::App& cli, Options& o) {
  gen::add_model_prompt_options(cli, o);
  // llama.cpp's speculative example spells these -md / --model-draft and --draft-max / --draft
  // (-md is rewritten to --model-draft in main: CLI11 takes one-letter short names only).
  o.o_draft_model = cli.add_option("--model-draft,--draft-model", o.draft_model, "draft model GGUF, also -md (spec.draft_model)")
                        ->type_name("FILE");
  o.o_drafter = cli.add_option("--drafter", o.drafter, "model | ngram | auto (spec.drafter)")
                    ->check(CLI::IsMember({"auto", "model", "ngram"}));
  o.o_draft_max = cli.add_option("--draft-max,--draft,-k,--k", o.draft_max, "tokens drafted per target batch (spec.draft_tokens)");
  o.o_draft_p_min = cli.add_option("--draft-p-min", o.draft_p_min, "a draft model stops proposing below this probability (spec.draft_p_min)");
  o.o_check = cli.add_flag("--check", o.check, "generate again without a drafter and compare token for token (spec.check)");
  gen::add_run_options(cli, o);
  gen::add_sampling_options(cli, o);
}

void apply_cli(const Options& o, Config& c) {
  gen::apply_cli(o, c);
  auto given = [](const CLI::Option* opt) { return opt && opt->count() > 0; };
  if (given(o.o_draft_model)) c.spec.draft_model = o.draft_model;
  if (given(o.o_drafter)) c.spec.drafter = o.drafter;
  if (given(o.o_draft_max)) c.spec.draft_tokens = o.draft_max;
  if (given(o.o_check)) c.spec.check = o.check;
  if (given(o.o_draft_p_min)) c.spec.draft_p_min = o.draft_p_min;
  MEMRA_CHECK(c.spec.draft_p_min >= 0 && c.spec.draft_p_min <= 1, "--draft-p-min must be in [0, 1], got {}",
              c.spec.draft_p_min);
  MEMRA_CHECK(c.spec.draft_tokens >= 1 && c.spec.draft_tokens <= 64, "--draft-max must be in [1, 64], got {}",
              c.spec.draft_tokens);
}

void check_config(const Config& c) {
  MEMRA_CHECK(!c.spec.check || c.sample.temperature == 0, "--check compares with plain greedy decoding token for "
              "token, but sample.temperature = {}: sampled speculative decoding emits a sample of the plain "
              "distribution, not the same tokens (drop --check, or --temp 0)", c.sample.temperature);
  MEMRA_CHECK(c.spec.ngram_max >= c.spec.ngram_min, "spec.ngram_max ({}) must be >= spec.ngram_min ({})",
              c.spec.ngram_max, c.spec.ngram_min);
}

// The draft's ids must mean what the target's mean: every token's text, and BOS / EOS.
void check_same_vocabulary(const tok::Tokenizer& target, const tok::Tokenizer& draft, const std::string& draft_path) {
  MEMRA_CHECK(target.n_vocab() == draft.n_vocab(), "draft model '{}' has a vocabulary of {} tokens, the target {}: "
              "speculative decoding needs the same vocabulary", draft_path, draft.n_vocab(), target.n_vocab());
  for (int32_t id = 0; id < target.n_vocab(); ++id)
    MEMRA_CHECK(target.token_text(id) == draft.token_text(id), "draft model '{}': token {} is '{}' there and '{}' in "
                "the target: speculative decoding needs the same vocabulary", draft_path, id, draft.token_text(id),
                target.token_text(id));
  MEMRA_CHECK(target.bos() == draft.bos() && target.eos() == draft.eos(), "draft model '{}': BOS / EOS {} / {}, the "
              "target's {} / {}", draft_path, draft.bos(), draft.eos(), target.bos(), target.eos());
}

int run(app::Context& ctx, const Options& o) {
  const auto& cfg = ctx.cfg;
  if (cfg.model.path.empty()) MEMRA_FAIL("no model given (positional argument, -m/--model or model.path)");
  MEMRA_CHECK(o.has_prompt(), "no prompt given: use --prompt TEXT (-p) or --prompt-file FILE");
  check_config(cfg);
  // Greedy without penalties: each row's argmax picked on the backend. Otherwise the host sampler
  // and the rejection rule (temperature 0 with penalties: greedy on the penalized logits).
  const std::optional<SamplerOptions> sampling =
      gen::argmax_sampling(cfg) ? std::nullopt : std::optional<SamplerOptions>(gen::sampler_options(cfg));
  std::string drafter_kind = cfg.spec.drafter;
  if (drafter_kind == "auto") drafter_kind = cfg.spec.draft_model.empty() ? "ngram" : "model";
  MEMRA_CHECK(drafter_kind != "model" || !cfg.spec.draft_model.empty(),
              "spec.drafter = model needs a draft model: -md/--model-draft FILE or spec.draft_model");

  auto file = std::make_shared<const gguf::File>(gguf::File::open(cfg.model.path));
  if (cfg.receipt.hash_model)
    ctx.receipt.set_model_hash_later(*file);
  else
    ctx.receipt.set_model(*file, false);
  const auto tok = tok::Tokenizer::from_gguf(*file);
  auto& r = ctx.receipt.results();
  const std::string user = o.read_prompt();
  r["mode"] = cfg.run.chat ? "chat" : "generate";
  r["prompt"] = user;
  r["drafter"] = drafter_kind;
  r["sampling"] = !sampling ? "greedy" : cfg.sample.temperature == 0 ? "penalized greedy" : "sampled";
  const gen::Prompt prompt = gen::build_prompt(ctx, o, *file, tok, user);
  r["prompt_ids"] = prompt.ids;
  MEMRA_CHECK((int64_t)prompt.ids.size() + cfg.run.n_predict <= cfg.run.n_ctx,
              "prompt of {} tokens + {} to generate exceeds context n_ctx={} (raise --ctx or lower -n)",
              prompt.ids.size(), cfg.run.n_predict, cfg.run.n_ctx);

  std::shared_ptr<const gguf::File> draft_file;
  if (drafter_kind == "model") {
    draft_file = std::make_shared<const gguf::File>(gguf::File::open(cfg.spec.draft_model));
    check_same_vocabulary(tok, tok::Tokenizer::from_gguf(*draft_file), cfg.spec.draft_model);
    r["draft_model"] = {{"path", cfg.spec.draft_model}, {"bytes", draft_file->file_size()}};
    if (cfg.receipt.hash_model) r["draft_model"]["sha256"] = sha256_file_hex(cfg.spec.draft_model);
  }
  app::Loaded target = app::load_session(ctx, file);
  MEMRA_CHECK(target.session->n_vocab() >= tok.n_vocab(), "the model's output has {} logits but its vocabulary has {} tokens",
              target.session->n_vocab(), tok.n_vocab());
  app::Loaded draft;
  std::unique_ptr<engine::Drafter> drafter;
  if (draft_file) {
    draft = app::load_session(ctx, draft_file, "draft_");
    MEMRA_CHECK(draft.session->n_vocab() == target.session->n_vocab(), "draft model '{}' has {} output logits, the "
                "target {}", cfg.spec.draft_model, draft.session->n_vocab(), target.session->n_vocab());
    auto md = std::make_unique<engine::ModelDrafter>(*draft.session, sampling);
    md->set_p_min(cfg.spec.draft_p_min);
    drafter = std::move(md);
  } else {
    drafter = std::make_unique<engine::NgramDrafter>(cfg.spec.ngram_min, cfg.spec.ngram_max);
  }

  engine::SpecOptions so;
  so.n_predict = cfg.run.n_predict;
  so.k = cfg.spec.draft_tokens;
  so.eog_ids = tok.info().eog;
  so.sampling = sampling;
  if (cfg.spec.check) {
    // --check compares two speeds: both runs warm. A short speculative run first pays what a
    // process's first steps pay (a device's decode-step graph capture, first launches of each verify
    // batch size), which the plain run after the timed one would otherwise not.
    engine::SpecOptions w = so;
    w.n_predict = std::min(so.n_predict, 4 * (so.k + 1));
    const auto tw = std::chrono::steady_clock::now();
    (void)engine::generate_speculative(*target.session, *drafter, prompt.ids, w);
    target.session->reset();
    ctx.receipt.metrics()["warmup_ms"] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tw).count();
  }

  StopCriteria stop{tok.info().eog, cfg.sample.stop};
  if (!cfg.run.chat) {
    std::fwrite(user.data(), 1, user.size(), stdout);
    std::fflush(stdout);
  }
  gen::Streamer out(tok, stop, /*echo=*/true);
  auto res = engine::generate_speculative(*target.session, *drafter, prompt.ids, so, [&](int32_t id) {
    if (tok.is_eog(id)) return true;
    return out.push(id);
  });
  out.finish();
  if (res.stop == "callback") res.stop = "stop_string";
  gen::record_output(ctx, res.tokens, res.stop, out, res.n_prompt, res.prefill_ms, res.decode_ms);
  auto& m = ctx.receipt.metrics();
  m["draft_ms"] = res.draft_ms;
  m["draft_tokens"] = res.k;
  if (res.k < so.k)
    std::fprintf(stderr, "run-spec: %d tokens drafted per batch at most, not %d: the %s backend computes batches of up "
                 "to %d rows as one-token steps (bit for bit); larger ones take other kernels\n", res.k, so.k,
                 target.backend_name.c_str(), res.k + 1);
  m["n_verify"] = res.n_verify;
  m["n_drafted"] = res.n_drafted;
  m["n_accepted"] = res.n_accepted;
  m["acceptance"] = res.acceptance();
  m["accepted_hist"] = res.accepted_hist;
  // Tokens emitted per target batch after the prompt's first token (1 = no speculation gained).
  m["tokens_per_batch"] = res.n_verify > 0 ? (double)(res.tokens.size() - 1) / (double)res.n_verify : 0.0;
  std::fprintf(stderr,
               "run-spec: %s | %s drafter, %s, k=%d | prompt %d tok, %.1f ms | decode %zu tok, %.1f ms, %.2f tok/s | "
               "%lld target batches, %lld of %lld proposals accepted (%.1f%%) | stop: %s\n",
               target.backend_name.c_str(), drafter->name().c_str(), r["sampling"].get<std::string>().c_str(), res.k,
               res.n_prompt, res.prefill_ms,
               res.tokens.size(), res.decode_ms, res.decode_tok_s(), (long long)res.n_verify,
               (long long)res.n_accepted, (long long)res.n_drafted, 100.0 * res.acceptance(), res.stop.c_str());
  if (!cfg.spec.check) return 0;

  // The gate: plain greedy decoding of the same prompt on the same session, as run-gen decodes it
  // (the argmax picked on the backend; with penalties the host sampler, its window the prompt and
  // the emitted tokens), without the stop strings' callback (the ids are compared up to the
  // speculative run's length); its speed is the one the speedup is against.
  target.session->reset();
  engine::GenerateOptions go;
  go.n_predict = (int)res.tokens.size();
  go.eog_ids = tok.info().eog;
  engine::SampleFn plain_fn;
  std::optional<Sampler> plain_sampler;
  if (sampling) {
    plain_sampler.emplace(*sampling);
    for (int32_t id : prompt.ids) plain_sampler->accept(id);
    plain_fn = [&](std::span<const float> logits) {
      const int32_t id = plain_sampler->sample(logits);
      plain_sampler->accept(id);
      return id;
    };
  }
  const auto plain = engine::generate(*target.session, prompt.ids, go, plain_fn);
  size_t same = 0;
  while (same < plain.tokens.size() && same < res.tokens.size() && plain.tokens[same] == res.tokens[same]) ++same;
  const bool identical = plain.tokens == res.tokens;
  r["check"] = {{"identical", identical},
                {"compared", res.tokens.size()},
                {"first_difference", identical ? nlohmann::json() : nlohmann::json(same)}};
  // As a gate the receipt sweep follows across runs (tool | GPU | name): the target's and the
  // drafter's files and k name the case.
  auto base = [](const std::string& path) { return path.substr(path.find_last_of('/') + 1); };
  const std::string gate = "greedy_identical/" + base(cfg.model.path) + "/" +
                           (draft_file ? "draft=" + base(cfg.spec.draft_model) : std::string("ngram")) + "/k" +
                           std::to_string(res.k) + (sampling ? "/penalized" : "");
  r["gates"] = nlohmann::json::array({{{"name", gate}, {"pass", identical}, {"compared", res.tokens.size()}}});
  m["plain_decode_ms"] = plain.decode_ms;
  m["plain_decode_tok_s"] = plain.decode_tok_s();
  m["speedup"] = plain.decode_tok_s() > 0 ? res.decode_tok_s() / plain.decode_tok_s() : 0.0;
  std::fprintf(stderr, "run-spec: check: %s plain greedy decoding (%zu tokens; plain %.2f tok/s, %.2fx)\n",
               identical ? "identical to" : "DIFFERS from", res.tokens.size(), plain.decode_tok_s(),
               plain.decode_tok_s() > 0 ? res.decode_tok_s() / plain.decode_tok_s() : 0.0);
  if (!identical) {
    std::fprintf(stderr, "run-spec: first difference at generated token %zu\n", same);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace memra::spec

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  static char model_draft[] = "--model-draft";
  for (auto& a : args)
    if (std::string_view(a) == "-md") a = model_draft;
  memra::spec::Options o;
  memra::app::Spec spec;
  spec.tool = "run-spec";
  spec.description =
      "memra run-spec: speculative decoding; greedy: the target's plain greedy output, sampled (--temp > 0):\n"
      "  distributed as the target's plain sampling (the rejection rule)\n"
      "  run-spec TARGET.gguf -md DRAFT.gguf -p TEXT [-n N] [--k K | --draft-max K] [--check]\n"
      "  run-spec TARGET.gguf --drafter ngram -p TEXT   prompt lookup, no draft model\n"
      "  --check: generate again without speculation and compare token for token (a failed gate otherwise)";
  spec.add_options = [&](CLI::App& cli) { memra::spec::add_options(cli, o); };
  spec.apply_cli = [&](memra::Config& c) { memra::spec::apply_cli(o, c); };
  spec.run = [&](memra::app::Context& ctx) { return memra::spec::run(ctx, o); };
  return memra::app::main(argc, args.data(), spec);
}
