// Incremental stop-string matching for streamed text.
#include "server/stop_strings.h"

namespace anelm::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return {};
  pending_ += text;
  // A complete stop string anywhere in the pending text: cut at the earliest one.
  size_t cut = std::string::npos;
  for (const std::string& s : stops_) {
    size_t pos = pending_.find(s);
    if (pos != std::string::npos && pos < cut) {
      cut = pos;
      matched_ = s;
    }
  }
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    size_t max_len = std::min(s.size() - 1, pending_.size());
    for (size_t len = max_len; len > hold; --len) {
      if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopMatcher::pass(std::string_view text) {
  if (stopped_) return {};
  std::string out = std::move(pending_);
  pending_.clear();
  out += text;
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return stopped_ ? std::string() : out;
}

}  // namespace anelm::server
