// anelm render-template: one conversation through a chat template, printed exactly (no newline
// added), as transformers' apply_chat_template renders it. Exit 3 when the template raises (its
// message on stderr), 2 on any other error: scripts can tell a refused conversation from a bug.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "jinja/jinja.h"
#include "tools/cli_commands.h"

namespace anelm::tools {

namespace {

using json = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "2024-07-26T10:00:00" (the case's clock for strftime_now), read as UTC.
std::chrono::system_clock::time_point parse_now(const std::string& iso) {
  std::tm tm{};
  std::istringstream in(iso);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) throw std::runtime_error("\"now\" must look like 2024-07-26T10:00:00, got '" + iso + "'");
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

int render(int argc, char** argv) {
  cxxopts::Options options("anelm render-template", "Render one conversation with a chat template, exactly");
  options.add_options()
      ("template", "the chat template (.jinja)", cxxopts::value<std::string>())
      ("case", "a JSON case: messages, tools, add_generation_prompt, extra, now", cxxopts::value<std::string>())
      ("bos-token", "bos_token text", cxxopts::value<std::string>())
      ("eos-token", "eos_token text", cxxopts::value<std::string>())
      ("h,help", "show this help");
  const auto args = options.parse(argc, argv);
  if (args.count("help")) {
    std::fputs(options.help().c_str(), stdout);
    return 0;
  }
  if (!args.count("template") || !args.count("case")) throw std::runtime_error("--template and --case are required");
  const std::string case_path = args["case"].as<std::string>();
  json c;
  try {
    c = json::parse(read_file(case_path));
  } catch (const json::parse_error& e) {
    throw std::runtime_error(case_path + ": " + e.what());
  }
  if (!c.is_object() || !c.contains("messages") || !c["messages"].is_array())
    throw std::runtime_error(case_path + ": a case is an object with a \"messages\" array");
  // The keyword arguments in render_hf.py's order: specials, extra, messages, add_generation_prompt, tools.
  json ctx = json::object();
  if (args.count("bos-token")) ctx["bos_token"] = args["bos-token"].as<std::string>();
  if (args.count("eos-token")) ctx["eos_token"] = args["eos-token"].as<std::string>();
  if (c.contains("extra")) {
    if (!c["extra"].is_object()) throw std::runtime_error(case_path + ": \"extra\" must be an object");
    for (const auto& [k, v] : c["extra"].items()) ctx[k] = v;
  }
  ctx["messages"] = c["messages"];
  const json& agp = c.contains("add_generation_prompt") ? c["add_generation_prompt"] : json(true);
  if (!agp.is_boolean()) throw std::runtime_error(case_path + ": \"add_generation_prompt\" must be a boolean");
  ctx["add_generation_prompt"] = agp;
  if (c.contains("tools")) ctx["tools"] = c["tools"];
  const auto now = c.contains("now") && c["now"].is_string() ? parse_now(c["now"].get<std::string>())
                                                             : std::chrono::system_clock::now();
  const jinja::Template t = jinja::Template::parse(read_file(args["template"].as<std::string>()));
  const std::string text = t.render(ctx, now);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

int run_render_template(int argc, char** argv) {
  try {
    return render(argc, argv);
  } catch (const jinja::Raised& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "anelm render-template: error: %s\n", e.what());
    return 2;
  }
}

}  // namespace anelm::tools
