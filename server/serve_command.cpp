// `anelm serve`: options -> bind the port at once -> load the model in the background -> serve ->
// drain on SIGINT/SIGTERM.
#include "server/serve_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <thread>

#include <spdlog/spdlog.h>

#include "engine/error.h"
#include "server/http_server.h"
#include "server/log_setup.h"
#include "server/downloader.h"
#include "server/model_bundle.h"
#include "server/model_preset.h"
#include "server/model_resolver.h"
#include "server/server_context.h"
#include "server/server_options.h"

namespace anelm::server {

namespace {

// Load progress: a bar on a terminal, structured log lines otherwise (every 10% and per stage).
class ProgressReporter {
 public:
  explicit ProgressReporter(ServerContext& ctx) : ctx_(ctx), tty_(isatty(STDERR_FILENO) == 1) {}

  void operator()(const std::string& stage, int64_t done, int64_t total) {
    double f = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
    ctx_.set_progress(stage, f);
    int pct = static_cast<int>(std::floor(f * 100));
    if (tty_) {
      int filled = pct * 30 / 100;
      std::fprintf(stderr, "\r%-12.12s [%-30s] %3d%%", stage.c_str(), std::string(filled, '#').c_str(), pct);
      if (done >= total) std::fputc('\n', stderr);
      return;
    }
    if (stage != last_stage_ || pct / 10 != last_pct_ / 10 || done >= total) {
      spdlog::info("loading stage={} done={} total={} percent={}", stage, done, total, pct);
      last_stage_ = stage;
      last_pct_ = pct;
    }
  }

 private:
  ServerContext& ctx_;
  bool tty_;
  std::string last_stage_;
  int last_pct_ = -1;
};

// $XDG_CACHE_HOME/anelm/ane, else ~/.cache/anelm/ane: compiled programs survive restarts.
std::string default_ane_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/anelm/ane";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/anelm/ane";
  return "";
}

// "auto": the configs/models folder beside the default server config.
std::string presets_dir(const ServerOptions& o) {
  if (o.presets_dir != "auto") return o.presets_dir;
  return (std::filesystem::path(ANELM_SOURCE_DIR) / "configs" / "models").string();
}

engine::EngineOptions engine_options(const ServerOptions& o, const std::string& path) {
  engine::EngineOptions e;
  e.model_path = path;
  e.backend = o.backend == "ane" ? engine::Backend::kAne : engine::Backend::kCpu;
  e.threads = o.threads;
  e.ctx = o.ctx;
  e.parallel = o.parallel;
  e.ane_fp32_residual = o.ane_fp32_residual;
  e.prompt_cache_bytes = static_cast<int64_t>(o.cache_ram_mb) << 20;
  e.embeddings = o.embeddings;
  if (!o.weights.empty()) e.weights = engine::weights_type_from_name(o.weights);  // validated: a known name
  e.ane_cache_dir = o.ane_cache_dir == "auto" ? default_ane_cache_dir() : o.ane_cache_dir;
  e.background_residency = true;  // ready as soon as the model is mapped and parsed
  return e;
}

// Runs on the loader thread: resolve (maybe download), load, then publish to the context.
void load_model(ServerContext& ctx, ModelBundle& bundle) {
  try {
    ProgressReporter progress(ctx);
    ResolveOptions ro;
    ro.model = ctx.options().model;
    ro.offline = ctx.options().offline;
    // Downloads print the downloader's own line (full file name, bytes, speed, ETA); /health
    // reports the fraction.
    DownloadProgress download_line = make_default_progress();
    ro.progress = [&](const std::string& file, int64_t done, int64_t total) {
      ctx.set_progress("download " + file, total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0);
      download_line(file, done, total);
    };
    ctx.set_progress("resolve", 0);
    std::string path = resolve_model_path(ro);
    spdlog::info("loading model path={} backend={}", path, ctx.options().backend);
    bundle = load_model_bundle(engine_options(ctx.options(), path), std::ref(progress), ctx.options().reranking);
    ModelRuntime rt;
    rt.engine = bundle.engine.get();
    rt.tokenizer = bundle.tokenizer.get();
    rt.model_id = ctx.options().model_id.empty() ? bundle.model_id : ctx.options().model_id;
    rt.file = describe_model_file(path);
    rt.chat = ChatPrompt::for_model(bundle.tokenizer->vocab(), ctx.options().chat_template);
    ModelPreset preset = find_model_preset(presets_dir(ctx.options()), path);
    if (!preset.name.empty()) {
      spdlog::info("model preset name={} source={}", preset.name, preset.source);
      rt.preset = preset.name;
      rt.sampling = preset.sampling;
    }
    for (const auto& [id, bias] : ctx.options().logit_bias) {
      if (id >= rt.tokenizer->vocab_size())
        throw Error(ErrorKind::kInvalidArgument, "--logit-bias: token id " + std::to_string(id) +
                                                     " is not in the vocabulary (" +
                                                     std::to_string(rt.tokenizer->vocab_size()) + " tokens)");
      spdlog::info("logit bias for every request: token {} {:+g}", id, bias);
    }
    rt.sampling.logit_bias = ctx.options().logit_bias;
    ctx.set_ready(std::move(rt));
    const auto& st = ctx.backend_stats();
    spdlog::info("ready model={} backend={} isa={} n_ctx={}", ctx.model().model_id, st.backend, st.isa,
                 ctx.n_ctx());
  } catch (const std::exception& e) {
    spdlog::error("model load failed: {}", e.what());
    ctx.set_failed(e.what());
  }
}

sigset_t shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// Waits for SIGINT/SIGTERM (returns 0) or a failed load (returns 1).
int wait_for_shutdown(ServerContext& ctx, const sigset_t& set) {
  timespec tick{0, 200 * 1000 * 1000};
  for (;;) {
    int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM) {
      spdlog::info("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
      return 0;
    }
    if (ctx.state() == ServerState::kFailed) return 1;
  }
}

}  // namespace

int run_serve(int argc, char** argv) {
  ParsedServerArgs args;
  try {
    args = parse_server_args(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "anelm serve: %s\n", e.what());
    return 2;
  }
  if (args.show_help) {
    std::fputs(args.help.c_str(), stdout);
    return 0;
  }
  // Block the shutdown signals before any thread starts, so only sigtimedwait sees them.
  const sigset_t set = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  configure_logging(args.options.log_level, args.options.log_format);
  ModelBundle bundle;  // declared first: outlives the worker inside the context
  ServerContext ctx(args.options);
  HttpServer http(ctx);
  try {
    int port = http.bind();
    http.start();
    spdlog::info("listening url=http://{}:{} config={}", ctx.options().host, port,
                 args.options.config_file.empty() ? "(built-in)" : args.options.config_file);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  std::atomic<bool> loaded{false};
  std::thread loader([&] {
    load_model(ctx, bundle);
    loaded = true;
  });
  int code = wait_for_shutdown(ctx, set);
  ctx.drain(std::chrono::milliseconds(ctx.options().shutdown_grace_ms));
  http.stop();
  if (!loaded) {  // a load cannot be interrupted: leave without waiting for it
    spdlog::info("exiting during model load");
    spdlog::shutdown();
    std::_Exit(code);
  }
  loader.join();
  spdlog::info("stopped");
  return code;
}

}  // namespace anelm::server
