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
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "hi");
  EXPECT_FALSE(r.prompts[0].is_ids);
  EXPECT_FALSE(r.gen.max_tokens.has_value());
  EXPECT_FALSE(r.gen.stream);
  EXPECT_FALSE(r.gen.seed_given);

  r = parse_completion_request(
      R"({"prompt":[1,2,3],"max_tokens":5,"temperature":0,"top_p":0.5,"top_k":4,"min_p":0.1,
          "seed":-7,"stop":["a","bb"],"stream":true,"stream_options":{"include_usage":true},
          "echo":true,"logprobs":2,"presence_penalty":1.5,"frequency_penalty":-1,
          "repetition_penalty":1.1,"n":1,"user":"u"})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_TRUE(r.prompts[0].is_ids);
  EXPECT_EQ(r.prompts[0].ids, (std::vector<int>{1, 2, 3}));
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
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "only one");
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
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":[]})"); }), "prompt");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":["a",[]]})"); }), "prompt[1]");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":["a",[1,"x"]]})"); }), "prompt[1]");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":[1,-2]})"); }), "prompt");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","max_tokens":-1})"); }), "max_tokens");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","max_tokens":"5"})"); }), "max_tokens");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","max_tokens":1e30})"); }), "max_tokens");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","temperature":3})"); }), "temperature");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","top_p":1.5})"); }), "top_p");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","n":0})"); }), "n");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","best_of":3})"); }), "best_of");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","stop":[1]})"); }), "stop");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","stop":["a","b","c","d","e"]})"); }), "stop");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","stream":"yes"})"); }), "stream");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","logprobs":9})"); }), "logprobs");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","logit_bias":{"1":500}})"); }), "logit_bias.1");
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
  // Parts stay parts (ChatPrompt joins them, or hands them to a template that iterates them).
  EXPECT_EQ(r.messages[1]["content"].dump(), R"([{"type":"text","text":"Hel"},{"type":"text","text":"lo"}])");
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
            }), "messages[0].content[0].type");
  EXPECT_EQ(error_param([] { parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"tools":[{}]})"); }),
            "tools[0].type");
  EXPECT_EQ(error_param([] {
              parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}})");
            }), "response_format.type");
  EXPECT_EQ(error_param([] { parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})"); }),
            "top_logprobs");
}

// Fields that would change the output and are not implemented are refused by name; fields with no
// meaning for a local server, and unknown ones, are accepted (and logged at debug level).
TEST(ApiRequest, UnimplementedFieldsAreRefusedUnknownOnesAccepted) {
  const std::string user = R"("messages":[{"role":"user","content":"x"}])";
  auto chat_param = [&](const std::string& extra) {
    return error_param([&] { parse_chat_request("{" + user + "," + extra + "}"); });
  };
  EXPECT_EQ(chat_param(R"("functions":[{"name":"f"}])"), "functions");
  EXPECT_EQ(chat_param(R"("function_call":"auto")"), "function_call");
  EXPECT_EQ(chat_param(R"("audio":{"voice":"alloy","format":"wav"})"), "audio");
  EXPECT_EQ(chat_param(R"("modalities":["text","audio"])"), "modalities");
  EXPECT_EQ(chat_param(R"("prediction":{"type":"content","content":"x"})"), "prediction");
  EXPECT_EQ(chat_param(R"("web_search_options":{})"), "web_search_options");
  EXPECT_EQ(chat_param(R"("tool_choice":"required")"), "tool_choice");  // without tools
  EXPECT_EQ(chat_param(R"("response_format":{"type":"json_schema","json_schema":{"schema":{},"extra":1}})"),
            "response_format.json_schema.extra");
  EXPECT_EQ(error_param([] {
              parse_chat_request(R"({"messages":[{"role":"user","content":"x","audio":{}}]})");
            }), "messages[0].audio");
  EXPECT_EQ(chat_param(R"("n":17)"), "n");
  EXPECT_EQ(chat_param(R"("chat_template_kwargs":{"messages":[]})"), "chat_template_kwargs.messages");
  EXPECT_EQ(chat_param(R"("reasoning_effort":"extreme")"), "reasoning_effort");

  // What the OpenAI SDKs and agents send that means nothing here: all accepted.
  for (const char* extra :
       {R"("store":false)", R"("metadata":{"user_id":"u"})", R"("user":"u")", R"("service_tier":"auto")",
        R"("prompt_cache_key":"k")", R"("safety_identifier":"s")", R"("verbosity":"low")",
        R"("modalities":["text"])", R"("parallel_tool_calls":true)", R"("tool_choice":"auto")",
        R"("tool_choice":"none")", R"("stream_options":{"include_usage":true,"include_obfuscation":false})",
        R"("audio":null)", R"("some_future_field":{"x":[1,2]})", R"("thinking":{"type":"adaptive"})"}) {
    EXPECT_EQ(chat_param(extra), "<none>") << extra;
  }
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"x","messages":[],"user":"u","store":true})"); }),
            "<none>");
}

// The request shapes of the coding agents (docs/agent-clients.md section 3).
TEST(ApiRequest, AgentMessageShapesAreAccepted) {
  auto r = parse_chat_request(R"({"messages":[
      {"role":"developer","content":[{"type":"text","text":"dev prompt"}]},
      {"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b"}]},
      {"role":"system","content":"env block in the middle"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"file text"}]},
      {"role":"assistant","content":"","refusal":null,"tool_calls":[{"id":"c2","type":"function","function":{"name":"read","arguments":"{\"p\":1}"}}]},
      {"role":"tool","tool_call_id":"c2","content":"more","name":"read"},
      {"role":"user","content":"go on","id":"msg_1"}],
    "tools":[{"type":"function","function":{"name":"get_goal","description":"no parameters"}},
             {"type":"function","function":{"name":"read","strict":false,"parameters":{
               "$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
               "properties":{"p":{"type":"integer","exclusiveMinimum":0,"maximum":9007199254740991}},
               "additionalProperties":false}}}],
    "tool_choice":"auto","max_completion_tokens":16384,"stream":true,"stream_options":{"include_usage":true},"store":false})");
  ASSERT_EQ(r.messages.size(), 8u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[2]["role"], "system");  // kept in place: the template decides
  EXPECT_EQ(r.messages[2]["content"], "env block in the middle");
  EXPECT_EQ(r.messages[3]["content"], "");
  EXPECT_EQ(r.messages[4]["content"][0]["text"], "file text");
  EXPECT_EQ(r.messages[5]["tool_calls"][0]["function"]["arguments"]["p"], 1);
  EXPECT_EQ(r.tools[0]["function"]["parameters"].dump(), R"({"type":"object","properties":{}})");
  EXPECT_FALSE(r.tools[1]["function"].contains("strict"));
  EXPECT_EQ(r.tools[1]["function"]["parameters"]["$schema"], "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(*r.gen.max_tokens, 16384);
  // tool_choice auto / none without tools: what no tools mean.
  EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"auto"})").tool_choice.kind,
            ToolChoice::Kind::kAuto);
  // The Responses API's flat named tool_choice works here too.
  auto named = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],
      "tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","name":"f"}})");
  EXPECT_EQ(named.tool_choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(named.tool_choice.name, "f");
}

TEST(ApiRequest, LogitBiasAddsToTheServerDefaults) {
  engine::SamplingParams defaults;
  defaults.logit_bias = {{151645, 5.0f}, {9, 1.0f}};
  using Bias = std::vector<std::pair<int, float>>;
  const std::string msgs = R"("messages":[{"role":"user","content":"x"}])";
  EXPECT_EQ(parse_chat_request("{" + msgs + "}", defaults).gen.sampling.logit_bias, defaults.logit_bias);
  EXPECT_EQ(parse_chat_request("{" + msgs + R"(,"logit_bias":{"9":-3,"4":2}})", defaults).gen.sampling.logit_bias,
            (Bias{{151645, 5.0f}, {9, -3.0f}, {4, 2.0f}}));
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x"})", defaults).gen.sampling.logit_bias, defaults.logit_bias);
}

TEST(ApiRequest, LogitBiasParsing) {
  auto r = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"15":-100,"7":2.5}})");
  ASSERT_EQ(r.gen.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r.gen.sampling.logit_bias[0], (std::pair<int, float>{15, -100.0f}));
  EXPECT_EQ(r.gen.sampling.logit_bias[1], (std::pair<int, float>{7, 2.5f}));
  auto c = parse_completion_request(R"({"prompt":"x","logit_bias":{"0":100}})");
  EXPECT_EQ(c.gen.sampling.logit_bias, (std::vector<std::pair<int, float>>{{0, 100.0f}}));
  EXPECT_TRUE(parse_completion_request(R"({"prompt":"x","logit_bias":{}})").gen.sampling.logit_bias.empty());
  auto param = [](const std::string& lb) {
    return error_param([&] { parse_completion_request(R"({"prompt":"x","logit_bias":)" + lb + "}"); });
  };
  EXPECT_EQ(param(R"({"-1":1})"), "logit_bias.-1");
  EXPECT_EQ(param(R"({"abc":1})"), "logit_bias.abc");
  EXPECT_EQ(param(R"({"99999999999":1})"), "logit_bias.99999999999");
  EXPECT_EQ(param(R"({"5":100.5})"), "logit_bias.5");
  EXPECT_EQ(param(R"({"5":"1"})"), "logit_bias.5");
  EXPECT_EQ(param(R"([[5,1]])"), "logit_bias");
  std::string big = "{";
  for (int i = 0; i < 1025; ++i) big += (i ? ",\"" : "\"") + std::to_string(i) + "\":1";
  EXPECT_EQ(param(big + "}"), "logit_bias");
}

TEST(ApiRequest, SeveralPromptsAndTheSystemExtension) {
  auto r = parse_completion_request(R"({"prompt":["a","b",[1,2]],"n":2})");
  ASSERT_EQ(r.prompts.size(), 3u);
  EXPECT_EQ(r.prompts[1].text, "b");
  EXPECT_TRUE(r.prompts[2].is_ids);
  EXPECT_EQ(r.prompts[2].ids, (std::vector<int>{1, 2}));
  auto ids = parse_completion_request(R"({"prompt":[[1],[2,3]]})");
  ASSERT_EQ(ids.prompts.size(), 2u);
  EXPECT_EQ(ids.prompts[1].ids, (std::vector<int>{2, 3}));
  std::string many = R"({"prompt":[)";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + "\"p\"";
  EXPECT_EQ(error_param([&] { parse_completion_request(many + "]}"); }), "prompt");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":["a","b","c","d","e"],"n":16})"); }), "n");

  auto s = parse_completion_request(R"({"prompt":"hello","system":"be brief"})");
  ASSERT_TRUE(s.system.has_value());
  EXPECT_EQ(*s.system, "be brief");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":["a","b"],"system":"s"})"); }), "system");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":[1,2],"system":"s"})"); }), "system");
  EXPECT_EQ(error_param([] { parse_completion_request(R"({"prompt":"a","system":1})"); }), "system");
}

TEST(ApiRequest, ReasoningEffortAndContinuationFlags) {
  const std::string user = R"("messages":[{"role":"user","content":"x"}])";
  auto chat = [&](const std::string& extra) { return parse_chat_request("{" + user + "," + extra + "}"); };
  EXPECT_EQ(chat(R"("reasoning_effort":"none")").template_kwargs["enable_thinking"], false);
  EXPECT_EQ(chat(R"("reasoning_effort":"minimal")").template_kwargs["enable_thinking"], false);
  EXPECT_EQ(chat(R"("reasoning_effort":"high")").template_kwargs["enable_thinking"], true);
  // chat_template_kwargs wins.
  EXPECT_EQ(chat(R"("reasoning_effort":"high","chat_template_kwargs":{"enable_thinking":false})")
                .template_kwargs["enable_thinking"], false);
  EXPECT_FALSE(chat(R"("n":1)").template_kwargs.contains("enable_thinking"));

  auto r = parse_chat_request(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}],
      "continue_final_message":true,"add_generation_prompt":false})");
  EXPECT_TRUE(*r.continue_final_message);
  EXPECT_FALSE(*r.add_generation_prompt);
  EXPECT_FALSE(chat(R"("n":1)").continue_final_message.has_value());
  EXPECT_EQ(error_param([] {
              parse_chat_request(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}],
                  "continue_final_message":true,"add_generation_prompt":true})");
            }), "continue_final_message");
  EXPECT_EQ(error_param([&] { chat(R"("continue_final_message":true)"); }), "continue_final_message");
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
              parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search"}]})");
            }), "tools[0].type");
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
