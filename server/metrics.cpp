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
  return os.str();
}

}  // namespace anelm::server
