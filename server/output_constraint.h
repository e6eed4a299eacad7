// What a request's output must match, as a grammar: response_format (json_object / json_schema),
// llama-server's `grammar` (GBNF), and tool calls (tool_choice required / a named function:
// from the first token; auto: once the model opens a call). The engine sees only the
// TokenConstraint interface; grammars and JSON stay here.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_format.h"
#include "engine/generation.h"
#include "grammar/grammar.h"
#include "server/api_request.h"
#include "tokenizer/tokenizer.h"

namespace anelm::server {

// The vocabulary as the grammar sees it, built once per model.
struct ConstraintVocab {
  std::shared_ptr<const grammar::Vocab> grammar;  // also each token's output bytes (empty for special tokens)
  // `preserved`: special ids the output keeps as text (preserved_token_ids): usable by their text.
  static std::shared_ptr<const ConstraintVocab> build(const tok::Tokenizer& tokenizer,
                                                      const std::vector<int>& preserved = {});
};

struct OutputConstraintSpec {
  std::shared_ptr<const grammar::Grammar> grammar;  // null: unconstrained
  std::string gbnf;                                 // its text (for logs and tests)
  // Lazy (tool_choice auto): free text until `trigger` is generated outside reasoning; the grammar
  // then applies from the trigger's first byte. Empty: the grammar applies from the first token.
  std::string trigger;
  bool trigger_at_start = false;  // the trigger counts only at the start of the reply (Llama 3 '{')
  // Schema keywords dropped because the grammar cannot enforce them (non-strict schemas and tools),
  // one note per keyword and path; logged when the spec is compiled.
  std::vector<std::string> relaxed;
};

// Limits of one constraint compilation (besides the grammar limits in grammar/grammar.h).
inline constexpr int kConstraintCompileMs = 5000;   // past this: 400 "grammar too costly"
inline constexpr size_t kConstraintCacheEntries = 64;
inline constexpr size_t kConstraintCacheKeyBytes = 64u << 20;  // request text held by the cache

// How the chat model writes (null for /v1/completions).
struct ChatShape {
  const chat::ChatFormat* format = nullptr;
  const ChatRequest* request = nullptr;
  bool starts_in_reasoning = false;  // the prompt left a reasoning block open
  // The prompt already holds the reply's (empty) reasoning block, e.g. Qwen3 with enable_thinking
  // false renders "<think>\n\n</think>\n\n": the reply is the answer, no block may open. A request
  // with chat_template_kwargs.enable_thinking false counts as closed too.
  bool reasoning_closed = false;
};

// True when a rendered prompt ends (ignoring whitespace) with the format's reasoning close marker:
// the template closed the reply's reasoning block itself. Use it for ChatShape::reasoning_closed.
bool prompt_closes_reasoning(std::string_view rendered_prompt, const chat::ChatFormat& format);

// Throws ApiError 400 naming the field: an unsupported JSON Schema keyword under
// response_format.json_schema.strict, a GBNF error (grammar), a grammar over a size limit or over
// kConstraintCompileMs, conflicting fields. Tool schemas and non-strict response schemas never fail
// on an unsupported keyword: it is dropped and logged (spec.relaxed).
// Compilation is linear in the request and polls `cancelled` (HttpRequest::client_gone) every few
// milliseconds, stopping with an ApiError once it is true. Compiled specs are cached (bounded LRU,
// thread-safe) keyed by the exact schema / grammar / tools text and mode, so an agent's tool list
// is compiled once.
OutputConstraintSpec output_constraint_for(const GenerationFields& fields, const ChatShape& chat,
                                           const std::function<bool()>& cancelled = {});

// The cache's counters (tests, metrics).
struct ConstraintCacheStats {
  size_t hits = 0, misses = 0, entries = 0;
};
ConstraintCacheStats constraint_cache_stats();
void clear_constraint_cache();

// A fresh engine::TokenConstraint per choice; empty function when the spec is unconstrained.
std::function<std::shared_ptr<engine::TokenConstraint>()> constraint_factory(
    const OutputConstraintSpec& spec, std::shared_ptr<const ConstraintVocab> vocab,
    const chat::ChatFormat* format, bool starts_in_reasoning);

}  // namespace anelm::server
