#include "common/app.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdio>
#include <exception>

#include "core/build_info.h"
#include "core/error.h"
#include "core/log.h"

#ifdef MEMRA_HAVE_CUDA
#include "backend/cuda/device_query.h"
#endif

namespace memra::app {

std::optional<GpuInfo> query_gpu() {
#ifdef MEMRA_HAVE_CUDA
  return cuda::query_device();
#else
  return std::nullopt;
#endif
}

void setup_logging(const Config& c) {
  static bool once = [] {
    auto logger = spdlog::stderr_color_mt("memra");
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    return true;
  }();
  (void)once;
  spdlog::set_level(spdlog::level::from_str(c.logging.level));
}

int main(int argc, char** argv, const Spec& spec) {
  std::vector<std::string> args(argv, argv + argc);
  CLI::App cli{spec.description, spec.tool};
  cli.set_version_flag("--version", std::string("memra ") + build_info().git_commit);
  std::vector<std::string> config_files, overrides;
  bool print_config = false, print_defaults = false;
  std::string receipt_override;
  cli.add_option("--config", config_files, "TOML config file (repeatable; later files override earlier)")->type_name("FILE");
  cli.add_option("--set", overrides, "override one key: section.key=value (repeatable)")->type_name("KEY=VALUE");
  cli.add_flag("--print-config", print_config, "print the resolved config as TOML and exit");
  cli.add_flag("--print-defaults", print_defaults, "print every config key with its default and meaning (configs/defaults.toml) and exit");
  cli.add_option("--receipt", receipt_override, "append the receipt to FILE (default: receipt.path)")->type_name("FILE");
  if (spec.add_options) spec.add_options(cli);

  Context ctx{Config{}, Receipt(spec.tool, args), "", true, false, {}, {}, spec.apply_cli};
  auto finish = [&](int code, const std::string& status, const std::string& error) {
    if (ctx.write_receipt && !ctx.receipt_written) {
      ctx.receipt.set_status(status, error);
      const std::string path = ctx.receipt_path.empty() ? Config{}.receipt.path : ctx.receipt_path;
      ctx.receipt.append_to(path);
    }
    return code;
  };

  try {
    cli.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    ctx.receipt_path = receipt_override;
    const int code = cli.exit(e);
    return finish(code == 0 ? 0 : 2, code == 0 ? "ok" : "error", std::string("command line: ") + e.what());
  }

  if (print_defaults) {
    std::fputs(defaults_toml().c_str(), stdout);
    return 0;
  }
  try {
    ctx.config_files = config_files;
    ctx.overrides = overrides;
    ctx.cfg = load_config(config_files, overrides);
    if (spec.apply_cli) spec.apply_cli(ctx.cfg);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", spec.tool.c_str(), e.what());
    ctx.receipt_path = receipt_override;
    return finish(2, "error", e.what());
  }
  ctx.receipt_path = receipt_override.empty() ? ctx.cfg.receipt.path : receipt_override;
  ctx.write_receipt = ctx.cfg.receipt.enabled;
  ctx.receipt.set_config(ctx.cfg);
  if (print_config) {
    std::fputs(to_toml(ctx.cfg).c_str(), stdout);
    return 0;
  }
  setup_logging(ctx.cfg);
  try {
    if (auto g = query_gpu()) ctx.receipt.set_gpu(*g);
  } catch (const std::exception& e) {
    spdlog::debug("GPU query failed: {}", e.what());
  }

  try {
    const int rc = spec.run(ctx);
    return finish(rc, rc == 0 ? "ok" : "fail", rc == 0 ? "" : "a gate failed");
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", spec.tool.c_str(), e.what());
    return finish(1, "error", e.what());
  }
}

}  // namespace memra::app
