// /v1/embeddings request parsing and response serialisation (OpenAI shapes).
#include "server/embeddings_api.h"

#include <spdlog/spdlog.h>

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/json_body.h"

namespace anelm::server {

using nlohmann::json;

namespace {

// input nests two levels ([[ids]]) inside the body object; anything deeper is not a valid request.
constexpr int kMaxDepth = 8;

std::vector<int> token_ids(const json& a, const std::string& where) {
  if (a.empty()) throw invalid_field(where, where + " must not be empty");
  std::vector<int> ids;
  ids.reserve(a.size());
  for (const json& t : a) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int>::max())
      throw invalid_field(where, where + ": token ids must be non-negative integers");
    ids.push_back(t.get<int>());
  }
  return ids;
}

void parse_input(const json& in, EmbeddingsRequest& r) {
  if (in.is_string()) {
    if (in.get_ref<const std::string&>().empty()) throw invalid_field("input", "input must not be an empty string");
    r.texts.push_back(in.get<std::string>());
    return;
  }
  if (!in.is_array() || in.empty()) {
    throw invalid_field("input", "input must be a string, an array of strings, an array of token ids or an "
                                 "array of token-id arrays (non-empty)");
  }
  if (in.size() > EmbeddingsLimits::kMaxInputs) {
    throw invalid_field("input", "at most " + std::to_string(EmbeddingsLimits::kMaxInputs) + " inputs per request");
  }
  if (in[0].is_number()) {  // one input as token ids
    r.is_ids = true;
    r.ids.push_back(token_ids(in, "input"));
    return;
  }
  r.is_ids = in[0].is_array();
  for (size_t i = 0; i < in.size(); ++i) {
    const json& one = in[i];
    const std::string where = "input[" + std::to_string(i) + "]";
    if (r.is_ids) {
      if (!one.is_array()) throw invalid_field(where, where + " must be an array of token ids, as input[0]");
      r.ids.push_back(token_ids(one, where));
    } else {
      if (!one.is_string()) throw invalid_field(where, where + " must be a string, as input[0]");
      if (one.get_ref<const std::string&>().empty()) throw invalid_field(where, where + " must not be empty");
      r.texts.push_back(one.get<std::string>());
    }
  }
}

void append_float(std::string& out, float v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back as v
  out.append(buf, res.ptr);
}

}  // namespace

EmbeddingsRequest parse_embeddings_request(std::string_view body) {
  const json j = parse_json_body(body, kMaxDepth);
  EmbeddingsRequest r;
  for (const auto& [key, v] : j.items()) {
    if (key == "input") {
      parse_input(v, r);
    } else if (key == "encoding_format") {
      if (v.is_null()) continue;
      const std::string f = v.is_string() ? v.get<std::string>() : std::string();
      if (f != "float" && f != "base64")
        throw invalid_field("encoding_format", "encoding_format must be \"float\" or \"base64\"");
      r.base64 = f == "base64";
    } else if (key == "dimensions") {
      if (v.is_null()) continue;
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > std::numeric_limits<int>::max())
        throw invalid_field("dimensions", "dimensions must be a positive integer");
      r.dimensions = v.get<int>();
    } else if (key == "model") {
      if (!v.is_null() && !v.is_string()) throw invalid_field("model", "model must be a string");
    } else {
      // `user` and anything else have no meaning for a local server (server/http-api.md).
      spdlog::debug("embeddings request field '{}' ignored (no meaning for this server)", key);
    }
  }
  if (!j.contains("input") || j["input"].is_null()) throw invalid_field("input", "input is required");
  return r;
}

std::string base64_encode(const void* data, size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const uint8_t*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (i < n) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (i + 1 < n ? uint32_t{p[i + 1]} << 8 : 0);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string embeddings_response_body(std::span<const float> vectors, int dims, bool base64,
                                     const std::string& model, int prompt_tokens) {
  static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian float32");
  const size_t n = dims > 0 ? vectors.size() / static_cast<size_t>(dims) : 0;
  std::string out;
  out.reserve(64 + n * (64 + static_cast<size_t>(dims) * (base64 ? 6 : 14)));
  out += "{\"object\":\"list\",\"data\":[";
  for (size_t i = 0; i < n; ++i) {
    const float* v = vectors.data() + i * static_cast<size_t>(dims);
    out += i ? ",{" : "{";
    out += "\"object\":\"embedding\",\"index\":" + std::to_string(i) + ",\"embedding\":";
    if (base64) {
      out += '"';
      out += base64_encode(v, static_cast<size_t>(dims) * sizeof(float));
      out += '"';
    } else {
      out += '[';
      for (int k = 0; k < dims; ++k) {
        if (k) out += ',';
        append_float(out, v[k]);
      }
      out += ']';
    }
    out += '}';
  }
  out += "],\"model\":";
  out += json(model).dump(-1, ' ', false, json::error_handler_t::replace);
  out += ",\"usage\":{\"prompt_tokens\":" + std::to_string(prompt_tokens) +
         ",\"total_tokens\":" + std::to_string(prompt_tokens) + "}}";
  return out;
}

}  // namespace anelm::server
