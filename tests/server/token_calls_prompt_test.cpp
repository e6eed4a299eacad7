// Granite 3.3 and Phi-4-mini through ChatPrompt: their templates render only a message's content,
// so an OpenAI conversation with tool_calls (and, for Phi-4-mini, the request's tools) must render
// exactly as the model's documented usage does under transformers (tests/chat/data/
// token_call_goldens.json, made by make_token_call_goldens.py with the reference renderer).

#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

using json = nlohmann::ordered_json;

using ::anelm::testing::read_file;

const std::filesystem::path kData = std::filesystem::path(ANELM_SOURCE_DIR) / "tests/chat/data";

TEST(TokenCallsPrompt, OpenAiConversationsRenderAsTheDocumentedUsage) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "chat-templates");
  const json goldens = json::parse(read_file(kData / "token_call_goldens.json"));
  ASSERT_EQ(goldens.size(), 3u);
  for (const json& g : goldens) {
    const std::string tname = g["template"];
    const std::filesystem::path path = tname.find("Phi-4") != std::string::npos ? kData / tname : dir / tname;
    tok::VocabData v;
    const ChatPrompt p(read_file(path), "model", v);
    EXPECT_FALSE(p.tools_in_system_prompt()) << tname;
    const json& c = g["openai"];
    const std::string got = p.render(c["messages"], c.value("tools", json::array()), true, json::object());
    EXPECT_EQ(got, g["text"].get<std::string>()) << g["name"];
    // The request parser hands arguments over as JSON objects: printed back as json.dumps does.
    json parsed = c["messages"];
    for (json& m : parsed)
      if (m.contains("tool_calls"))
        for (json& tc : m["tool_calls"]) tc["function"]["arguments"] = json::parse(tc["function"]["arguments"].get<std::string>());
    EXPECT_EQ(p.render(parsed, c.value("tools", json::array()), true, json::object()), g["text"].get<std::string>())
        << g["name"] << " (arguments as objects)";
  }
}

TEST(TokenCallsPrompt, Phi4WithoutToolsAddsNothing) {
  tok::VocabData v;
  const ChatPrompt p(read_file(kData / "microsoft-Phi-4-mini-instruct.jinja"), "model", v);
  EXPECT_EQ(p.format().tools, chat::ToolSyntax::kPhi4);
  const json msgs = json::array({{{"role", "user"}, {"content", "Hi"}}});
  EXPECT_EQ(p.render(msgs, json::array(), true, json::object()), "<|user|>Hi<|end|><|assistant|>");
  // A call without a function name is the request's fault.
  const json bad = json::array({{{"role", "user"}, {"content", "Hi"}},
                                {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({{{"id", "x"}}})}}});
  EXPECT_THROW(p.render(bad, json::array(), true, json::object()), ApiError);
}

}  // namespace
}  // namespace anelm::server
