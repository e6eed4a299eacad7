// libFuzzer target: chat templates. Each input is a template, parsed and rendered against a fixed
// conversation (system, user, assistant with a tool call, tool result, user; one tool; generation
// prompt). Only jinja::Error (and its Raised) may escape; tighter limits keep each run short.
#include <chrono>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "jinja/jinja.h"

using namespace anelm;

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json c = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "Weather in Paris? <b>&amp;</b> \u00e9\u6f22"},
      {"role": "assistant", "content": "", "reasoning_content": "Look it up.",
       "tool_calls": [{"id": "call_1", "type": "function",
                       "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21}"},
      {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Forecast",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "array"}},
                     "required": ["city"]}}}],
    "add_generation_prompt": true,
    "enable_thinking": false,
    "bos_token": "<s>",
    "eos_token": "</s>"
  })");
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  jinja::Limits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_items = 1 << 12;
  limits.max_steps = 200'000;
  limits.max_ms = 500;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    const jinja::Template t = jinja::Template::parse(source, limits);
    (void)t.render(context(), std::chrono::system_clock::time_point(std::chrono::seconds(1700000000)));
  } catch (const jinja::Error&) {}
  return 0;
}
