#include "tests/jinja/jinja_goldens_util.h"

#include <ctime>
#include <fstream>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>

#include <gtest/gtest.h>

#include "jinja/jinja.h"

namespace anelm::jinja::testing {

namespace {

using nlohmann::ordered_json;

std::chrono::system_clock::time_point parse_now(const std::string& iso) {
  std::tm tm{};
  std::istringstream in(iso);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

// render_hf.py's keyword arguments: the specials, the case's extra, messages, add_generation_prompt, tools.
ordered_json context_for(const ordered_json& c, const ordered_json& specials) {
  ordered_json ctx = specials;
  if (c.contains("extra"))
    for (const auto& [k, v] : c["extra"].items()) ctx[k] = v;
  ctx["messages"] = c["messages"];
  ctx["add_generation_prompt"] = c.value("add_generation_prompt", true);
  if (c.contains("tools")) ctx["tools"] = c["tools"];
  return ctx;
}

std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace


GoldenCounts check_goldens(const ordered_json& g, const std::filesystem::path& template_dir) {
  std::map<std::string, ordered_json> cases;
  for (const auto& c : g["cases"]) cases[c["name"].get<std::string>()] = c;
  std::map<std::string, std::optional<Template>> templates;
  GoldenCounts n;
  for (const auto& row : g["goldens"]) {
    const std::string name = row["template"], case_name = row["case"];
    const std::string where = name + " / " + case_name;
    auto& t = templates[name];
    if (!t) {
      try {
        t = Template::parse(read_file(template_dir / name));
      } catch (const Error& e) {
        ADD_FAILURE() << name << ": does not parse: " << e.what();
        continue;
      }
    }
    const ordered_json& c = cases.at(case_name);
    const ordered_json ctx = context_for(c, row["specials"]);
    std::string text, error;
    bool raised = false;
    try {
      text = t->render(ctx, parse_now(c.value("now", "2024-07-26T10:00:00")));
    } catch (const Raised& e) {
      raised = true;
      error = e.what();
    } catch (const Error& e) {
      error = e.what();
    }
    ++n.checked;
    if (row.contains("text")) {
      ++n.texts;
      EXPECT_EQ(error, "") << where;
      const std::string want = row["text"];
      if (error.empty() && text != want) {
        size_t at = 0;
        while (at < text.size() && at < want.size() && text[at] == want[at]) ++at;
        const size_t from = at < 60 ? 0 : at - 60;
        ADD_FAILURE() << where << ": differs at byte " << at << "\n  got:  " << quoted(text.substr(from, 160))
                      << "\n  want: " << quoted(want.substr(from, 160));
      }
    } else {
      ++n.errors;
      const std::string want = row["error"];
      const std::string prefix = "raise_exception: ";
      if (want.rfind(prefix, 0) == 0) {
        EXPECT_TRUE(raised) << where << ": got '" << error << "' text '" << text.substr(0, 200) << "'";
        EXPECT_EQ(error, want.substr(prefix.size())) << where;
      } else {
        EXPECT_FALSE(raised) << where;
        // jinja2's class and message; ours adds the template line.
        EXPECT_EQ(error.substr(0, want.size()), want) << where;
      }
    }
  }
  return n;
}

}  // namespace anelm::jinja::testing
