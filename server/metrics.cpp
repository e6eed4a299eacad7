// Prometheus text exposition (format 0.0.4) of the server metrics, written by hand.
#include "server/metrics.h"

#include <sstream>

namespace anelm::server {

namespace {

void series(std::ostringstream& os, const char* name, const char* type, const char* help,
            double value) {
  os << "# HELP anelm_" << name << ' ' << help << '\n'
     << "# TYPE anelm_" << name << ' ' << type << '\n'
     << "anelm_" << name << ' ' << value << '\n';
}

double rate(int64_t tokens, int64_t us) { return us > 0 ? tokens * 1e6 / static_cast<double>(us) : 0.0; }

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(new std::atomic<int64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i] = 0;
}

void Histogram::observe(double seconds) {
  size_t b = 0;
  while (b < bounds_.size() && seconds > bounds_[b]) ++b;
  counts_[b]++;
  count_++;
  sum_us_ += static_cast<int64_t>(seconds * 1e6);
}

void Histogram::render(std::ostringstream& os, const char* name, const char* help) const {
  os << "# HELP anelm_" << name << ' ' << help << '\n' << "# TYPE anelm_" << name << " histogram\n";
  int64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i].load();
    os << "anelm_" << name << "_bucket{le=\"";
    if (i < bounds_.size()) os << bounds_[i];
    else os << "+Inf";
    os << "\"} " << cumulative << '\n';
  }
  os << "anelm_" << name << "_sum " << static_cast<double>(sum_us_.load()) / 1e6 << '\n';
  os << "anelm_" << name << "_count " << count_.load() << '\n';
}

void RouteCounters::add(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  counts_[{route, status}]++;
}

void RouteCounters::render(std::ostringstream& os) const {
  os << "# HELP anelm_http_requests_total HTTP requests answered, by route and status.\n"
     << "# TYPE anelm_http_requests_total counter\n";
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, n] : counts_)
    os << "anelm_http_requests_total{route=\"" << key.first << "\",status=\"" << key.second << "\"} " << n << '\n';
}

std::string render_prometheus(const Metrics& m, const MetricsGauges& g) {
  std::ostringstream os;
  os.precision(10);
  series(os, "requests_total", "counter", "HTTP requests answered.", m.requests_total.load());
  series(os, "requests_errors_total", "counter", "HTTP requests answered with a 4xx/5xx status.",
         m.requests_errors_total.load());
  series(os, "generations_total", "counter", "Generation jobs finished.", m.generations_total.load());
  series(os, "generations_cancelled_total", "counter", "Generation jobs cancelled.",
         m.generations_cancelled.load());
  series(os, "queue_rejections_total", "counter", "Requests refused because the queue was full.",
         m.queue_rejections.load());
  series(os, "prompt_tokens_total", "counter", "Prompt tokens processed.", m.prompt_tokens_total.load());
  series(os, "tokens_predicted_total", "counter", "Completion tokens generated.",
         m.completion_tokens_total.load());
  series(os, "prompt_tokens_seconds", "gauge", "Average prefill throughput in tokens/s.",
         rate(m.prefill_tokens_total.load(), m.prefill_us_total.load()));
  series(os, "predicted_tokens_seconds", "gauge", "Average decode throughput in tokens/s.",
         rate(m.completion_tokens_total.load(), m.decode_us_total.load()));
  series(os, "queue_depth", "gauge", "Jobs waiting for the engine.", g.queue_depth);
  series(os, "requests_processing", "gauge", "Jobs running on the engine.", g.requests_processing);
  series(os, "n_ctx", "gauge", "Context size in tokens.", g.n_ctx);
  series(os, "uptime_seconds", "gauge", "Seconds since start.", g.uptime_s);
  m.time_to_first_token.render(os, "time_to_first_token_seconds", "Time from request arrival to its first token.");
  m.time_per_output_token.render(os, "time_per_output_token_seconds", "Decode time per generated token, per job.");
  m.request_duration.render(os, "request_duration_seconds", "Time from arrival to the end of the response.");
  m.queue_wait.render(os, "queue_wait_seconds", "Time a job waited for the engine.");
  m.routes.render(os);
  return os.str();
}

}  // namespace anelm::server
