// Request fields -> grammar -> per-token constraint, driven with the real Qwen2.5 tokenizer: the
// texts a client must get are allowed token by token, others are refused, end-of-generation only
// where the grammar may end, and every refusal of a request names the field.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/output_constraint.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

using json = nlohmann::ordered_json;

class OutputConstraintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::shared_model("qwen2.5-0.5b-instruct");
    if (!dir) GTEST_SKIP() << "shared qwen2.5-0.5b-instruct tokenizer not found";
    if (!tk_) {
      tk_ = tok::Tokenizer::from_hf_dir(dir->string());
      vocab_ = ConstraintVocab::build(*tk_);
    }
  }

  std::shared_ptr<engine::TokenConstraint> make(const json& body, const chat::ChatFormat* format = nullptr,
                                                bool in_reasoning = false) {
    ChatRequest r = parse_chat_request(body.dump());
    const OutputConstraintSpec spec = output_constraint_for(r.gen, ChatShape{format, &r, in_reasoning});
    auto factory = constraint_factory(spec, vocab_, format, in_reasoning);
    return factory ? factory() : nullptr;
  }

  // Feeds `text` token by token; false at the first refused token.
  bool follows(engine::TokenConstraint& c, const std::string& text) {
    for (int id : tk_->encode(text, /*parse_special=*/true)) {
      if (!c.allows(id)) return false;
      c.accept(id);
    }
    return true;
  }
  int eos() const { return tk_->vocab().eos_id >= 0 ? tk_->vocab().eos_id : tk_->vocab().eog_ids.front(); }
  int im_end() const { return tk_->encode("<|im_end|>", true).at(0); }

  static inline std::unique_ptr<tok::Tokenizer> tk_;
  static inline std::shared_ptr<const ConstraintVocab> vocab_;
};

json chat_body() { return json{{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}}; }

json weather_tools() {
  return json::parse(R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
    "properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city"]}}},
    {"type":"function","function":{"name":"add","parameters":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}])");
}

TEST_F(OutputConstraintTest, JsonSchemaAllowsValidTextAndEndsOnlyWhenComplete) {
  json body = chat_body();
  body["response_format"] = json::parse(R"({"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object",
      "properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"],
      "additionalProperties":false}}})");
  auto c = make(body);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->allows(im_end())) << "nothing generated yet";
  ASSERT_TRUE(follows(*c, R"({"city": "Paris", "days": )"));
  EXPECT_FALSE(c->allows(tk_->encode("9", false).at(0))) << "days is at most 7";
  EXPECT_FALSE(c->allows(im_end()));
  ASSERT_TRUE(follows(*c, "3}"));
  EXPECT_TRUE(c->allows(im_end()));
  // The mask agrees with allows() on what is left: only end-of-generation (and blanks) may follow.
  std::vector<float> logits(static_cast<size_t>(tk_->vocab_size()), 0.f);
  const int n = c->mask(logits);
  EXPECT_GT(n, 0);
  EXPECT_EQ(logits[static_cast<size_t>(im_end())], 0.f);
  EXPECT_TRUE(std::isinf(logits[static_cast<size_t>(tk_->encode("a", false).at(0))]));

  auto fresh = make(body);
  EXPECT_FALSE(follows(*fresh, R"({"days": 3, "city": "Paris"})")) << "properties come in the schema's order";
  fresh = make(body);
  EXPECT_FALSE(follows(*fresh, R"({"city": "Paris", "days": 3, "x": 1})")) << "additionalProperties false";
}

TEST_F(OutputConstraintTest, ForcedToolCallsInHermesSyntax) {
  const chat::ChatFormat hermes{chat::ToolSyntax::kHermes, chat::ReasoningSyntax::kNone, true};
  json body = chat_body();
  body["tools"] = weather_tools();
  body["tool_choice"] = "required";
  auto c = make(body, &hermes);
  ASSERT_TRUE(c);
  EXPECT_TRUE(follows(*c, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"c\"}}\n</tool_call>"));
  EXPECT_TRUE(c->allows(im_end()));
  EXPECT_TRUE(follows(*c, "\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2}}\n</tool_call>")) << "parallel calls";

  auto text = make(body, &hermes);
  EXPECT_FALSE(follows(*text, "Sure")) << "required: no free text";
  auto unknown = make(body, &hermes);
  EXPECT_FALSE(follows(*unknown, "<tool_call>\n{\"name\": \"nope\"")) << "only offered tools";

  body["tool_choice"] = json{{"type", "function"}, {"function", {{"name", "add"}}}};
  auto named = make(body, &hermes);
  EXPECT_FALSE(follows(*named, "<tool_call>\n{\"name\": \"get_weather\""));
  named = make(body, &hermes);
  EXPECT_TRUE(follows(*named, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": -12}}\n</tool_call>"));
  EXPECT_FALSE(named->allows(tk_->encode("\n", false).at(0))) << "a named choice is one call";
}

TEST_F(OutputConstraintTest, AutoToolChoiceIsFreeUntilTheModelOpensACall) {
  const chat::ChatFormat hermes{chat::ToolSyntax::kHermes, chat::ReasoningSyntax::kNone, true};
  json body = chat_body();
  body["tools"] = weather_tools();
  auto c = make(body, &hermes);
  ASSERT_TRUE(c);
  EXPECT_TRUE(follows(*c, "Let me check that. Anything goes here { ] \" "));
  EXPECT_TRUE(c->allows(im_end()));
  ASSERT_TRUE(follows(*c, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {"));
  EXPECT_FALSE(c->allows(tk_->encode("]", false).at(0))) << "inside a call the arguments are constrained";
  EXPECT_FALSE(c->allows(im_end()));
}

TEST_F(OutputConstraintTest, Llama3CallsOnlyAtTheStartOfTheReply) {
  const chat::ChatFormat llama3{chat::ToolSyntax::kLlama3, chat::ReasoningSyntax::kNone, true};
  json body = chat_body();
  body["tools"] = weather_tools();
  auto text_first = make(body, &llama3);
  ASSERT_TRUE(text_first);
  EXPECT_TRUE(follows(*text_first, "Hello, here is a brace { and more ] text {\"x\": }"))
      << "a reply that began as text stays free";
  EXPECT_TRUE(text_first->allows(im_end()));
  auto call = make(body, &llama3);
  ASSERT_TRUE(follows(*call, "{\"name\": \"add\", \"parameters\": {"));
  EXPECT_FALSE(call->allows(tk_->encode("]", false).at(0))) << "a reply that opens with '{' is a constrained call";
}

TEST_F(OutputConstraintTest, ReasoningBlockMayPrecedeTheAnswer) {
  const chat::ChatFormat qwen3{chat::ToolSyntax::kHermes, chat::ReasoningSyntax::kThinkTags, true};
  json body = chat_body();
  body["response_format"] = json{{"type", "json_object"}};
  auto c = make(body, &qwen3);
  EXPECT_TRUE(follows(*c, "<think>\nThe user wants JSON.\n</think>\n\n{\"a\": [1, true]}"));
  EXPECT_TRUE(c->allows(im_end()));
  auto direct = make(body, &qwen3);
  EXPECT_TRUE(follows(*direct, "{\"a\": null}"));
  auto opened = make(body, &qwen3, /*in_reasoning=*/true);
  EXPECT_TRUE(follows(*opened, "thinking...</think>\n{}")) << "the prompt opened the block";
}

TEST_F(OutputConstraintTest, GrammarFieldAndRefusalsNameTheField) {
  json body = chat_body();
  body["grammar"] = "root ::= \"yes\" | \"no\"";
  auto c = make(body);
  EXPECT_TRUE(follows(*c, "yes"));
  EXPECT_TRUE(c->allows(im_end()));
  auto param_of = [&](const json& b, const chat::ChatFormat* f = nullptr) {
    try {
      make(b, f);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      return e.param() + ": " + e.what();
    }
    return std::string("accepted");
  };
  body["grammar"] = "root ::= undefined-rule";
  EXPECT_EQ(param_of(body).rfind("grammar: ", 0), 0u);
  body["response_format"] = json{{"type", "json_object"}};
  body["grammar"] = "root ::= \"x\"";
  EXPECT_EQ(param_of(body).rfind("grammar: ", 0), 0u) << "grammar with response_format";
  body.erase("grammar");
  body["response_format"] = json::parse(R"({"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object",
      "properties":{"a":{"type":"string","pattern":"^x"}}}}})");
  const std::string p = param_of(body);
  EXPECT_EQ(p.rfind("response_format: ", 0), 0u) << p;
  EXPECT_NE(p.find("pattern"), std::string::npos) << p;
  const chat::ChatFormat none{};
  json tools = chat_body();
  tools["tools"] = weather_tools();
  EXPECT_EQ(param_of(tools, &none).rfind("tools: ", 0), 0u) << "a template without tool syntax";
  const chat::ChatFormat hermes{chat::ToolSyntax::kHermes, chat::ReasoningSyntax::kNone, true};
  tools["tools"][0]["function"]["parameters"]["properties"]["city"]["not"] = json::object();
  tools["tool_choice"] = "required";
  const std::string where = param_of(tools, &hermes);
  EXPECT_NE(where.find("'not'"), std::string::npos) << where;
  EXPECT_NE(where.find("tools[0].function.parameters"), std::string::npos) << where;
  EXPECT_NE(where.find("/properties/city"), std::string::npos) << where;
}

TEST_F(OutputConstraintTest, MistralAndGenericShapes) {
  chat::ChatFormat mistral{chat::ToolSyntax::kMistral, chat::ReasoningSyntax::kNone, true};
  mistral.mistral_form = chat::MistralForm::kNameArgs;
  json body = chat_body();
  body["tools"] = weather_tools();
  body["tool_choice"] = "required";
  auto c = make(body, &mistral);
  EXPECT_TRUE(follows(*c, "[TOOL_CALLS]add[ARGS]{\"a\": 1}"));
  EXPECT_TRUE(c->allows(im_end()));
  const chat::ChatFormat generic{chat::ToolSyntax::kGeneric, chat::ReasoningSyntax::kNone, true};
  body["tool_choice"] = "auto";
  auto g = make(body, &generic);
  EXPECT_TRUE(follows(*g, "{\"response\": \"hello\"}")) << "generic auto: a JSON envelope with a text answer";
  auto g2 = make(body, &generic);
  EXPECT_FALSE(follows(*g2, "hello"));
}

}  // namespace
}  // namespace anelm::server
