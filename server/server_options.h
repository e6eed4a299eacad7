// ServerOptions: one POD for `anelm serve`, from built-in defaults < configs/server.json < CLI flags.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace anelm::server {

struct ServerOptions {
  std::string model;                   // --model: GGUF file or HF directory
  std::string model_id;                // --alias: name reported by /v1/models; empty: from the model path
  std::string host = "127.0.0.1";      // --host: bind address (non-loopback requires an API key)
  int port = 8080;                     // --port: 0 picks a free port
  std::string backend = "cpu";         // --backend: cpu | ane
  int threads = 0;                     // --threads: compute threads; 0: all hardware threads
  int ctx = 0;                         // --ctx: KV cache tokens; 0: engine default
  std::string api_key;                 // --api-key: empty disables authentication
  int parallel = 4;                    // --parallel: sequences decoded together, each with --ctx tokens of KV
  int max_queue = 16;                  // --max-queue: jobs that may wait besides the running ones
  int cache_ram_mb = 256;              // --cache-ram: prompt cache across requests, MiB; 0: off
  std::string config_file;             // --config: JSON file of defaults
  bool offline = false;                // --offline: never download a missing model
  bool embeddings = false;             // --embeddings: serve /v1/embeddings for any model (mean pooling unless the file says otherwise)
  bool reranking = false;              // --reranking: a Qwen3 reranker stored as a causal LM served on /v1/rerank
  bool webui = true;                   // --no-webui turns off the chat page at / (server/webui/)
  std::string weights;                 // --weights: re-quantize at load (engine::kWeightsTypeNames); empty: as stored
  std::string presets_dir = "auto";    // --presets: model presets; "auto": configs/models of the source tree; "": none
  bool ane_fp32_residual = false;      // --ane-fp32-residual: keep the residual stream in fp32 on the CPU
  std::string ane_cache_dir = "auto";  // --ane-cache: compiled ANE programs; "auto": ~/.cache/anelm/ane; "": off
  std::string chat_template;           // --chat-template: Jinja file used instead of the model's template
  std::string log_level = "info";      // --log-level: trace | debug | info | warn | error
  std::string log_format = "text";     // --log-format: text | json (one JSON object per line)
  int http_threads = 64;               // HTTP worker threads (they run complete requests only)
  size_t max_body_bytes = 4u << 20;    // larger request bodies (decoded, chunked too) get 413
  size_t max_header_bytes = 16384;     // request line + headers; beyond: 431
  int max_headers = 100;               // header fields per request; beyond: 431
  int max_connections = 256;           // open connections; beyond: the oldest idle/slow one is closed
  int header_timeout_s = 10;           // a request head must arrive within this (slow-loris guard)
  int read_timeout_s = 30;             // the whole request (head and body) must arrive within this
  int write_timeout_s = 60;            // a response write without progress this long fails (stalled readers)
  int keep_alive_timeout_s = 5;        // idle time between requests on one connection
  int shutdown_grace_ms = 5000;        // SIGINT/SIGTERM: time in-flight jobs get before cancellation
  int retry_after_s = 1;               // Retry-After on 429 / 503
  int default_max_tokens = 16;         // /v1/completions max_tokens when absent (OpenAI: 16)
  int sse_ping_s = 5;                  // ": ping" keep-alive comment interval while streaming (agents time out)
  std::vector<std::string> allowed_hosts;  // Host header names accepted besides loopback and --host
  std::vector<std::string> cors_origins;   // Origins allowed by CORS; empty: no CORS headers
  // --logit-bias ID(+|-)BIAS, repeatable: added to every request's sampling (a request's own
  // logit_bias entries add to these and win per id), as llama-server's --logit-bias.
  std::vector<std::pair<int, float>> logit_bias;
};

// "ID+BIAS" / "ID-BIAS" (llama.cpp's form) -> (id, bias); bias in [-100, 100]. Throws
// anelm::Error(kInvalidArgument) naming `what` and the text.
std::pair<int, float> parse_logit_bias_flag(const std::string& text, const std::string& what);

struct ParsedServerArgs {
  ServerOptions options;
  bool show_help = false;
  std::string help;  // --help text from the flag table
};

// Parses argv (the arguments after "serve"; argv[0] is the program name), merges the config file
// and validates. Throws anelm::Error(kInvalidArgument) naming the flag or key.
ParsedServerArgs parse_server_args(int argc, char** argv);

// Applies a JSON config text over `opts` (unknown keys are errors). `source` names it in errors.
void apply_config_json(ServerOptions& opts, const std::string& json_text, const std::string& source);

// Checks ranges and cross-field rules; throws anelm::Error(kInvalidArgument) listing every problem.
void validate_options(const ServerOptions& opts);

// True when `host` (a name or an address, "[::1]" too) resolves, and every address it resolves to
// is a loopback address (127.0.0.0/8, ::1, IPv4-mapped 127.x). An unresolvable host is not loopback.
bool is_loopback_host(const std::string& host);

// cxxopts names a bad value but not its flag ("Argument 'abc' failed to parse"): the message again
// with the flag that carried the value found in argv ("--port: invalid value 'abc'").
std::string name_the_flag(int argc, char** argv, const std::string& cxxopts_message);

}  // namespace anelm::server
