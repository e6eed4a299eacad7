// Request fields -> grammar -> per-token constraint, driven with the real Qwen2.5 tokenizer: the
// texts a client must get are allowed token by token, others are refused, end-of-generation only
// where the grammar may end, and every refusal of a request names the field.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

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

// Qwen3.5 / Qwen3-Coder: the call is XML, its parameters those of the schema, typed values JSON.
TEST_F(OutputConstraintTest, ForcedToolCallsInQwenXmlSyntax) {
  const chat::ChatFormat xml{chat::ToolSyntax::kQwenXml, chat::ReasoningSyntax::kThinkTags, true};
  json body = chat_body();
  body["tools"] = weather_tools();
  body["tool_choice"] = "required";
  auto c = make(body, &xml);
  ASSERT_TRUE(c);
  EXPECT_TRUE(follows(*c, "<tool_call>\n<function=get_weather>\n<parameter=city>\nSão Paulo\n</parameter>\n"
                          "<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_TRUE(c->allows(im_end()));
  EXPECT_TRUE(follows(*c, "\n<tool_call>\n<function=add>\n<parameter=a>\n-2\n</parameter>\n</function>\n</tool_call>"))
      << "parallel calls";

  auto hermes_json = make(body, &xml);
  EXPECT_FALSE(follows(*hermes_json, "<tool_call>\n{\"name\"")) << "not the JSON form";
  auto untyped = make(body, &xml);
  EXPECT_FALSE(follows(*untyped, "<tool_call>\n<function=add>\n<parameter=a>\ntwo")) << "a is an integer";
  auto missing = make(body, &xml);
  EXPECT_FALSE(follows(*missing, "<tool_call>\n<function=get_weather>\n</function>")) << "city is required";

  // Thinking on: the prompt opened the reasoning block, the call follows its end.
  auto thinking = make(body, &xml, /*in_reasoning=*/true);
  EXPECT_TRUE(follows(*thinking, "Weather, so get_weather.\n</think>\n\n<tool_call>\n<function=add>\n"
                                 "<parameter=a>\n7\n</parameter>\n</function>\n</tool_call>"));

  body["tool_choice"] = "auto";
  auto lazy = make(body, &xml);
  EXPECT_TRUE(follows(*lazy, "Let me look that up. "));
  ASSERT_TRUE(follows(*lazy, "<tool_call>\n<function="));
  EXPECT_FALSE(follows(*lazy, "nope>")) << "inside a call only offered tools";
}

// Thinking off (Qwen3.5 with enable_thinking false renders "<think>\n\n</think>\n\n" itself): a
// forced call may not open another reasoning block, else a model that spells "<think>" reasons
// until max_tokens and the reply ends with no call.
TEST_F(OutputConstraintTest, ThinkingOffOffersNoReasoningBlockBeforeAForcedCall) {
  const chat::ChatFormat xml{chat::ToolSyntax::kQwenXml, chat::ReasoningSyntax::kThinkTags, true};
  const std::string call = "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>";
  json body = chat_body();
  body["tools"] = weather_tools();
  body["tool_choice"] = json{{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  auto allowed = make(body, &xml);
  EXPECT_TRUE(follows(*allowed, "<think>\nOslo.\n</think>\n\n" + call)) << "thinking allowed: may reason, then call";

  body["chat_template_kwargs"] = json{{"enable_thinking", false}};
  auto off = make(body, &xml);
  EXPECT_FALSE(follows(*off, "<think>")) << "enable_thinking false";
  auto off_call = make(body, &xml);
  EXPECT_TRUE(follows(*off_call, call));
  EXPECT_TRUE(off_call->allows(im_end()));
  body["tool_choice"] = "required";
  EXPECT_FALSE(follows(*make(body, &xml), "<think>")) << "required, enable_thinking false";

  // The prompt closed the block (whatever the kwargs): ChatShape::reasoning_closed.
  body.erase("chat_template_kwargs");
  ChatRequest r = parse_chat_request(body.dump());
  ChatShape closed{&xml, &r, false};
  closed.reasoning_closed = true;
  const OutputConstraintSpec spec = output_constraint_for(r.gen, closed);
  auto c = constraint_factory(spec, vocab_, &xml, false)();
  EXPECT_FALSE(follows(*c, "<think>"));
  EXPECT_TRUE(follows(*constraint_factory(spec, vocab_, &xml, false)(), call));

  EXPECT_TRUE(prompt_closes_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", xml));
  EXPECT_FALSE(prompt_closes_reasoning("<|im_start|>assistant\n<think>\n", xml));
  EXPECT_FALSE(prompt_closes_reasoning("<|im_start|>assistant\n", xml));
  const chat::ChatFormat plain{chat::ToolSyntax::kHermes, chat::ReasoningSyntax::kNone, true};
  EXPECT_FALSE(prompt_closes_reasoning("</think>\n", plain));
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
  body["response_format"] = json::parse(R"({"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":"object",
      "properties":{"a":{"type":"string","not":{"const":"x"}}}}}})");
  const std::string p = param_of(body);
  EXPECT_EQ(p.rfind("response_format: ", 0), 0u) << p;
  EXPECT_NE(p.find("'not'"), std::string::npos) << p;
  EXPECT_NE(p.find("/properties/a"), std::string::npos) << p;
  const chat::ChatFormat none{};
  json tools = chat_body();
  tools["tools"] = weather_tools();
  EXPECT_EQ(param_of(tools, &none).rfind("tools: ", 0), 0u) << "a template without tool syntax";
  const chat::ChatFormat hermes{chat::ToolSyntax::kHermes, chat::ReasoningSyntax::kNone, true};
  // A tool schema keyword the grammar cannot enforce never rejects the request (issue 28): it is
  // relaxed, named in the spec's notes, and the rest still constrains the call.
  tools["tools"][0]["function"]["parameters"]["properties"]["city"]["not"] = json::object();
  for (const char* choice : {"auto", "required"}) {
    tools["tool_choice"] = choice;
    EXPECT_EQ(param_of(tools, &hermes), "accepted") << choice;
    ChatRequest r = parse_chat_request(tools.dump());
    const OutputConstraintSpec spec = output_constraint_for(r.gen, ChatShape{&hermes, &r, false});
    ASSERT_EQ(spec.relaxed.size(), 1u) << choice;
    EXPECT_NE(spec.relaxed[0].find("'not'"), std::string::npos) << spec.relaxed[0];
    EXPECT_NE(spec.relaxed[0].find("/properties/city"), std::string::npos) << spec.relaxed[0];
  }
  auto c2 = make(tools, &hermes);
  EXPECT_FALSE(follows(*c2, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3")) << "city is still a string";
}

json schema_body(const json& schema, std::optional<bool> strict) {
  json body = chat_body();
  body["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "s"}, {"schema", schema}}}};
  if (strict) body["response_format"]["json_schema"]["strict"] = *strict;
  return body;
}

TEST_F(OutputConstraintTest, IntegerBoundsAboveTwoTo53AreExact) {
  const json schema = json::parse(R"({"type":"object","properties":{"n":{"type":"integer","minimum":9007199254740993,
      "maximum":9007199254740993},"u":{"type":"integer","exclusiveMinimum":18446744073709551614}},"required":["n","u"]})");
  for (bool strict : {true, false}) {
    auto c = make(schema_body(schema, strict));
    EXPECT_TRUE(follows(*c, R"({"n": 9007199254740993, "u": 18446744073709551615})"));
    EXPECT_TRUE(c->allows(im_end()));
    auto rounded = make(schema_body(schema, strict));
    EXPECT_FALSE(follows(*rounded, R"({"n": 9007199254740992)")) << "the double nearest the bound is not the bound";
    auto below = make(schema_body(schema, strict));
    EXPECT_FALSE(follows(*below, R"({"n": 9007199254740993, "u": 18446744073709551614)"));
  }
  // Integer const / enum values are written exactly as given.
  auto c = make(schema_body(json::parse(R"({"enum":[9007199254740993, -9223372036854775808]})"), true));
  EXPECT_TRUE(follows(*c, "9007199254740993"));
  auto c2 = make(schema_body(json::parse(R"({"enum":[9007199254740993, -9223372036854775808]})"), true));
  EXPECT_FALSE(follows(*c2, "9007199254740992"));
}

TEST_F(OutputConstraintTest, StrictRefusesWhatNonStrictRelaxes) {
  const json schema = json::parse(R"({"type":"object","properties":{"a":{"type":"integer","multipleOf":3},
      "b":{"type":"string","pattern":"^[a-c]{2}$"}},"required":["a","b"]})");
  try {
    make(schema_body(schema, true));
    ADD_FAILURE() << "strict: accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("'multipleOf'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/properties/a"), std::string::npos) << e.what();
  }
  for (std::optional<bool> strict : {std::optional<bool>(false), std::optional<bool>()}) {
    ChatRequest r = parse_chat_request(schema_body(schema, strict).dump());
    const OutputConstraintSpec spec = output_constraint_for(r.gen, ChatShape{nullptr, &r, false});
    ASSERT_EQ(spec.relaxed.size(), 1u);
    EXPECT_NE(spec.relaxed[0].find("multipleOf"), std::string::npos);
    auto c = make(schema_body(schema, strict));
    EXPECT_FALSE(follows(*c, R"({"a": 4, "b": "ad")")) << "the pattern is still enforced";
    auto ok = make(schema_body(schema, strict));
    EXPECT_TRUE(follows(*ok, R"({"a": 4, "b": "ca"})"));
    EXPECT_TRUE(ok->allows(im_end()));
  }
}

TEST_F(OutputConstraintTest, OneOfEnforcedWhenDistinctElseStrict400) {
  const json distinct = json::parse(R"({"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},
      "required":["kind","x"]},{"type":"object","properties":{"kind":{"const":"b"},"y":{"type":"string"}},"required":["kind","y"]}]})");
  auto c = make(schema_body(distinct, true));
  EXPECT_TRUE(follows(*c, R"({"kind": "b", "y": "z"})"));
  auto mixed = make(schema_body(distinct, true));
  EXPECT_FALSE(follows(*mixed, R"({"kind": "a", "y")")) << "branch a has no y";
  const json overlapping = json::parse(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})");
  try {
    make(schema_body(overlapping, true));
    ADD_FAILURE() << "strict oneOf that cannot be enforced: accepted";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("oneOf"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(make(schema_body(overlapping, false))) << "non-strict: matched as anyOf";
}

TEST_F(OutputConstraintTest, CompiledSpecsAreCachedByText) {
  clear_constraint_cache();
  const chat::ChatFormat hermes{chat::ToolSyntax::kHermes, chat::ReasoningSyntax::kNone, true};
  json body = chat_body();
  body["tools"] = weather_tools();
  ChatRequest r1 = parse_chat_request(body.dump());
  ChatRequest r2 = parse_chat_request(body.dump());
  const auto s1 = output_constraint_for(r1.gen, ChatShape{&hermes, &r1, false});
  const auto s2 = output_constraint_for(r2.gen, ChatShape{&hermes, &r2, false});
  EXPECT_EQ(s1.grammar, s2.grammar) << "the same tool list compiles once";
  EXPECT_EQ(constraint_cache_stats().hits, 1u);
  body["tool_choice"] = "required";
  ChatRequest r3 = parse_chat_request(body.dump());
  EXPECT_NE(output_constraint_for(r3.gen, ChatShape{&hermes, &r3, false}).grammar, s1.grammar) << "the mode is in the key";
  // Concurrent lookups of one key from several threads.
  std::vector<std::thread> threads;
  std::atomic<int> same{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      ChatRequest r = parse_chat_request(chat_body().dump());
      r.tools = r1.tools;
      for (int i = 0; i < 50; ++i) same += output_constraint_for(r.gen, ChatShape{&hermes, &r, false}).grammar == s1.grammar;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(same.load(), 200);
}

// How long compilation of a huge schema runs on after the client leaves (ms); throws if it was not cancelled.
double late_after_disconnect_ms() {
  clear_constraint_cache();
  // Built directly: parsing (or operator[] on) an ordered_json object of n keys costs O(n^2).
  json props = json::object();
  auto& members = static_cast<std::vector<std::pair<const std::string, json>>&>(props.get_ref<json::object_t&>());
  for (int i = 0; i < 150000; ++i) members.emplace_back("field_" + std::to_string(i), json{{"type", "integer"}, {"minimum", i}});
  ChatRequest r = parse_chat_request(schema_body({{"type", "object"}}, true).dump());
  r.gen.response_format.schema = json{{"type", "object"}, {"properties", std::move(props)}};
  std::atomic<bool> gone{false};
  std::atomic<int64_t> flipped{0};
  std::thread hangup([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    flipped = std::chrono::steady_clock::now().time_since_epoch().count();
    gone = true;
  });
  std::string what;
  try {
    output_constraint_for(r.gen, ChatShape{nullptr, &r, false}, [&] { return gone.load(); });
  } catch (const ApiError& e) {
    what = e.what();
  }
  const int64_t stopped = std::chrono::steady_clock::now().time_since_epoch().count();
  hangup.join();
  if (what.find("cancelled") == std::string::npos) throw std::runtime_error("compilation was not cancelled: " + what);
  return static_cast<double>(stopped - flipped.load()) / 1e6;
}

TEST_F(OutputConstraintTest, ClientDisconnectStopsCompilationWithin50ms) {
  // Wall time on a machine that may be running other tests: the best of three attempts counts (an
  // uncancelled compile of this schema runs for seconds, so it still fails every attempt).
  double best = 1e9;
  for (int attempt = 0; attempt < 3 && best >= 50.0; ++attempt) {
    const double late_ms = late_after_disconnect_ms();
    std::printf("[ cancel   ] compilation stopped %.2f ms after the client left\n", late_ms);
    best = std::min(best, late_ms);
  }
  EXPECT_LT(best, 50.0);
  EXPECT_EQ(constraint_cache_stats().entries, 0u) << "nothing cached from a cancelled compile";
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

// Granite 3.x and Phi-4-mini: a forced call is <|tool_call|>[PAYLOAD] (Phi-4: closed by
// <|/tool_call|>), one payload per call in the array; the turn may end only after the markup.
TEST_F(OutputConstraintTest, GraniteAndPhi4ForcedCalls) {
  for (const chat::ToolSyntax syntax : {chat::ToolSyntax::kGranite, chat::ToolSyntax::kPhi4}) {
    const chat::ChatFormat f{syntax, chat::ReasoningSyntax::kNone, true};
    const std::string close = syntax == chat::ToolSyntax::kPhi4 ? "<|/tool_call|>" : "";
    json body = chat_body();
    body["tools"] = weather_tools();
    body["tool_choice"] = json{{"type", "function"}, {"function", {{"name", "get_weather"}}}};
    auto c = make(body, &f);
    ASSERT_TRUE(follows(*c, R"(<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}])"))
        << chat::to_string(syntax);
    EXPECT_EQ(c->allows(im_end()), close.empty()) << chat::to_string(syntax);
    if (!close.empty()) {
      ASSERT_TRUE(follows(*c, close));
      EXPECT_TRUE(c->allows(im_end()));
    }
    EXPECT_FALSE(follows(*make(body, &f), R"(<tool_call>{"name": "get_weather")")) << "the model's own markup only";
    EXPECT_FALSE(follows(*make(body, &f), R"(<|tool_call|>[{"name": "add", )")) << "the named tool only";
    body["tool_choice"] = "required";
    auto r = make(body, &f);
    EXPECT_TRUE(follows(*r, R"(<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "c"}}, )"
                            R"({"name": "get_weather", "arguments": {"city": "Rome"}}])" + close))
        << "parallel calls share one array";
  }
}

}  // namespace
}  // namespace anelm::server
