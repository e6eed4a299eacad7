// ServerOptions: precedence CLI > config file > built-in defaults, validation, --help.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/error.h"
#include "server/server_options.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

ParsedServerArgs parse(std::vector<std::string> args) {
  args.insert(args.begin(), "serve");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_server_args(static_cast<int>(argv.size()), argv.data());
}

std::string write_config(const std::string& text) {
  auto dir = testing::make_temp_dir("server_options");
  std::string path = (dir / "server.json").string();
  std::ofstream(path) << text;
  return path;
}

TEST(ServerOptions, BuiltInDefaults) {
  std::string cfg = write_config("{}");
  auto p = parse({"--model", "m.gguf", "--config", cfg});
  EXPECT_EQ(p.options.host, "127.0.0.1");
  EXPECT_EQ(p.options.port, 8080);
  EXPECT_EQ(p.options.backend, "cpu");
  EXPECT_EQ(p.options.model, "m.gguf");
  EXPECT_EQ(p.options.cache_ram_mb, 256);
}

TEST(ServerOptions, CacheRamFromConfigAndFlagValidated) {
  std::string cfg = write_config(R"({"cache_ram_mb": 64})");
  EXPECT_EQ(parse({"--config", cfg}).options.cache_ram_mb, 64);
  EXPECT_EQ(parse({"--config", cfg, "--cache-ram", "0"}).options.cache_ram_mb, 0);  // 0 disables
  EXPECT_THROW(parse({"--config", cfg, "--cache-ram", "-1"}), Error);
  EXPECT_THROW(parse({"--config", cfg, "--cache-ram", "2000000"}), Error);
}

TEST(ServerOptions, ParallelFromConfigAndFlagValidated) {
  std::string cfg = write_config(R"({"parallel": 2})");
  EXPECT_EQ(parse({"--config", write_config("{}")}).options.parallel, 4);  // default
  EXPECT_EQ(parse({"--config", cfg}).options.parallel, 2);
  EXPECT_EQ(parse({"--config", cfg, "--parallel", "8"}).options.parallel, 8);
  for (const char* bad : {"0", "-3", "257"}) {
    try {
      parse({"--config", cfg, "--parallel", bad});
      ADD_FAILURE() << "--parallel " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--parallel must be in [1, 256]"), std::string::npos) << e.what();
    }
  }
}

TEST(ServerOptions, LogitBiasFromFlagAndConfig) {
  using Bias = std::vector<std::pair<int, float>>;
  const std::string empty = write_config("{}");
  EXPECT_TRUE(parse({"--config", empty}).options.logit_bias.empty());
  EXPECT_EQ(parse({"--config", empty, "--logit-bias", "151645+5", "--logit-bias", "7-2.5"}).options.logit_bias,
            (Bias{{151645, 5.0f}, {7, -2.5f}}));
  EXPECT_EQ(parse({"--config", empty, "--logit-bias", "1+100,2-100"}).options.logit_bias, (Bias{{1, 100.0f}, {2, -100.0f}}));
  const std::string cfg = write_config(R"({"logit_bias": ["3+1.5"]})");
  EXPECT_EQ(parse({"--config", cfg}).options.logit_bias, (Bias{{3, 1.5f}}));
  EXPECT_EQ(parse({"--config", cfg, "--logit-bias", "4-1"}).options.logit_bias, (Bias{{4, -1.0f}}));  // the flag wins
  for (const char* bad : {"151645", "+5", "x+5", "5+", "5+x", "5+101", "5-100.5", "5+nan", "5+1e999", "99999999999+1"}) {
    try {
      parse({"--config", empty, "--logit-bias", bad});
      ADD_FAILURE() << "--logit-bias " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--logit-bias must be ID+BIAS"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse({"--config", write_config(R"({"logit_bias": ["1*2"]})")}), Error);
  EXPECT_THROW(parse({"--config", write_config(R"({"logit_bias": {"1": 2}})")}), Error);
}

TEST(ServerOptions, CliOverridesConfigOverridesDefaults) {
  std::string cfg = write_config(R"({"port": 9000, "max_queue": 3, "threads": 2, "_comment": "x"})");
  auto p = parse({"--config", cfg, "--port", "9100", "--model", "m"});
  EXPECT_EQ(p.options.port, 9100);     // CLI
  EXPECT_EQ(p.options.max_queue, 3);   // config
  EXPECT_EQ(p.options.threads, 2);     // config
  EXPECT_EQ(p.options.ctx, 0);         // default
}

TEST(ServerOptions, RepositoryConfigParses) {
  ServerOptions o;
  const auto root = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
  std::ifstream in(root / "configs" / "server.json");
  ASSERT_TRUE(in.good());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  apply_config_json(o, text, "configs/server.json");
  validate_options(o);
  EXPECT_EQ(o.host, "127.0.0.1");
}

TEST(ServerOptions, Rejections) {
  std::string cfg = write_config("{}");
  EXPECT_THROW(parse({"--config", cfg, "--port", "70000"}), Error);
  EXPECT_THROW(parse({"--config", cfg, "--backend", "gpu"}), Error);
  EXPECT_THROW(parse({"--config", cfg, "--host", "0.0.0.0"}), Error);  // no API key
  EXPECT_NO_THROW(parse({"--config", cfg, "--host", "0.0.0.0", "--api-key", "k"}));
  EXPECT_THROW(parse({"--config", cfg, "--bogus"}), Error);
  EXPECT_THROW(parse({"--config", cfg, "--port", "abc"}), Error);
  EXPECT_THROW(parse({"--config", write_config(R"({"prot": 1})")}), Error);
  EXPECT_THROW(parse({"--config", write_config(R"({"port": "x"})")}), Error);
  EXPECT_THROW(parse({"--config", "/nonexistent/server.json"}), Error);
  EXPECT_THROW(parse({"--config", cfg, "--log-level", "chatty"}), Error);
  // A bad value names its flag (cxxopts alone says only "Argument 'abc' failed to parse").
  for (const auto& args : {std::vector<std::string>{"--config", cfg, "--port", "abc"},
                           std::vector<std::string>{"--config", cfg, "--port=abc"}}) {
    try {
      parse(args);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--port: invalid value 'abc'"), std::string::npos) << e.what();
    }
  }
}

TEST(ServerOptions, WeightsTakesEveryBlockType) {
  std::string cfg = write_config("{}");
  for (const char* t : {"f16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "q2_k", "q3_k", "q4_k", "q5_k",
                        "q6_k", "iq4_xs", "Q4_K"}) {
    EXPECT_EQ(parse({"--config", cfg, "--weights", t}).options.weights, t);
  }
  EXPECT_EQ(parse({"--config", write_config(R"({"weights": "q6_k"})")}).options.weights, "q6_k");
  for (const char* bad : {"q4_k_m", "f32", "q7_k"}) {
    try {
      parse({"--config", cfg, "--weights", bad});
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--weights must be f16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, "
                                                       "q2_k, q3_k, q4_k, q5_k, q6_k or iq4_xs, got '") + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(ServerOptions, AliasChatTemplateAndLogLevel) {
  std::string cfg = write_config(R"({"log_level": "warn"})");
  auto p = parse({"--config", cfg, "--alias", "qwen2.5-0.5b", "--chat-template", "t.jinja"});
  EXPECT_EQ(p.options.model_id, "qwen2.5-0.5b");
  EXPECT_EQ(p.options.chat_template, "t.jinja");
  EXPECT_EQ(p.options.log_level, "warn");  // config
  EXPECT_EQ(parse({"--config", cfg, "--log-level", "debug"}).options.log_level, "debug");
}

TEST(ServerOptions, HelpListsFlags) {
  auto p = parse({"--help"});
  EXPECT_TRUE(p.show_help);
  for (const char* flag : {"--model", "--host", "--port", "--backend", "--threads", "--ctx", "--api-key",
                           "--max-queue", "--config"})
    EXPECT_NE(p.help.find(flag), std::string::npos) << flag;
}

}  // namespace
}  // namespace anelm::server
