// Incremental stop-string matcher over decoded text: holds back partial matches, never emits a stop.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace anelm::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends `text`; returns the text that is now safe to emit. After a stop string is found,
  // stopped() is true, the returned text ends just before it, and later pushes return "".
  std::string push(std::string_view text);
  // Text where stop strings do not apply (inside a constrained tool call): returns the held-back
  // text, which can no longer complete a match, then `text`. Matching starts afresh after it.
  std::string pass(std::string_view text);
  // At the end of generation: the held-back text (a partial match that never completed).
  std::string flush();
  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }  // the stop string found

 private:
  std::vector<std::string> stops_;
  std::string pending_;   // text not yet emitted (a possible prefix of a stop string)
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace anelm::server
