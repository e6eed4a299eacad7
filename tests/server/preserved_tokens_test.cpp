// A chat format's markers held by the vocabulary as control tokens (Granite 3.x's and Phi-4-mini's
// <|tool_call|> are "special" added tokens, so llama.cpp's converter writes them as CONTROL): the
// output keeps them as text and the output constraint may emit them, so a call the model opens with
// the single token reaches the client as tool_calls (llama.cpp's "preserved tokens"). Driven with
// the real Qwen2.5 tokenizer plus one control token, as a Granite vocabulary holds it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "chat/chat_format.h"
#include "server/api_request.h"
#include "server/chat_generation.h"
#include "server/chat_output.h"
#include "server/chat_prompt.h"
#include "server/generation.h"
#include "server/output_constraint.h"
#include "server/server_context.h"
#include "fake_engine.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kCallToken = "<|tool_call|>";
const chat::ChatFormat kGranite{chat::ToolSyntax::kGranite, chat::ReasoningSyntax::kNone, true, true};

class PreservedTokensTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::shared_model("qwen2.5-0.5b-instruct");
    if (!dir) GTEST_SKIP() << "shared qwen2.5-0.5b-instruct tokenizer not found";
    if (tk_) return;
    plain_ = tok::Tokenizer::from_hf_dir(dir->string());
    tok::VocabData v = plain_->vocab();
    call_id_ = static_cast<int>(v.tokens.size());
    v.tokens.emplace_back(kCallToken);
    v.types.push_back(tok::TokenType::kControl);
    v.added.push_back({call_id_, std::string(kCallToken), true});
    tk_ = tok::Tokenizer::create(std::move(v));
  }

  // The ids a model writes for a Granite call: the control token, then the JSON as text.
  std::vector<int> call_ids() const {
    std::vector<int> ids{call_id_};
    for (int id : tk_->encode(R"([{"name": "get_weather", "arguments": {"city": "Oslo"}}])", false)) ids.push_back(id);
    return ids;
  }

  // The ids through the server's text assembly and Granite's output parser.
  ChoiceOutput parse(const std::vector<int>& ids, std::vector<int> keep) const {
    chat::ParseOptions po;
    po.id_seed = 1;
    auto parser = make_chat_output_parser(kGranite, po);
    TextAssembler text(*tk_, {1}, {}, nullptr, std::move(keep));
    OutputDelta d;
    for (int id : ids) parser->feed(text.push(id), d);
    parser->feed(text.finish(), d);
    parser->finish(d, false);
    ChoiceOutput out;
    parser->result(out);
    return out;
  }

  std::shared_ptr<engine::TokenConstraint> constraint(const std::string& tool_choice,
                                                      const std::vector<int>& preserved) const {
    json body{{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "weather?"}}})}};
    body["tools"] = json::parse(R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
      "properties":{"city":{"type":"string"}},"required":["city"]}}}])");
    body["tool_choice"] = tool_choice;
    ChatRequest r = parse_chat_request(body.dump());
    const OutputConstraintSpec spec = output_constraint_for(r.gen, ChatShape{&kGranite, &r, false});
    return constraint_factory(spec, ConstraintVocab::build(*tk_, preserved), &kGranite, false)();
  }

  static inline std::unique_ptr<tok::Tokenizer> plain_, tk_;
  static inline int call_id_ = -1;
};

TEST_F(PreservedTokensTest, OnlyTheFormatsControlTokenMarkersArePreserved) {
  EXPECT_EQ(preserved_token_ids(*tk_, kGranite), std::vector<int>{call_id_});
  // <|im_start|> / <|im_end|> are control tokens too, but no Granite marker: still hidden.
  EXPECT_EQ(preserved_token_ids(*tk_, chat::ChatFormat{}), std::vector<int>{});
  // Qwen2.5's own <tool_call> is a user-defined token (already text): nothing to preserve.
  const chat::ChatFormat hermes{chat::ToolSyntax::kHermes, chat::ReasoningSyntax::kThinkTags, true, true};
  EXPECT_EQ(preserved_token_ids(*plain_, hermes), std::vector<int>{});
  EXPECT_EQ(chat::format_markers(hermes), (std::vector<std::string_view>{"<tool_call>", "</tool_call>", "<think>", "</think>"}));
}

// The server finds them from the model's own template at start-up (Granite 3.3's, from the test data)
// and builds the constraint vocabulary with them.
TEST_F(PreservedTokensTest, TheServerPreservesTheMarkersOfTheModelsTemplate) {
  auto dir = testing::shared_model("chat-templates");
  if (!dir) GTEST_SKIP() << "shared chat templates not found";
  std::ifstream in(*dir / "ibm-granite-granite-3.3-2B-Instruct.jinja");
  std::stringstream src;
  src << in.rdbuf();
  tok::VocabData v = tk_->vocab();
  v.chat_template = src.str();
  auto granite_tk = tok::Tokenizer::create(std::move(v));
  testing::FakeScript script;
  script.ctx = 8192;
  testing::FakeEngine engine(script);
  ServerContext ctx{ServerOptions{}};
  ModelRuntime rt;
  rt.engine = &engine;
  rt.tokenizer = granite_tk.get();
  ctx.set_ready(std::move(rt));
  ASSERT_EQ(ctx.model().chat->format().tools, chat::ToolSyntax::kGranite);
  EXPECT_EQ(ctx.model().preserved_tokens, std::vector<int>{call_id_});
  EXPECT_EQ(ctx.model().constraint_vocab->grammar->token_bytes(call_id_), kCallToken);
  // Per request: kept when the request's tools are parsed; without tools it stays hidden.
  json body{{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "weather?"}}})}};
  body["tools"] = json::parse(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}])");
  EXPECT_EQ(prepare_chat_generation(ctx, parse_chat_request(body.dump()), HttpRequest{}).keep_special,
            std::vector<int>{call_id_});
  body["tool_choice"] = "none";
  EXPECT_EQ(prepare_chat_generation(ctx, parse_chat_request(body.dump()), HttpRequest{}).keep_special, std::vector<int>{});
  body.erase("tools");
  body.erase("tool_choice");
  EXPECT_EQ(prepare_chat_generation(ctx, parse_chat_request(body.dump()), HttpRequest{}).keep_special, std::vector<int>{});
  ctx.drain(std::chrono::milliseconds(0));
}

TEST_F(PreservedTokensTest, ACallOpenedWithTheControlTokenReachesTheClientAsToolCalls) {
  const ChoiceOutput kept = parse(call_ids(), preserved_token_ids(*tk_, kGranite));
  ASSERT_EQ(kept.tool_calls.size(), 1u) << kept.content;
  EXPECT_EQ(kept.tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(kept.tool_calls[0].arguments), json({{"city", "Oslo"}}));
  EXPECT_EQ(kept.content, "");
  // Hidden as every other control token, the call is lost in the content (the defect this fixes).
  const ChoiceOutput hidden = parse(call_ids(), {});
  EXPECT_TRUE(hidden.tool_calls.empty());
}

TEST_F(PreservedTokensTest, TheConstraintMayEmitThePreservedToken) {
  const std::vector<int> preserved = preserved_token_ids(*tk_, kGranite);
  // Forced: the call may open with the single token (as the model was trained to), then JSON.
  auto forced = constraint("required", preserved);
  ASSERT_TRUE(forced);
  EXPECT_TRUE(forced->allows(call_id_));
  EXPECT_FALSE(forced->allows(tk_->encode("Sure", false).at(0)));
  for (int id : call_ids()) {
    ASSERT_TRUE(forced->allows(id)) << id;
    forced->accept(id);
  }
  // Without preserving it, the token is not in the grammar's vocabulary.
  EXPECT_FALSE(constraint("required", {})->allows(call_id_));
  // auto: free text until the token; the token starts the grammar, which then refuses prose.
  auto lazy = constraint("auto", preserved);
  ASSERT_TRUE(lazy);
  for (int id : tk_->encode("Let me check.", false)) lazy->accept(id);
  ASSERT_TRUE(lazy->allows(call_id_));
  lazy->accept(call_id_);
  EXPECT_FALSE(lazy->allows(tk_->encode("Sure", false).at(0))) << "the call's JSON must follow";
  EXPECT_TRUE(lazy->allows(tk_->encode("[", false).at(0)));
}

}  // namespace
}  // namespace anelm::server
