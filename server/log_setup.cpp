// spdlog configured once at start-up; the JSON formatter escapes the message itself.
#include "server/log_setup.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <cstdio>

namespace anelm::server {

namespace {

// {"time":"2026-11-24T10:00:00.123Z","level":"info","msg":"..."}: every byte of the message that
// JSON may not carry raw is escaped, so a hostile path in a log line cannot forge another record.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto t = std::chrono::system_clock::to_time_t(msg.time);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char head[96];
    const int n = std::snprintf(head, sizeof head, R"({"time":"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ","level":")",
                                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                                static_cast<int>(ms));
    dest.append(head, head + n);
    const auto level = spdlog::level::to_string_view(msg.level);
    dest.append(level.data(), level.data() + level.size());
    static constexpr char kMsg[] = R"(","msg":")";
    dest.append(kMsg, kMsg + sizeof kMsg - 1);
    for (char ch : msg.payload) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\') {
        dest.push_back('\\');
        dest.push_back(ch);
      } else if (c < 0x20 || c == 0x7f) {
        char esc[8];
        std::snprintf(esc, sizeof esc, "\\u%04x", c);
        dest.append(esc, esc + 6);
      } else {
        dest.push_back(ch);
      }
    }
    static constexpr char kEnd[] = "\"}\n";
    dest.append(kEnd, kEnd + sizeof kEnd - 1);
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

}  // namespace

void configure_logging(const std::string& level, const std::string& format) {
  spdlog::set_level(spdlog::level::from_str(level));
  if (format == "json") spdlog::set_formatter(std::make_unique<JsonFormatter>());
}

}  // namespace anelm::server
