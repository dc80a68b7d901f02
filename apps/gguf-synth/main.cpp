// gguf-synth: writes a random-weight GGUF with the exact tensor names, shapes, per-tensor quant
// types and tokenizer size of a real model (llama.cpp loads it), for benchmarks and tests.
//   gguf-synth --preset qwen3-8b --mix q4_k_m --out qwen3-8b-q4_k_m.gguf [--seed N] [--dim n_layer=4]
//   gguf-synth --list | --plan
#include <cstdio>

#include "common/app.h"
#include "core/error.h"
#include "core/log.h"
#include "gguf/gguf.h"
#include "synth/synth.h"

namespace {

struct Cli {
  std::string preset, mix, out;
  int64_t seed = -1;
  std::vector<std::string> dims;
  bool list = false, plan = false;
} g_cli;

std::string list_text() {
  using namespace memra::synth;
  std::string s = "presets:\n";
  for (const auto& p : presets()) s += fmt::format("  {:<20} {}\n", p.name, p.description);
  s += "mixes:\n ";
  for (Mix m : all_mixes()) s += fmt::format(" {}", mix_name(m));
  s += "\ndimension keys (--dim KEY=VALUE or synth.dims = [\"KEY=VALUE\", ...]):\n ";
  for (auto k : dim_keys()) s += fmt::format(" {}", k);
  return s + "\n";
}

memra::synth::Dims resolve_dims(const memra::SynthSection& c) {
  memra::synth::Dims d = memra::synth::find_preset(c.preset).dims;
  for (const auto& kv : c.dims) {
    const auto eq = kv.find('=');
    MEMRA_CHECK(eq != std::string::npos && eq > 0, "gguf-synth: dimension override '{}' is not KEY=VALUE", kv);
    memra::synth::set_dim(d, kv.substr(0, eq), kv.substr(eq + 1));
  }
  return d;
}

nlohmann::json dims_json(const memra::synth::Dims& d) {
  return {{"arch", d.arch}, {"name", d.name}, {"n_vocab", d.n_vocab}, {"n_embd", d.n_embd},
          {"n_layer", d.n_layer}, {"n_head", d.n_head}, {"n_head_kv", d.n_head_kv},
          {"head_dim", d.head_dim}, {"n_ff", d.n_ff}, {"n_expert", d.n_expert},
          {"n_expert_used", d.n_expert_used}, {"n_ff_exp", d.n_ff_exp},
          {"context_length", d.context_length}, {"rope_freq_base", d.rope_freq_base},
          {"rms_eps", d.rms_eps}, {"qk_norm", d.qk_norm}, {"tied_output", d.tied_output},
          {"n_regular_tokens", d.n_regular_tokens}};
}

int run(memra::app::Context& ctx) {
  using namespace memra::synth;
  if (g_cli.list) {
    ctx.write_receipt = false;  // nothing was made
    std::fputs(list_text().c_str(), stdout);
    return 0;
  }
  const auto& c = ctx.cfg.synth;
  const Plan plan = make_plan(resolve_dims(c), mix_from_name(c.mix));
  auto& res = ctx.receipt.results();
  res["preset"] = c.preset;
  res["mix"] = c.mix;
  res["seed"] = c.seed;
  res["dims"] = dims_json(plan.dims);
  res["tensor_types"] = plan.type_histogram();
  res["n_tensors"] = plan.tensors.size();
  res["n_params"] = plan.n_params();
  res["tensor_bytes"] = plan.tensor_bytes();
  if (g_cli.plan) {
    std::fputs(format_plan(plan).c_str(), stdout);
    return 0;
  }
  MEMRA_CHECK(!c.out.empty(), "gguf-synth: no output file (--out FILE or synth.out)");
  WriteOptions o;
  o.path = c.out;
  o.seed = (uint64_t)c.seed;
  o.threads = ctx.cfg.threads.n;
  o.hash = ctx.cfg.receipt.hash_model;
  const uint64_t total = plan.tensor_bytes();
  uint64_t done = 0, next_report = 0;
  o.progress = [&](size_t i, size_t n, const std::string& name) {
    done += plan.tensors[i].bytes();
    if (done >= next_report || i + 1 == n) {
      spdlog::info("{:5.1f}% [{}/{}] {}", 100.0 * done / total, i + 1, n, name);
      next_report = done + total / 20;
    }
  };
  spdlog::info("writing {} ({} {}, {} tensors, {} tensor bytes)", c.out, c.preset, c.mix, plan.tensors.size(), total);
  const WriteResult r = write_model(plan, o);
  const auto f = memra::gguf::File::open(c.out);
  ctx.receipt.set_model(f, false);
  ctx.receipt.json()["model"]["sha256"] = r.sha256;
  res["file_bytes"] = r.file_bytes;
  res["sha256"] = r.sha256;
  auto& m = ctx.receipt.metrics();
  m["seconds_write"] = r.seconds_write;
  m["seconds_encode"] = r.seconds_encode;
  m["seconds_wait"] = r.seconds_wait;
  m["threads"] = r.threads;
  m["write_GBps"] = r.file_bytes / r.seconds_write / 1e9;
  std::printf("%s: %llu bytes (%llu tensor bytes), sha256 %s, %.1f s (%.1f s encoding, %.1f s waiting for the disk%s), %d threads\n",
              c.out.c_str(), (unsigned long long)r.file_bytes, (unsigned long long)r.tensor_bytes,
              r.sha256.empty() ? "(not computed)" : r.sha256.c_str(), r.seconds_write, r.seconds_encode, r.seconds_wait,
              r.sha256.empty() ? "" : " and the hash", r.threads);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  memra::app::Spec spec;
  spec.tool = "gguf-synth";
  spec.description = "Write a random-weight GGUF with the shapes, tensor names, quant mix and vocabulary size of a real model.";
  spec.add_options = [](CLI::App& cli) {
    cli.add_option("--preset", g_cli.preset, "model shape (see --list); sets synth.preset")->type_name("NAME");
    cli.add_option("--mix", g_cli.mix, "tensor type mix; sets synth.mix")->type_name("MIX");
    cli.add_option("--out", g_cli.out, "output GGUF file; sets synth.out")->type_name("FILE");
    cli.add_option("--seed", g_cli.seed, "seed; sets synth.seed")->type_name("N")->check(CLI::NonNegativeNumber);
    cli.add_option("--dim", g_cli.dims, "override one dimension, KEY=VALUE (repeatable; appended to synth.dims)")->type_name("KEY=VALUE");
    cli.add_flag("--list", g_cli.list, "print the presets, mixes and dimension keys, then exit");
    cli.add_flag("--plan", g_cli.plan, "print the tensor plan (names, shapes, types, bytes) without writing");
  };
  spec.apply_cli = [](memra::Config& c) {
    if (!g_cli.preset.empty()) c.synth.preset = g_cli.preset;
    if (!g_cli.mix.empty()) c.synth.mix = g_cli.mix;
    if (!g_cli.out.empty()) c.synth.out = g_cli.out;
    if (g_cli.seed >= 0) c.synth.seed = g_cli.seed;
    c.synth.dims.insert(c.synth.dims.end(), g_cli.dims.begin(), g_cli.dims.end());
  };
  spec.run = run;
  return memra::app::main(argc, argv, spec);
}
