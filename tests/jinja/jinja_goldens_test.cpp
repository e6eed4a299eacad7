// The 770 public renderings (70 real chat templates x 11 conversations) by jinja2 3.1.6 in
// transformers' chat-template environment (shared/models/chat-templates/goldens.json): every text
// byte for byte, every template-raised error with its message, every other error with its class.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/jinja/jinja_goldens_util.h"
#include "tests/support/shared_data.h"

namespace {

using anelm::jinja::testing::check_goldens;
using anelm::jinja::testing::read_file;

TEST(JinjaGoldens, AllPublicRenderingsMatchJinja2) {
  ANELM_REQUIRE_SHARED_MODEL(goldens_path, "chat-templates/goldens.json");
  const auto g = nlohmann::ordered_json::parse(read_file(goldens_path));
  const auto n = check_goldens(g, goldens_path.parent_path());
  EXPECT_EQ(n.checked, 770);
  EXPECT_EQ(n.texts, 733);
  EXPECT_EQ(n.errors, 37);
}

}  // namespace
