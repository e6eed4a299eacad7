// SSE framing and the OpenAI chunk/body serialisers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/api_response.h"
#include "server/sse.h"

namespace anelm::server {
namespace {

using nlohmann::json;

TEST(Sse, Framing) {
  EXPECT_EQ(sse_data("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  EXPECT_EQ(sse_comment("ping"), ": ping\n\n");
  EXPECT_EQ(sse_comment("a\nb"), ": a b\n\n");  // a comment can never end the event early
  std::string err = sse_error(internal_error("boom"));
  EXPECT_EQ(err.rfind("data: {\"error\":", 0), 0u);
  EXPECT_EQ(err.substr(err.size() - 2), "\n\n");
}

// The JSON of one "data: ..." SSE frame.
std::string payload(const std::string& frame) {
  EXPECT_EQ(frame.rfind("data: ", 0), 0u) << frame;
  EXPECT_EQ(frame.substr(frame.size() - 2), "\n\n");
  return frame.substr(6, frame.size() - 8);
}

ChoiceOutput finished(const std::string& reason) {
  ChoiceOutput c;
  c.finish_reason = reason;
  return c;
}

OutputDelta content(const std::string& text) {
  OutputDelta d;
  d.content = text;
  return d;
}

std::vector<ChoiceOutput> one(const std::string& text, const std::string& reason,
                              std::vector<TokenLogprob> lps = {}) {
  ChoiceOutput c;
  c.content = text;
  c.finish_reason = reason;
  c.logprobs = std::move(lps);
  return {c};
}

TEST(Sse, PayloadNewlinesAreEscaped) {
  auto ser = make_completion_serializer({"cmpl-1", 5, "m", false, false});
  std::string p = payload(ser->delta(0, content("a\nb\n\n"), {}));
  EXPECT_EQ(p.find('\n'), std::string::npos);
  EXPECT_EQ(json::parse(p)["choices"][0]["text"], "a\nb\n\n");
}

TEST(Serializer, CompletionChunkAndBody) {
  auto ser = make_completion_serializer({"cmpl-1", 5, "m", true, false});
  EXPECT_EQ(ser->choice_start(0), "");
  json c = json::parse(payload(ser->delta(0, content("hi"), {})));
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["id"], "cmpl-1");
  EXPECT_EQ(c["created"], 5);
  EXPECT_EQ(c["model"], "m");
  EXPECT_TRUE(c["usage"].is_null());
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(c["choices"][0].contains("logprobs"));
  json f = json::parse(payload(ser->choice_end(0, finished("length"))));
  EXPECT_EQ(f["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(f["choices"][0]["text"], "");
  const std::string end = ser->stream_end({3, 2, 0});
  ASSERT_GT(end.size(), sse_done().size());
  EXPECT_EQ(end.substr(end.size() - sse_done().size()), sse_done());  // the usage chunk, then [DONE]
  json u = json::parse(payload(end.substr(0, end.size() - sse_done().size())));
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 5);
  json b = json::parse(ser->body(one("hello", "stop"), {3, 2, 1}));
  EXPECT_EQ(b["choices"][0]["text"], "hello");
  EXPECT_EQ(b["choices"][0]["index"], 0);
  EXPECT_EQ(b["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(b["usage"]["completion_tokens"], 2);
  EXPECT_EQ(b["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
}

TEST(Serializer, ChatChunkOrderShapes) {
  auto ser = make_chat_serializer({"chatcmpl-1", 7, "m", false, false});
  json first = json::parse(payload(ser->choice_start(0)));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_FALSE(first.contains("usage"));  // only with include_usage
  json d = json::parse(payload(ser->delta(0, content("Hi"), {})));
  EXPECT_FALSE(d["choices"][0]["delta"].contains("role"));
  EXPECT_EQ(d["choices"][0]["delta"]["content"], "Hi");
  json f = json::parse(payload(ser->choice_end(0, finished("stop"))));
  EXPECT_EQ(ser->stream_end({}), sse_done());  // no usage chunk without include_usage
  EXPECT_TRUE(f["choices"][0]["delta"].empty());
  EXPECT_EQ(f["choices"][0]["finish_reason"], "stop");
  json b = json::parse(ser->body(one("Hi", "length"), {1, 1, 0}));
  EXPECT_EQ(b["object"], "chat.completion");
  EXPECT_EQ(b["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(b["choices"][0]["message"]["content"], "Hi");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "length");
}

TEST(Serializer, LogprobsShapes) {
  std::vector<TokenLogprob> lps = {{"a", -0.5f, {{"a", -0.5f}, {"b", -1.5f}}, 0, -1, {}}};
  auto comp = make_completion_serializer({"c", 1, "m", false, true});
  json b = json::parse(comp->body(one("a", "stop", lps), {}));
  EXPECT_EQ(b["choices"][0]["logprobs"]["tokens"][0], "a");
  EXPECT_EQ(b["choices"][0]["logprobs"]["top_logprobs"][0]["b"], -1.5);
  EXPECT_EQ(b["choices"][0]["logprobs"]["text_offset"][0], 0);
  auto chat = make_chat_serializer({"c", 1, "m", false, true});
  json cb = json::parse(chat->body(one("a", "stop", lps), {}));
  EXPECT_EQ(cb["choices"][0]["logprobs"]["content"][0]["bytes"][0], 97);
  EXPECT_EQ(cb["choices"][0]["logprobs"]["content"][0]["top_logprobs"][1]["token"], "b");
}

// Tool calls and reasoning as OpenAI (and llama-server's reasoning_content) shape them.
TEST(Serializer, ChatToolCallsReasoningAndChoices) {
  auto ser = make_chat_serializer({"c", 1, "m", false, false});
  OutputDelta d;
  d.reasoning = "think";
  d.tool_calls = {{0, "call_1", "get_weather", "{\"ci"}, {0, "", "", "ty\"}"}};
  json chunk = json::parse(payload(ser->delta(1, d, {})));
  EXPECT_EQ(chunk["choices"][0]["index"], 1);
  const json& delta = chunk["choices"][0]["delta"];
  EXPECT_EQ(delta["reasoning_content"], "think");
  EXPECT_FALSE(delta.contains("content"));
  EXPECT_EQ(delta["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(delta["tool_calls"][0]["type"], "function");
  EXPECT_EQ(delta["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_FALSE(delta["tool_calls"][1].contains("id"));
  EXPECT_FALSE(delta["tool_calls"][1]["function"].contains("name"));
  EXPECT_EQ(delta["tool_calls"][1]["index"], 0);
  std::vector<ChoiceOutput> cs(2);
  cs[0].tool_calls = {{"call_1", "get_weather", "{\"city\":\"Paris\"}"}};
  cs[0].finish_reason = "tool_calls";
  cs[1].content = "plain";
  cs[1].reasoning = "because";
  cs[1].finish_reason = "stop";
  json b = json::parse(ser->body(cs, {}));
  ASSERT_EQ(b["choices"].size(), 2u);
  EXPECT_TRUE(b["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(b["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Paris\"}");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(b["choices"][1]["index"], 1);
  EXPECT_EQ(b["choices"][1]["message"]["reasoning_content"], "because");
}

TEST(Serializer, InvalidUtf8IsReplacedNotThrown) {
  auto ser = make_completion_serializer({"c", 1, "m", false, false});
  json b = json::parse(ser->body(one("ok\xff", "stop"), {}));
  EXPECT_EQ(b["choices"][0]["text"], "ok\xef\xbf\xbd");
}

TEST(Serializer, ResponseIdsAreUnique) {
  EXPECT_NE(make_response_id("cmpl-"), make_response_id("cmpl-"));
  EXPECT_EQ(make_response_id("chatcmpl-").rfind("chatcmpl-", 0), 0u);
}

}  // namespace
}  // namespace anelm::server
