// --log-format json: one JSON object per line whatever the message holds (quotes, newlines, controls).
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "server/log_setup.h"

namespace anelm::server {
namespace {

TEST(LogSetup, JsonLinesEscapeTheMessage) {
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  configure_logging("debug", "json");
  const std::string hostile = "GET /a\"b\nINFO forged\x01 \\ end";
  spdlog::info("{}", hostile);
  spdlog::debug("shown at debug");
  spdlog::set_default_logger(previous);
  std::istringstream lines(out.str());
  std::string line;
  ASSERT_TRUE(std::getline(lines, line));
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], hostile);
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["time"].get<std::string>().size(), 24u);  // 2026-11-24T10:00:00.123Z
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ(nlohmann::json::parse(line)["level"], "debug");
  EXPECT_FALSE(std::getline(lines, line));  // the forged newline did not split the record
}

}  // namespace
}  // namespace anelm::server
