// Server counters and gauges, rendered as Prometheus text for GET /metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace anelm::server {

struct Metrics {
  std::atomic<int64_t> requests_total{0};        // HTTP requests answered
  std::atomic<int64_t> requests_errors_total{0}; // answered with status >= 400
  std::atomic<int64_t> generations_total{0};     // jobs finished by the worker
  std::atomic<int64_t> generations_cancelled{0}; // jobs cancelled (client gone, shutdown)
  std::atomic<int64_t> queue_rejections{0};      // 429 / 503 because the queue was full
  std::atomic<int64_t> prompt_tokens_total{0};
  std::atomic<int64_t> completion_tokens_total{0};
  std::atomic<int64_t> prefill_us_total{0};      // microseconds spent in prefill
  std::atomic<int64_t> decode_us_total{0};       // microseconds spent decoding
  std::atomic<int64_t> prefill_tokens_total{0};  // prompt tokens actually computed (not cached)
};

struct MetricsGauges {
  int queue_depth = 0;        // jobs waiting
  int requests_processing = 0;  // jobs running (0 or 1)
  int n_ctx = 0;
  double uptime_s = 0;
};

std::string render_prometheus(const Metrics& m, const MetricsGauges& g);

}  // namespace anelm::server
