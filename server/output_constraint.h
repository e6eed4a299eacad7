// What a request's output must match, as a grammar: response_format (json_object / json_schema),
// llama-server's `grammar` (GBNF), and tool calls (tool_choice required / a named function:
// from the first token; auto: once the model opens a call). The engine sees only the
// TokenConstraint interface; grammars and JSON stay here.
#pragma once

#include <functional>
#include <memory>
#include <string>
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
  static std::shared_ptr<const ConstraintVocab> build(const tok::Tokenizer& tokenizer);
};

struct OutputConstraintSpec {
  std::shared_ptr<const grammar::Grammar> grammar;  // null: unconstrained
  std::string gbnf;                                 // its text (for logs and tests)
  // Lazy (tool_choice auto): free text until `trigger` is generated outside reasoning; the grammar
  // then applies from the trigger's first byte. Empty: the grammar applies from the first token.
  std::string trigger;
  bool trigger_at_start = false;  // the trigger counts only at the start of the reply (Llama 3 '{')
};

// How the chat model writes (null for /v1/completions).
struct ChatShape {
  const chat::ChatFormat* format = nullptr;
  const ChatRequest* request = nullptr;
  bool starts_in_reasoning = false;  // the prompt left a reasoning block open
};

// Throws ApiError 400 naming the field: an unsupported JSON Schema keyword (response_format...),
// a GBNF error (grammar), tools whose parameters cannot be enforced (tools), conflicting fields.
OutputConstraintSpec output_constraint_for(const GenerationFields& fields, const ChatShape& chat);

// A fresh engine::TokenConstraint per choice; empty function when the spec is unconstrained.
std::function<std::shared_ptr<engine::TokenConstraint>()> constraint_factory(
    const OutputConstraintSpec& spec, std::shared_ptr<const ConstraintVocab> vocab,
    const chat::ChatFormat* format, bool starts_in_reasoning);

}  // namespace anelm::server
