// Server counters and gauges, rendered as Prometheus text for GET /metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace anelm::server {

// A Prometheus histogram of seconds with fixed buckets; lock-free observe().
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double seconds);
  void render(std::ostringstream& os, const char* name, const char* help) const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<int64_t>[]> counts_;  // per bucket (not cumulative); last is +Inf
  std::atomic<int64_t> count_{0};
  std::atomic<int64_t> sum_us_{0};
};

// Requests answered per (route, status), for the routes anelm serves.
class RouteCounters {
 public:
  void add(const std::string& route, int status);
  void render(std::ostringstream& os) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> counts_;
};

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
  Histogram time_to_first_token{{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}};
  Histogram time_per_output_token{{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}};
  Histogram request_duration{{0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120}};
  Histogram queue_wait{{0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30}};
  RouteCounters routes;
};

struct MetricsGauges {
  int queue_depth = 0;        // jobs waiting
  int requests_processing = 0;  // jobs running (0 or 1)
  int n_ctx = 0;
  double uptime_s = 0;
};

std::string render_prometheus(const Metrics& m, const MetricsGauges& g);

}  // namespace anelm::server
