// A sandboxed Jinja2 engine for chat templates: jinja2 3.1 semantics as HuggingFace transformers
// configures them for apply_chat_template (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loop controls, {% generation %}, its tojson, raise_exception, strftime_now).
// Templates are untrusted data: output size, evaluation steps, nesting depth and time are bounded.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace anelm::jinja {

struct Limits {
  int64_t max_output_bytes = 4 << 20;  // the output, and any one string a template builds
  int64_t max_items = 1 << 18;         // any one list a template builds (or iterates a string into)
  int64_t max_steps = 20'000'000;   // evaluated nodes and loop iterations
  int max_depth = 200;              // macro calls, nested expressions, statements
  int64_t max_template_bytes = 1 << 20;
  double max_ms = 2000;             // wall-clock budget of one render
};

// Any parse or render failure; the message starts with the Python error class jinja2 raises
// ("TemplateSyntaxError", "UndefinedError", "TypeError", "SecurityError", ...) and names the line.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The template called raise_exception(msg); what() is exactly msg.
class Raised : public Error {
 public:
  using Error::Error;
};

struct Program;

// Parsed once, rendered many times; render() is const and thread-safe.
class Template {
 public:
  // Throws Error (TemplateSyntaxError with the line) for malformed templates or limits.
  static Template parse(std::string_view source, const Limits& limits = {});

  // context: the keyword arguments (messages, tools, add_generation_prompt, bos_token, ...), key
  // order preserved as Python's. now: what strftime_now formats.
  std::string render(const nlohmann::ordered_json& context, std::chrono::system_clock::time_point now) const;

 private:
  std::shared_ptr<const Program> program_;
  Limits limits_;
};

}  // namespace anelm::jinja
