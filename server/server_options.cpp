// `anelm serve` options: the cxxopts flag table (also --help), config-file merge and validation.
#include "server/server_options.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/error.h"

#ifndef ANELM_SOURCE_DIR
#define ANELM_SOURCE_DIR "."
#endif

namespace anelm::server {

using nlohmann::json;

namespace {

// The one flag table: name, help, value type. Defaults come from ServerOptions{}.
void add_flags(cxxopts::Options& o) {
  const ServerOptions d;
  o.add_options()
      ("model", "GGUF file or HuggingFace model directory", cxxopts::value<std::string>())
      ("host", "bind address (default " + d.host + "; non-loopback needs --api-key)",
       cxxopts::value<std::string>())
      ("port", "TCP port (default " + std::to_string(d.port) + "; 0: any free port)",
       cxxopts::value<int>())
      ("backend", "compute backend: cpu | ane (default " + d.backend + ")", cxxopts::value<std::string>())
      ("threads", "compute threads (default 0: all hardware threads)", cxxopts::value<int>())
      ("ctx", "context size in tokens (default 0: engine default)", cxxopts::value<int>())
      ("api-key", "require this key as 'Authorization: Bearer KEY' or 'X-Api-Key'",
       cxxopts::value<std::string>())
      ("parallel", "requests generated at once in one batched forward pass, each with its own --ctx "
       "tokens of KV cache (default " + std::to_string(d.parallel) + ")", cxxopts::value<int>())
      ("max-queue", "requests that may wait for the engine (default " + std::to_string(d.max_queue) + ")",
       cxxopts::value<int>())
      ("cache-ram", "prompt cache across requests in MiB: KV of earlier sequences reused by prompts that "
       "start with them (default " + std::to_string(d.cache_ram_mb) + "; 0 disables)", cxxopts::value<int>())
      ("offline", "never download a missing model")
      ("embeddings", "serve /v1/embeddings for any model (mean pooling unless the file has a pooling type; "
       "embedding models are served without it); allocates one --ctx KV cache for them at load")
      ("reranking", "serve a Qwen3 reranker stored as a causal LM (an HF Qwen3-Reranker directory, or a GGUF "
       "converted without its classifier head) on /v1/rerank (a reranker GGUF needs no flag)")
      ("no-webui", "do not serve the chat page at / (then / answers 404)")
      ("ane-fp32-residual", "--backend ane: keep the residual stream in fp32 on the CPU (programs return "
       "each layer's update; docs/ane.md: cost)")
      ("weights", std::string("re-quantize weights at load: ") + engine::kWeightsTypeNames + " (default: as stored)",
       cxxopts::value<std::string>())
      ("presets", "directory of model presets (default auto: configs/models; '' disables)",
       cxxopts::value<std::string>())
      ("ane-cache", "directory of compiled ANE programs (default auto: ~/.cache/anelm/ane; '' disables)",
       cxxopts::value<std::string>())
      ("alias", "model id reported by /v1/models (default: from the model path)", cxxopts::value<std::string>())
      ("chat-template", "Jinja chat template file used instead of the model's own", cxxopts::value<std::string>())
      ("log-level", "trace | debug | info | warn | error (default " + d.log_level + "; debug logs rendered prompts)",
       cxxopts::value<std::string>())
      ("log-format", "text | json: one JSON object per line (default " + d.log_format + ")",
       cxxopts::value<std::string>())
      ("logit-bias", "ID+BIAS or ID-BIAS: add BIAS (-100..100) to token ID's logit in every request "
       "(repeatable, or comma-separated; a request's logit_bias adds to these)",
       cxxopts::value<std::vector<std::string>>())
      ("config", "JSON file of defaults (default: configs/server.json when present)",
       cxxopts::value<std::string>())
      ("h,help", "show this help");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kNotFound, "config file not found: " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string default_config_path() {
  if (const char* env = std::getenv("ANELM_CONFIG"); env && *env) return env;
  std::filesystem::path p = std::filesystem::path(ANELM_SOURCE_DIR) / "configs" / "server.json";
  std::error_code ec;
  return std::filesystem::exists(p, ec) ? p.string() : std::string();
}

template <typename T>
void take(const json& j, const char* key, T& out, const std::string& source) {
  try {
    out = j.at(key).get<T>();
  } catch (const json::exception&) {
    throw Error(ErrorKind::kInvalidArgument, source + ": key '" + key + "' has the wrong type");
  }
}

void apply_cli(ServerOptions& o, const cxxopts::ParseResult& r) {
  if (r.count("model")) o.model = r["model"].as<std::string>();
  if (r.count("host")) o.host = r["host"].as<std::string>();
  if (r.count("port")) o.port = r["port"].as<int>();
  if (r.count("backend")) o.backend = r["backend"].as<std::string>();
  if (r.count("threads")) o.threads = r["threads"].as<int>();
  if (r.count("ctx")) o.ctx = r["ctx"].as<int>();
  if (r.count("api-key")) o.api_key = r["api-key"].as<std::string>();
  if (r.count("parallel")) o.parallel = r["parallel"].as<int>();
  if (r.count("max-queue")) o.max_queue = r["max-queue"].as<int>();
  if (r.count("cache-ram")) o.cache_ram_mb = r["cache-ram"].as<int>();
  if (r.count("offline")) o.offline = true;
  if (r.count("embeddings")) o.embeddings = true;
  if (r.count("reranking")) o.reranking = true;
  if (r.count("no-webui")) o.webui = false;
  if (r.count("ane-fp32-residual")) o.ane_fp32_residual = true;
  if (r.count("weights")) o.weights = r["weights"].as<std::string>();
  if (r.count("presets")) o.presets_dir = r["presets"].as<std::string>();
  if (r.count("ane-cache")) o.ane_cache_dir = r["ane-cache"].as<std::string>();
  if (r.count("alias")) o.model_id = r["alias"].as<std::string>();
  if (r.count("chat-template")) o.chat_template = r["chat-template"].as<std::string>();
  if (r.count("log-level")) o.log_level = r["log-level"].as<std::string>();
  if (r.count("log-format")) o.log_format = r["log-format"].as<std::string>();
  if (r.count("logit-bias")) {
    o.logit_bias.clear();
    for (const std::string& t : r["logit-bias"].as<std::vector<std::string>>())
      o.logit_bias.push_back(parse_logit_bias_flag(t, "--logit-bias"));
  }
}

}  // namespace

std::string name_the_flag(int argc, char** argv, const std::string& msg) {
  // The value is quoted with ‘’ (UTF-8) or '' by cxxopts.
  size_t open = msg.find("\xe2\x80\x98"), open_len = 3;
  size_t close = msg.find("\xe2\x80\x99");
  if (open == std::string::npos) {
    open = msg.find('\'');
    open_len = 1;
    close = open == std::string::npos ? open : msg.find('\'', open + 1);
  }
  if (open == std::string::npos || close == std::string::npos || close < open) return msg;
  const std::string value = msg.substr(open + open_len, close - open - open_len);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == value && i > 1 && argv[i - 1][0] == '-')
      return std::string(argv[i - 1]) + ": invalid value '" + value + "'";
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos && a.substr(eq + 1) == value)
      return a.substr(0, eq) + ": invalid value '" + value + "'";
  }
  return msg;
}

bool is_loopback_host(const std::string& host_in) {
  std::string host = host_in;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return false;
  bool all_loopback = true;
  for (addrinfo* a = res; a; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      all_loopback &= (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr;
      all_loopback &= IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
    } else {
      all_loopback = false;
    }
  }
  freeaddrinfo(res);
  return all_loopback;
}

void apply_config_json(ServerOptions& o, const std::string& text, const std::string& source) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw Error(ErrorKind::kInvalidArgument, source + ": not a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k.empty() || k[0] == '_') continue;  // "_comment" keys
    if (k == "model") take(j, "model", o.model, source);
    else if (k == "model_id") take(j, "model_id", o.model_id, source);
    else if (k == "host") take(j, "host", o.host, source);
    else if (k == "port") take(j, "port", o.port, source);
    else if (k == "backend") take(j, "backend", o.backend, source);
    else if (k == "threads") take(j, "threads", o.threads, source);
    else if (k == "ctx") take(j, "ctx", o.ctx, source);
    else if (k == "api_key") take(j, "api_key", o.api_key, source);
    else if (k == "parallel") take(j, "parallel", o.parallel, source);
    else if (k == "max_queue") take(j, "max_queue", o.max_queue, source);
    else if (k == "cache_ram_mb") take(j, "cache_ram_mb", o.cache_ram_mb, source);
    else if (k == "offline") take(j, "offline", o.offline, source);
    else if (k == "embeddings") take(j, "embeddings", o.embeddings, source);
    else if (k == "reranking") take(j, "reranking", o.reranking, source);
    else if (k == "webui") take(j, "webui", o.webui, source);
    else if (k == "ane_fp32_residual") take(j, "ane_fp32_residual", o.ane_fp32_residual, source);
    else if (k == "weights") take(j, "weights", o.weights, source);
    else if (k == "presets_dir") take(j, "presets_dir", o.presets_dir, source);
    else if (k == "ane_cache_dir") take(j, "ane_cache_dir", o.ane_cache_dir, source);
    else if (k == "chat_template") take(j, "chat_template", o.chat_template, source);
    else if (k == "log_level") take(j, "log_level", o.log_level, source);
    else if (k == "log_format") take(j, "log_format", o.log_format, source);
    else if (k == "http_threads") take(j, "http_threads", o.http_threads, source);
    else if (k == "max_body_bytes") take(j, "max_body_bytes", o.max_body_bytes, source);
    else if (k == "max_header_bytes") take(j, "max_header_bytes", o.max_header_bytes, source);
    else if (k == "max_headers") take(j, "max_headers", o.max_headers, source);
    else if (k == "max_connections") take(j, "max_connections", o.max_connections, source);
    else if (k == "header_timeout_s") take(j, "header_timeout_s", o.header_timeout_s, source);
    else if (k == "keep_alive_timeout_s") take(j, "keep_alive_timeout_s", o.keep_alive_timeout_s, source);
    else if (k == "read_timeout_s") take(j, "read_timeout_s", o.read_timeout_s, source);
    else if (k == "write_timeout_s") take(j, "write_timeout_s", o.write_timeout_s, source);
    else if (k == "shutdown_grace_ms") take(j, "shutdown_grace_ms", o.shutdown_grace_ms, source);
    else if (k == "retry_after_s") take(j, "retry_after_s", o.retry_after_s, source);
    else if (k == "default_max_tokens") take(j, "default_max_tokens", o.default_max_tokens, source);
    else if (k == "sse_ping_s") take(j, "sse_ping_s", o.sse_ping_s, source);
    else if (k == "allowed_hosts") take(j, "allowed_hosts", o.allowed_hosts, source);
    else if (k == "cors_origins") take(j, "cors_origins", o.cors_origins, source);
    else if (k == "logit_bias") {
      // ["151645+5", ...]: the flag's form, so one parser and one set of errors.
      std::vector<std::string> items;
      take(j, "logit_bias", items, source);
      o.logit_bias.clear();
      for (const std::string& t : items) o.logit_bias.push_back(parse_logit_bias_flag(t, source + ": logit_bias"));
    }
    else throw Error(ErrorKind::kInvalidArgument, source + ": unknown key '" + k + "'");
  }
}

std::pair<int, float> parse_logit_bias_flag(const std::string& text, const std::string& what) {
  const size_t sign = text.find_first_of("+-");
  auto bad = [&] {
    return Error(ErrorKind::kInvalidArgument,
                 what + " must be ID+BIAS or ID-BIAS (a token id, a bias in [-100, 100]), got '" + text + "'");
  };
  if (sign == 0 || sign == std::string::npos || sign > 10) throw bad();
  for (size_t i = 0; i < sign; ++i)
    if (text[i] < '0' || text[i] > '9') throw bad();
  const long long id = std::stoll(text.substr(0, sign));
  char* end = nullptr;
  const std::string number = text.substr(sign);  // keeps the sign
  const double bias = std::strtod(number.c_str(), &end);
  if (id > std::numeric_limits<int>::max() || end == number.c_str() || *end != '\0' || !(bias >= -100.0 && bias <= 100.0))
    throw bad();
  return {static_cast<int>(id), static_cast<float>(bias)};
}

void validate_options(const ServerOptions& o) {
  std::vector<std::string> problems;
  auto need = [&](bool ok, const std::string& msg) { if (!ok) problems.push_back(msg); };
  need(o.port >= 0 && o.port <= 65535, "--port must be in [0, 65535], got " + std::to_string(o.port));
  need(o.backend == "cpu" || o.backend == "ane", "--backend must be cpu or ane, got '" + o.backend + "'");
  need(o.threads >= 0 && o.threads <= 1024, "--threads must be in [0, 1024]");
  need(o.ctx >= 0 && o.ctx <= (1 << 20), "--ctx must be in [0, 1048576]");
  need(o.weights.empty() || engine::weights_type_from_name(o.weights).has_value(),
       std::string("--weights must be ") + engine::kWeightsTypeNames + ", got '" + o.weights + "'");
  need(o.log_level == "trace" || o.log_level == "debug" || o.log_level == "info" || o.log_level == "warn" ||
           o.log_level == "error",
       "--log-level must be trace, debug, info, warn or error, got '" + o.log_level + "'");
  need(o.log_format == "text" || o.log_format == "json",
       "--log-format must be text or json, got '" + o.log_format + "'");
  need(o.parallel >= 1 && o.parallel <= 256, "--parallel must be in [1, 256], got " + std::to_string(o.parallel));
  need(o.max_queue >= 0 && o.max_queue <= 4096, "--max-queue must be in [0, 4096]");
  need(o.cache_ram_mb >= 0 && o.cache_ram_mb <= (1 << 20),
       "--cache-ram must be in [0, 1048576] MiB, got " + std::to_string(o.cache_ram_mb));
  need(o.http_threads >= 2 && o.http_threads <= 4096, "http_threads must be in [2, 4096]");
  need(o.max_body_bytes >= 1024, "max_body_bytes must be at least 1024");
  need(o.read_timeout_s > 0 && o.write_timeout_s > 0 && o.header_timeout_s > 0 && o.keep_alive_timeout_s > 0,
       "header/read/write/keep-alive timeouts must be positive");
  need(o.max_header_bytes >= 1024 && o.max_header_bytes <= (1u << 20), "max_header_bytes must be in [1024, 1048576]");
  need(o.max_headers >= 8 && o.max_headers <= 10000, "max_headers must be in [8, 10000]");
  need(o.max_connections >= 4 && o.max_connections <= 65536, "max_connections must be in [4, 65536]");
  need(o.shutdown_grace_ms >= 0, "shutdown_grace_ms must be >= 0");
  need(o.retry_after_s >= 1, "retry_after_s must be >= 1");
  need(o.default_max_tokens >= 1, "default_max_tokens must be >= 1");
  need(o.sse_ping_s >= 1, "sse_ping_s must be >= 1");
  need(!o.host.empty(), "--host must not be empty");
  need(is_loopback_host(o.host) || !o.api_key.empty(),
       "--host " + o.host + " is not (or does not resolve only to) a loopback address: set --api-key too");
  for (const std::string& origin : o.cors_origins)
    need(origin != "*", "cors_origins must list origins explicitly, not '*'");
  if (problems.empty()) return;
  std::string msg = "invalid server options:";
  for (const auto& p : problems) msg += "\n  " + p;
  throw Error(ErrorKind::kInvalidArgument, msg);
}

ParsedServerArgs parse_server_args(int argc, char** argv) {
  cxxopts::Options opts("anelm serve", "OpenAI-compatible HTTP server");
  add_flags(opts);
  ParsedServerArgs out;
  out.help = opts.help();
  cxxopts::ParseResult r;
  try {
    r = opts.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    throw Error(ErrorKind::kInvalidArgument, name_the_flag(argc, argv, e.what()) + " (see anelm serve --help)");
  }
  if (r.count("help")) {
    out.show_help = true;
    return out;
  }
  if (!r.unmatched().empty())
    throw Error(ErrorKind::kInvalidArgument, "unexpected argument '" + r.unmatched()[0] + "'");
  std::string config = r.count("config") ? r["config"].as<std::string>() : default_config_path();
  out.options.config_file = config;
  if (!config.empty()) apply_config_json(out.options, read_file(config), config);
  apply_cli(out.options, r);
  validate_options(out.options);
  return out;
}

}  // namespace anelm::server
