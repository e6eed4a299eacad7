// Table-driven malformed requests: each gets a 4xx OpenAI error and the server keeps serving.
#include <gtest/gtest.h>

#include "test_server.h"

namespace anelm::testing {
namespace {

using nlohmann::json;

struct BadCase {
  const char* name;
  const char* path;
  std::string body;
  int status;
  const char* param;  // expected error.param, nullptr: not checked
};

std::vector<BadCase> bad_cases() {
  const std::string chat = "/v1/chat/completions", comp = "/v1/completions";
  return {
      {"bad json", "/v1/completions", R"({"prompt": "a",)", 400, nullptr},
      {"not an object", "/v1/completions", R"(["prompt"])", 400, nullptr},
      {"empty body", "/v1/completions", "", 400, nullptr},
      {"missing prompt", "/v1/completions", R"({"model":"m"})", 400, "prompt"},
      {"prompt wrong type", "/v1/completions", R"({"prompt": 5})", 400, "prompt"},
      {"prompt array with an empty prompt", "/v1/completions", R"({"prompt": ["a",[]]})", 400, "prompt[1]"},
      {"prompt negative id", "/v1/completions", R"({"prompt": [1,-1]})", 400, "prompt"},
      {"prompt id out of vocab", "/v1/completions", R"({"prompt": [100000]})", 400, "prompt"},
      {"max_tokens negative", "/v1/completions", R"({"prompt":"a","max_tokens":-5})", 400, "max_tokens"},
      {"max_tokens huge", "/v1/completions", R"({"prompt":"a","max_tokens":99999999999})", 400, "max_tokens"},
      {"max_tokens string", "/v1/completions", R"({"prompt":"a","max_tokens":"10"})", 400, "max_tokens"},
      {"temperature negative", "/v1/completions", R"({"prompt":"a","temperature":-1})", 400, "temperature"},
      {"temperature huge", "/v1/completions", R"({"prompt":"a","temperature":1e308})", 400, "temperature"},
      {"top_p bool", "/v1/completions", R"({"prompt":"a","top_p":true})", 400, "top_p"},
      {"top_k negative", "/v1/completions", R"({"prompt":"a","top_k":-3})", 400, "top_k"},
      {"n too many", "/v1/completions", R"({"prompt":"a","n":17})", 400, "n"},
      {"stop number", "/v1/completions", R"({"prompt":"a","stop":7})", 400, "stop"},
      {"stream_options string", "/v1/completions", R"({"prompt":"a","stream_options":"x"})", 400,
       "stream_options"},
      {"invalid utf8", "/v1/completions", "{\"prompt\":\"\xc3\x28\"}", 400, nullptr},
      {"over-long prompt", "/v1/completions",
       json{{"prompt", std::string(300, 'x')}}.dump(), 400, "prompt"},
      {"messages missing", "/v1/chat/completions", R"({"model":"m"})", 400, "messages"},
      {"messages empty", "/v1/chat/completions", R"({"messages":[]})", 400, "messages"},
      {"message not object", "/v1/chat/completions", R"({"messages":["hi"]})", 400, "messages[0]"},
      {"unknown role", "/v1/chat/completions", R"({"messages":[{"role":"robot","content":"x"}]})", 400,
       "messages[0].role"},
      {"tool without call id", "/v1/chat/completions", R"({"messages":[{"role":"tool","content":"x"}]})", 400,
       "messages[0].tool_call_id"},
      {"content number", "/v1/chat/completions", R"({"messages":[{"role":"user","content":5}]})", 400,
       "messages[0].content"},
      {"image part", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})", 400,
       "messages[0].content[0].type"},
      {"tools given", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})", 400,
       "tools[0].function"},
      {"chat over-long", "/v1/chat/completions",
       json{{"messages", {{{"role", "user"}, {"content", std::string(400, 'y')}}}}}.dump(), 400, nullptr},
      {"tokenize no content", "/tokenize", R"({})", 400, "content"},
      {"detokenize bad ids", "/detokenize", R"({"tokens":[1,"x"]})", 400, "tokens"},
  };
}

TEST(MalformedRequests, EachGetsAn4xxErrorAndServerKeepsServing) {
  TestServer s;
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.name);
    auto r = s.client().Post(c.path, c.body, "application/json");
    ASSERT_TRUE(r) << "no response";
    EXPECT_EQ(r->status, c.status);
    json b = json::parse(r->body, nullptr, false);
    ASSERT_FALSE(b.is_discarded()) << r->body;
    ASSERT_TRUE(b.contains("error")) << r->body;
    EXPECT_TRUE(b["error"]["message"].is_string());
    EXPECT_EQ(b["error"]["type"], "invalid_request_error");
    if (c.param) {
      EXPECT_EQ(b["error"]["param"], c.param) << r->body;
    }
    auto ok = s.post("/v1/completions", {{"prompt", "ok"}});
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
  }
  EXPECT_EQ(s.engine().started.load(), static_cast<int>(bad_cases().size()));  // only the good ones ran
}

TEST(MalformedRequests, OversizedBodyIs413) {
  auto o = test_options();
  o.max_body_bytes = 64 * 1024;
  TestServer s({}, o);
  auto r = s.client().Post("/v1/completions", json{{"prompt", std::string(100 * 1024, 'a')}}.dump(),
                           "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  json b = json::parse(r->body, nullptr, false);
  ASSERT_FALSE(b.is_discarded());
  EXPECT_EQ(b["error"]["type"], "invalid_request_error");
  EXPECT_EQ(s.post("/v1/completions", {{"prompt", "ok"}})->status, 200);
}

}  // namespace
}  // namespace anelm::testing
