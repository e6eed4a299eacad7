// 13 further conversations (tests/data/jinja/extra_cases.json: null content with tool calls, string
// arguments, content parts, two system messages, quotes/HTML/emoji/control characters, long text,
// reasoning_content, nested tool schemas, no messages, named messages, ...) over the 70 public
// templates, rendered by the reference renderer (tests/data/jinja/README.md says how).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/jinja/jinja_goldens_util.h"
#include "tests/support/shared_data.h"

namespace {

using anelm::jinja::testing::check_goldens;
using anelm::jinja::testing::read_file;

TEST(JinjaExtraGoldens, NewConversationsMatchJinja2) {
  ANELM_REQUIRE_SHARED_MODEL(templates_probe, "chat-templates/goldens.json");
  const auto g = nlohmann::ordered_json::parse(read_file(std::filesystem::path(ANELM_SOURCE_DIR) / "tests/data/jinja/extra_goldens.json"));
  const auto n = check_goldens(g, templates_probe.parent_path());
  EXPECT_EQ(n.checked, 910);
  EXPECT_EQ(n.texts, 741);
  EXPECT_EQ(n.errors, 169);
}

}  // namespace
