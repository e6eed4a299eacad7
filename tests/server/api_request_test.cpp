// Unit tests of OpenAI request parsing and per-field validation.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/api_request.h"

namespace anelm::server {
namespace {

// The param of the ApiError `fn` throws, or "<none>".
template <typename F>
std::string error_param(F fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param();
  }
  return "<none>";
}

TEST(ApiRequest, CompletionDefaultsAndFields) {
  auto r = parse_completion_request(R"({"model":"m","prompt":"hi"})");
  EXPECT_EQ(r.prompt_text, "hi");
  EXPECT_FALSE(r.prompt_is_ids);
  EXPECT_FALSE(r.gen.max_tokens.has_value());
  EXPECT_FALSE(r.gen.stream);
  EXPECT_FALSE(r.gen.seed_given);

  r = parse_completion_request(
      R"({"prompt":[1,2,3],"max_tokens":5,"temperature":0,"top_p":0.5,"top_k":4,"min_p":0.1,
          "seed":-7,"stop":["a","bb"],"stream":true,"stream_options":{"include_usage":true},
          "echo":true,"logprobs":2,"presence_penalty":1.5,"frequency_penalty":-1,
          "repetition_penalty":1.1,"n":1,"user":"u"})");
  EXPECT_TRUE(r.prompt_is_ids);
  EXPECT_EQ(r.prompt_ids, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(*r.gen.max_tokens, 5);
  EXPECT_EQ(r.gen.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r.gen.sampling.top_p, 0.5f);
  EXPECT_EQ(r.gen.sampling.top_k, 4);
  EXPECT_FLOAT_EQ(r.gen.sampling.min_p, 0.1f);
  EXPECT_TRUE(r.gen.seed_given);
  EXPECT_EQ(r.gen.sampling.seed, static_cast<uint64_t>(-7));
  EXPECT_EQ(r.gen.stop, (std::vector<std::string>{"a", "bb"}));
  EXPECT_TRUE(r.gen.stream);
  EXPECT_TRUE(r.gen.include_usage);
  EXPECT_TRUE(r.echo);
  EXPECT_TRUE(r.gen.logprobs);
  EXPECT_EQ(r.gen.top_logprobs, 2);
  EXPECT_FLOAT_EQ(r.gen.sampling.presence_penalty, 1.5f);
  EXPECT_FLOAT_EQ(r.gen.sampling.frequency_penalty, -1.0f);
  EXPECT_FLOAT_EQ(r.gen.sampling.repetition_penalty, 1.1f);
}

TEST(ApiRequest, DeeplyNestedBodiesAreRefusedBeforeParsing) {
  // 2M levels would overflow the stack in a recursive parser or copy: refused by a flat scan.
  const size_t d = 2'000'000;
  const std::string body = R"({"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"a":)" +
                           std::string(d, '[') + std::string(d, ']') + "}}";
  try {
    parse_chat_request(body);
    FAIL() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("nests deeper"), std::string::npos) << e.what();
  }
  const std::string ok = R"({"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"a":)" +
                         std::string(50, '[') + std::string(50, ']') + "}}";
  EXPECT_NO_THROW(parse_chat_request(ok));
}

TEST(ApiRequest, StopAsStringAndSingleStringArrayPrompt) {
  auto r = parse_completion_request(R"({"prompt":["only one"],"stop":"\n"})");
  EXPECT_EQ(r.prompt_text, "only one");
  EXPECT_EQ(r.gen.stop, (std::vector<std::string>{"\n"}));
}

TEST(ApiRequest, NullFieldsMeanDefaults) {
  auto r = parse_completion_request(R"({"prompt":"x","max_tokens":null,"stop":null,"seed":null})");
  EXPECT_FALSE(r.gen.max_tokens.has_value());
  EXPECT_TRUE(r.gen.stop.empty());
  EXPECT_FALSE(r.gen.seed_given);
}

TEST(ApiRequest, CompletionRejectsNamesTheField) {
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"model":"m"})"); }), "prompt");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":["a","b"]})"); }), "prompt");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":[1,-2]})"); }), "prompt");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","max_tokens":-1})"); }), "max_tokens");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","max_tokens":"5"})"); }), "max_tokens");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","max_tokens":1e30})"); }), "max_tokens");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","temperature":3})"); }), "temperature");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","top_p":1.5})"); }), "top_p");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","n":0})"); }), "n");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","unknown_field":{"x":1}})"); }),
            "unknown_field");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","best_of":3})"); }), "best_of");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","stop":[1]})"); }), "stop");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","stop":["a","b","c","d","e"]})"); }), "stop");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","stream":"yes"})"); }), "stream");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","logprobs":9})"); }), "logprobs");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","logit_bias":{"1":5}})"); }), "logit_bias");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","seed":1.5})"); }), "seed");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","model":3})"); }), "model");
  EXPECT_EQ(error_param([] { parse_completion_request(R"([1,2])"); }), "");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":)"); }), "");
}

TEST(ApiRequest, ChatMessagesAndAliases) {
  auto r = parse_chat_request(
      R"({"messages":[{"role":"developer","content":"be brief"},
                      {"role":"user","content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]},
                      {"role":"assistant","content":null,"tool_calls":[]},
                      {"role":"user","content":"again"}],
          "max_tokens":3,"max_completion_tokens":7,"logprobs":true,"top_logprobs":2})");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "Hello");
  EXPECT_EQ(r.messages[2]["content"], "");
  EXPECT_FALSE(r.messages[2].contains("tool_calls"));
  EXPECT_EQ(*r.gen.max_tokens, 7);  // max_completion_tokens wins
  EXPECT_TRUE(r.gen.logprobs);
  EXPECT_EQ(r.gen.top_logprobs, 2);
}

TEST(ApiRequest, ChatRejects) {
  EXPECT_EQ(error_param([] { parse_chat_request(R"({"messages":[]})"); }), "messages");
  EXPECT_EQ(error_param([] { parse_chat_request(R"({"messages":"hi"})"); }), "messages");
  EXPECT_EQ(error_param([] { parse_chat_request(R"({"messages":[{"role":"wizard","content":"x"}]})"); }),
            "messages[0].role");
  EXPECT_EQ(error_param([] { parse_chat_request(R"({"messages":[{"content":"x"}]})"); }), "messages[0].role");
  EXPECT_EQ(error_param([] { parse_chat_request(R"({"messages":[{"role":"user"}]})"); }), "messages[0].content");
  EXPECT_EQ(error_param([] {
              parse_chat_request(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})");
            }), "messages[0].content");
  EXPECT_EQ(error_param([] { parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"tools":[{}]})"); }),
            "tools[0].type");
  EXPECT_EQ(error_param([] {
              parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}})");
            }), "response_format.type");
  EXPECT_EQ(error_param([] { parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})"); }),
            "top_logprobs");
}

// Fields anelm does not implement are refused by name, at every level; nothing is silently ignored.
TEST(ApiRequest, UnknownFieldsAreRefusedByName) {
  const std::string user = R"("messages":[{"role":"user","content":"x"}])";
  auto chat_param = [&](const std::string& extra) {
    return error_param([&] { parse_chat_request("{" + user + "," + extra + "}"); });
  };
  EXPECT_EQ(chat_param(R"("functions":[{"name":"f"}])"), "functions");
  EXPECT_EQ(chat_param(R"("function_call":"auto")"), "function_call");
  EXPECT_EQ(chat_param(R"("modalities":["text"])"), "modalities");
  EXPECT_EQ(chat_param(R"("tool_choice":"auto")"), "tool_choice");  // without tools
  EXPECT_EQ(chat_param(R"("stream_options":{"include_usage":true,"x":1})"), "stream_options.x");
  EXPECT_EQ(chat_param(R"("response_format":{"type":"json_schema","json_schema":{"schema":{},"extra":1}})"),
            "response_format.json_schema.extra");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","messages":[]})"); }), "messages");
  EXPECT_EQ(error_param([] {
              parse_chat_request(R"({"messages":[{"role":"user","content":"x","audio":{}}]})");
            }), "messages[0].audio");
  EXPECT_EQ(chat_param(R"("n":17)"), "n");
  EXPECT_EQ(chat_param(R"("chat_template_kwargs":{"messages":[]})"), "chat_template_kwargs.messages");
}

TEST(ApiRequest, ToolsToolChoiceAndToolMessages) {
  auto r = parse_chat_request(R"({"messages":[
      {"role":"user","content":"weather?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"a\": 1}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"sunny"}],
    "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
      "properties":{"city":{"type":"string"}}}}}],
    "tool_choice":{"type":"function","function":{"name":"get_weather"}},"parallel_tool_calls":false,
    "n":2,"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"}}}})");
  ASSERT_EQ(r.messages.size(), 3u);
  // Arguments become an object for the template, in the client's key order.
  EXPECT_EQ(r.messages[1]["tool_calls"][0]["function"]["arguments"].dump(), R"({"city":"Paris","a":1})");
  EXPECT_EQ(r.messages[1]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(r.messages[2]["tool_call_id"], "call_1");
  EXPECT_EQ(tool_names(r.tools), (std::vector<std::string>{"get_weather"}));
  EXPECT_EQ(r.tool_choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(r.tool_choice.name, "get_weather");
  EXPECT_FALSE(r.parallel_tool_calls);
  EXPECT_EQ(r.gen.n, 2);
  EXPECT_EQ(r.gen.response_format.kind, ResponseFormat::Kind::kJsonSchema);
  EXPECT_EQ(r.gen.response_format.name, "w");
  const std::string with_tool = R"({"messages":[{"role":"user","content":"x"}],
      "tools":[{"type":"function","function":{"name":"f"}}],)";
  EXPECT_EQ(error_param([&] { parse_chat_request(with_tool + R"("tool_choice":{"type":"function","function":{"name":"g"}}})"); }),
            "tool_choice");
  EXPECT_EQ(error_param([&] { parse_chat_request(with_tool + R"("tool_choice":"sometimes"})"); }), "tool_choice");
  EXPECT_EQ(error_param([] {
              parse_chat_request(R"({"messages":[{"role":"tool","content":"x"}]})");
            }), "messages[0].tool_call_id");
  EXPECT_EQ(error_param([] {
              parse_chat_request(R"({"messages":[{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{oops"}}]}]})");
            }), "messages[0].tool_calls[0].function.arguments");
}

TEST(ApiRequest, InvalidUtf8IsRejected) {
  std::string body = "{\"prompt\":\"\xff\xfe\"}";
  EXPECT_EQ(error_param([&] { parse_completion_request(body); }), "");
}

TEST(ApiRequest, TokenizeAndDetokenize) {
  auto t = parse_tokenize_request(R"({"content":"abc","with_pieces":true})");
  EXPECT_EQ(t.content, "abc");
  EXPECT_TRUE(t.with_pieces);
  auto d = parse_detokenize_request(R"({"tokens":[97,98]})");
  EXPECT_EQ(d.tokens, (std::vector<int>{97, 98}));
  EXPECT_EQ(error_param([] { parse_tokenize_request(R"({"content":5})"); }), "content");
  EXPECT_EQ(error_param([] { parse_detokenize_request(R"({"tokens":["a"]})"); }), "tokens");
}

TEST(ApiError, BodyShape) {
  ApiError e = invalid_field("max_tokens", "bad");
  EXPECT_EQ(error_body(e),
            R"({"error":{"code":null,"message":"bad","param":"max_tokens","type":"invalid_request_error"}})");
  ApiError q = queue_full(2);
  EXPECT_EQ(q.status(), 429);
  EXPECT_EQ(q.retry_after_s(), 2);
}

}  // namespace
}  // namespace anelm::server
