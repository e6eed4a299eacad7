// The chat generation flow shared by every chat-shaped API (chat completions, Responses, Messages):
// render the template, tokenize, constrain, parse the model's syntax. Each API translates its
// request into a ChatRequest, calls prepare_chat_generation, and runs it with its own serializer.
#pragma once

#include <string>
#include <vector>

#include "server/api_request.h"
#include "server/generation.h"
#include "server/http_types.h"
#include "server/server_context.h"

namespace anelm::server {

// The rendered prompt and its token ids (BOS added when the model wants one).
struct ChatPromptTokens {
  std::string text;
  std::vector<int> ids;
};

ChatPromptTokens tokenize_chat_prompt(ServerContext& ctx, const ChatRequest& r);

// The generation for a plain-text prompt (completions, llama.cpp's /completion and /infill): the
// shared fields, limits for the prompt (`default_max` < 0: up to the context end; `prompt_param`
// names the prompt in errors), and the grammar / json_schema constraint.
PreparedGeneration prepare_text_generation(ServerContext& ctx, const GenerationFields& f, std::vector<int> prompt,
                                           int default_max, const char* prompt_param, const HttpRequest& req);
// The same for several prompts (at least one; each non-empty, else a 400 naming prompt_param[i]):
// one job per prompt and choice, the limits set for the longest.
PreparedGeneration prepare_text_generation(ServerContext& ctx, const GenerationFields& f,
                                           std::vector<std::vector<int>> prompts, int default_max,
                                           const char* prompt_param, const HttpRequest& req);

// The model's BOS first when it wants one and `ids` does not already start with it.
void maybe_add_bos(const tok::Tokenizer& tk, std::vector<int>& ids);

// The generation for a validated chat request: prompt, sampling, output constraint and parser.
PreparedGeneration prepare_chat_generation(ServerContext& ctx, const ChatRequest& r, const HttpRequest& req);

}  // namespace anelm::server
