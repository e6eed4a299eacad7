// Render-time state: variable scopes, output buffer, and the limits every render is held to.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "jinja/jinja.h"
#include "jinja/value.h"

namespace anelm::jinja {

class Context {
 public:
  Context(const Limits& limits, std::chrono::system_clock::time_point now);

  using Scope = std::vector<std::pair<std::string, Value>>;
  std::vector<Scope> scopes;  // [0]: globals and the render's keyword arguments

  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);  // in the innermost scope

  // Counts an evaluation step; throws Error when the step or time budget is spent.
  void step();
  // Appends to the output; throws Error past max_output_bytes.
  void write(const std::string& s);
  void check_size(size_t bytes) const;  // a string about to be built (also checks the time budget)
  void check_items(size_t items) const;  // a list about to be built

  void check_time() const;  // throws Error past max_ms

  std::string out;
  int depth = 0;  // nested macro calls and expression evaluations
  int line = 0;   // of the node being evaluated, for messages
  const Limits& limits;
  std::chrono::system_clock::time_point now;

 private:
  int64_t steps_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// Throws Error(prefix + ": " + what + " (line N)").
[[noreturn]] void fail(const Context& ctx, const std::string& prefix, const std::string& what);

}  // namespace anelm::jinja
