// libFuzzer target: the request parsers (OpenAI chat and completion, Responses, Anthropic Messages,
// llama.cpp's /completion and /infill, Ollama's chat, generate and embed, rerank, tokenize, detokenize). Only
// ApiError may escape them; what they return must serialise again.
#include <cstdint>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/anthropic_api.h"
#include "server/api_request.h"
#include "server/llamacpp_api.h"
#include "server/ollama_api.h"
#include "server/rerank_api.h"
#include "server/responses_api.h"

using namespace anelm::server;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    ChatRequest r = parse_chat_request(body);
    (void)r.messages.dump();
    (void)r.tools.dump();
    (void)r.template_kwargs.dump();
    (void)r.gen.response_format.schema.dump();
    (void)tool_names(r.tools);
  } catch (const ApiError&) {}
  try {
    CompletionRequest r = parse_completion_request(body);
    (void)r.gen.response_format.schema.dump();
  } catch (const ApiError&) {}
  try {  // the Responses API request and its translation into the chat request
    const ResponsesRequest r = parse_responses_request(body);
    (void)responses_to_chat(r, nlohmann::ordered_json::array()).messages.dump();
  } catch (const ApiError&) {}
  try {  // the Anthropic Messages request and its translation into the chat request
    const MessagesRequest r = parse_messages_request(body);
    (void)r.chat.messages.dump();
    (void)r.chat.tools.dump();
    (void)merge_system_messages(r.chat.messages).dump();
  } catch (const ApiError&) {}
  for (bool infill : {false, true}) {  // llama.cpp's own API
    try {
      const LlamaCppRequest r = parse_llamacpp_request(body, {}, infill);
      (void)r.prompt.dump();
      for (const auto& p : r.prompts) (void)p.dump();
      (void)llamacpp_generation_settings(r, r.gen.sampling, 1).dump();
    } catch (const ApiError&) {}
  }
  try {  // Ollama's API, translated into the chat request and the shared fields
    const OllamaChatRequest r = parse_ollama_chat_request(body);
    (void)r.chat.messages.dump();
    (void)r.chat.tools.dump();
    (void)r.chat.gen.response_format.schema.dump();
  } catch (const ApiError&) {}
  try {
    (void)parse_ollama_generate_request(body).template_kwargs.dump();
  } catch (const ApiError&) {}
  for (bool legacy : {false, true}) {
    try {
      (void)parse_ollama_embed_request(body, legacy);
    } catch (const ApiError&) {}
  }
  try {  // the rerank request and its response for made-up scores
    const RerankRequest r = parse_rerank_request(body);
    const std::vector<float> scores(r.documents.size(), 0.5f);
    (void)rerank_response_body(r, scores, "m", 0);
  } catch (const ApiError&) {}
  try {
    (void)parse_tokenize_request(body);
  } catch (const ApiError&) {}
  try {
    (void)parse_detokenize_request(body);
  } catch (const ApiError&) {}
  return 0;
}
