// /v1/completions logprobs over byte-fallback tokens (a byte tokenizer: every byte of a multi-byte
// character is its own token): each `tokens` entry is the token's text, or "bytes:\xNN..." when it is
// not valid UTF-8 alone, so that decoding the entries and joining them gives the text's exact bytes
// (streamed and not; top_logprobs keys alike).
#include <gtest/gtest.h>

#include <string>

#include "test_server.h"

namespace anelm::testing {
namespace {

using nlohmann::json;

// The bytes an entry stands for: "bytes:\xNN..." decoded, anything else as is.
std::string decode_entry(const std::string& e) {
  if (e.rfind("bytes:", 0) != 0) return e;
  std::string out;
  for (size_t i = 6; i < e.size(); i += 4) {
    EXPECT_EQ(e.substr(i, 2), "\\x") << e;
    out.push_back(static_cast<char>(std::stoi(e.substr(i + 2, 2), nullptr, 16)));
  }
  return out;
}

TEST(CompletionLogprobs, ByteFallbackTokensJoinBackIntoTheText) {
  const std::string reply = "a é 😀 日本 bytes:x";
  FakeScript script;
  script.reply = reply;
  TestServer s(script);
  const json req = {{"prompt", "p"}, {"max_tokens", 64}, {"logprobs", 2}};
  auto r = s.post("/v1/completions", req);
  ASSERT_EQ(r->status, 200) << r->body;
  const json c = json::parse(r->body)["choices"][0];
  ASSERT_EQ(c["text"], reply);
  const json& tokens = c["logprobs"]["tokens"];
  ASSERT_EQ(tokens.size(), reply.size());  // one token per byte
  std::string joined;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string e = tokens[i];
    const unsigned char b = static_cast<unsigned char>(reply[i]);
    if (b < 0x80) EXPECT_EQ(e, std::string(1, reply[i])) << "ASCII tokens stay plain text";
    else EXPECT_EQ(e.rfind("bytes:", 0), 0u) << e;
    EXPECT_EQ(e.find("\xEF\xBF\xBD"), std::string::npos) << "no replacement character";
    joined += decode_entry(e);
    for (const auto& [key, p] : c["logprobs"]["top_logprobs"][i].items()) {
      EXPECT_EQ(decode_entry(key).size(), 1u) << key;  // each alternative is one byte token too
    }
  }
  EXPECT_EQ(joined, reply);
  // Offsets are bytes of the text emitted before the token ("a é" is 4 bytes).
  EXPECT_EQ(c["logprobs"]["text_offset"][4], 4);

  // Streamed: the same entries, chunk by chunk.
  json sreq = req;
  sreq["stream"] = true;
  auto st = s.post("/v1/completions", sreq);
  ASSERT_EQ(st->status, 200);
  std::string streamed;
  for (const std::string& p : sse_payloads(st->body)) {
    if (p == "[DONE]") break;
    const json ch = json::parse(p)["choices"][0];
    if (ch["logprobs"].is_object())
      for (const json& e : ch["logprobs"]["tokens"]) streamed += decode_entry(e.get<std::string>());
  }
  EXPECT_EQ(streamed, reply);
}

}  // namespace
}  // namespace anelm::testing
