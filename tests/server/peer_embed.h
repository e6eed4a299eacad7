// llama.cpp as the reference of the embedding and rerank tests: the node scripts beside this file
// (peer_embed.mjs, peer_rerank.mjs) over the peer kit (../shared/peers), and the vector checks.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace anelm::testing {

// Runs tests/server/<script> on `model` with `input` (written to a JSON file) and flash attention
// `fa` ("on", "off", or "" for llama.cpp's choice); its JSON output. nullopt without the peer kit or
// node; a test failure and an empty object when the script fails.
std::optional<nlohmann::json> run_peer_script(const std::string& script, const std::string& model,
                                              const nlohmann::json& input, const std::string& fa = "");

// llama.cpp's embeddings of `texts` (raw pooled vectors, one per text; peer_embed.mjs); nullopt
// without the peer kit, {} after a test failure.
std::optional<std::vector<std::vector<float>>> peer_embed(const std::string& model, const std::vector<std::string>& texts,
                                                          const std::string& fa = "");

double cosine(const std::vector<float>& a, const std::vector<float>& b);
double l2_norm(const std::vector<float>& a);

// The vectors of an OpenAI embeddings response (float format), checking its shape; a test failure
// and {} when the request failed.
std::vector<std::vector<float>> embedding_vectors(const httplib::Result& r);

}  // namespace anelm::testing
