// Tests download_file against a loopback HTTP server: success, 404/500, truncation, redirects.
#include "server/downloader.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/server/download_fake_hub.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

namespace fs = std::filesystem;
using anelm::testing::FakeHub;
using anelm::testing::fake_bytes;

using ::anelm::testing::read_file;

using ::anelm::testing::has_part_files;
using ::anelm::testing::write_file;

class DownloaderTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = anelm::testing::make_temp_dir("downloader"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string url(const std::string& repo, const std::string& file) const {
    return hub_.endpoint() + "/" + repo + "/resolve/main/" + file;
  }

  FakeHub hub_{[](httplib::Server& svr) {
    svr.Get("/redirect/weights", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/org/model/resolve/main/weights.bin");
    });
    svr.Get("/status/500", [](const httplib::Request&, httplib::Response& res) {
      res.status = 500;
      res.set_content("internal\nfailure\x1b[31m", "text/plain");
    });
    svr.Get("/chunked", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("application/octet-stream",
                                       [](size_t offset, httplib::DataSink& sink) {
                                         if (offset >= 3000) {
                                           sink.done();
                                           return true;
                                         }
                                         std::string block(1000, static_cast<char>('a' + offset / 1000));
                                         sink.write(block.data(), block.size());
                                         return true;
                                       });
    });
  }};
  fs::path dir_;
};

TEST_F(DownloaderTest, DownloadsByteIdenticalFileAndReportsProgress) {
  const std::string body = fake_bytes(300 * 1024 + 17, 1);
  hub_.add("org/model", "weights.bin", body);
  std::vector<std::pair<int64_t, int64_t>> calls;
  DownloadOptions opts;
  opts.progress = [&](const std::string& file, int64_t done, int64_t total) {
    EXPECT_EQ(file, "weights.bin");
    calls.emplace_back(done, total);
  };
  const fs::path dest = dir_ / "sub" / "weights.bin";
  DownloadResult r = download_file(url("org/model", "weights.bin"), dest, opts);
  EXPECT_EQ(r.bytes, static_cast<int64_t>(body.size()));
  EXPECT_TRUE(r.repo_commit.empty());
  EXPECT_EQ(read_file(dest), body);
  EXPECT_FALSE(has_part_files(dir_));
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back().first, static_cast<int64_t>(body.size()));
  EXPECT_EQ(calls.back().second, static_cast<int64_t>(body.size()));
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_GE(calls[i].first, calls[i - 1].first);
  EXPECT_EQ(calls.front().second, static_cast<int64_t>(body.size()));  // Content-Length known early
}

TEST_F(DownloaderTest, CapturesRepoCommitHeader) {
  hub_.add("org/model", "config.json", "{}");
  hub_.set_commit("org/model", "0123456789abcdef0123456789abcdef01234567");
  DownloadResult r = download_file(url("org/model", "config.json"), dir_ / "config.json");
  EXPECT_EQ(r.repo_commit, "0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(read_file(dir_ / "config.json"), "{}");
}

TEST_F(DownloaderTest, EmptyFile) {
  hub_.add("org/model", "empty.txt", "");
  DownloadResult r = download_file(url("org/model", "empty.txt"), dir_ / "empty.txt");
  EXPECT_EQ(r.bytes, 0);
  EXPECT_TRUE(fs::exists(dir_ / "empty.txt"));
  EXPECT_EQ(fs::file_size(dir_ / "empty.txt"), 0u);
}

TEST_F(DownloaderTest, NotFoundThrowsHttpErrorNamingUrlAndStatus) {
  const std::string u = url("org/model", "missing.bin");
  try {
    download_file(u, dir_ / "missing.bin");
    FAIL() << "expected HttpError";
  } catch (const HttpError& e) {
    EXPECT_EQ(e.status(), 404);
    EXPECT_EQ(e.url(), u);
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("404"), std::string::npos) << msg;
    EXPECT_NE(msg.find(u), std::string::npos) << msg;
    EXPECT_NE(msg.find("Entry not found"), std::string::npos) << msg;  // server's explanation
  }
  EXPECT_FALSE(fs::exists(dir_ / "missing.bin"));
  EXPECT_FALSE(has_part_files(dir_));
}

TEST_F(DownloaderTest, ServerErrorBodyIsSanitizedIntoMessage) {
  try {
    download_file(hub_.endpoint() + "/status/500", dir_ / "x");
    FAIL() << "expected HttpError";
  } catch (const HttpError& e) {
    EXPECT_EQ(e.status(), 500);
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("internal failure"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\x1b'), std::string::npos) << "control characters must not reach logs";
  }
  EXPECT_FALSE(fs::exists(dir_ / "x"));
}

TEST_F(DownloaderTest, TruncatedBodyFailsAndLeavesNoFile) {
  hub_.add("org/model", "weights.bin", fake_bytes(200 * 1024, 2), /*truncate=*/true);
  const std::string u = url("org/model", "weights.bin");
  try {
    download_file(u, dir_ / "weights.bin");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find(u), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "weights.bin"));
  EXPECT_FALSE(has_part_files(dir_));
}

TEST_F(DownloaderTest, FailedDownloadKeepsExistingCompleteFile) {
  write_file(dir_ / "weights.bin", "old complete content");
  hub_.add("org/model", "weights.bin", fake_bytes(64 * 1024, 3), /*truncate=*/true);
  EXPECT_THROW(download_file(url("org/model", "weights.bin"), dir_ / "weights.bin"), Error);
  EXPECT_EQ(read_file(dir_ / "weights.bin"), "old complete content");
  EXPECT_FALSE(has_part_files(dir_));
}

TEST_F(DownloaderTest, ReplacesExistingFileOnSuccess) {
  write_file(dir_ / "config.json", "stale");
  hub_.add("org/model", "config.json", "{\"fresh\": true}");
  download_file(url("org/model", "config.json"), dir_ / "config.json");
  EXPECT_EQ(read_file(dir_ / "config.json"), "{\"fresh\": true}");
}

TEST_F(DownloaderTest, FollowsRedirects) {
  const std::string body = fake_bytes(5000, 4);
  hub_.add("org/model", "weights.bin", body);
  DownloadResult r = download_file(hub_.endpoint() + "/redirect/weights", dir_ / "w.bin");
  EXPECT_EQ(r.bytes, 5000);
  EXPECT_EQ(read_file(dir_ / "w.bin"), body);
}

TEST_F(DownloaderTest, ChunkedBodyWithoutContentLength) {
  std::vector<int64_t> totals;
  DownloadOptions opts;
  opts.progress = [&](const std::string&, int64_t, int64_t total) { totals.push_back(total); };
  DownloadResult r = download_file(hub_.endpoint() + "/chunked", dir_ / "c.bin", opts);
  EXPECT_EQ(r.bytes, 3000);
  EXPECT_EQ(read_file(dir_ / "c.bin"), std::string(1000, 'a') + std::string(1000, 'b') + std::string(1000, 'c'));
  ASSERT_FALSE(totals.empty());
  EXPECT_EQ(totals.front(), -1);  // unknown while streaming
  EXPECT_EQ(totals.back(), 3000);  // the final call reports the real size
}

TEST_F(DownloaderTest, ConnectionRefusedNamesUrl) {
  int port;
  {
    FakeHub closed;
    port = closed.port();
  }
  const std::string u = "http://127.0.0.1:" + std::to_string(port) + "/a/b/resolve/main/config.json";
  try {
    download_file(u, dir_ / "config.json");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find(u), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "config.json"));
  EXPECT_FALSE(has_part_files(dir_));
}

TEST_F(DownloaderTest, RejectsNonHttpUrls) {
  write_file(dir_ / "secret", "x");
  EXPECT_THROW(download_file("file://" + (dir_ / "secret").string(), dir_ / "copy"), Error);
  EXPECT_THROW(download_file("ftp://127.0.0.1/x", dir_ / "copy"), Error);
  EXPECT_FALSE(fs::exists(dir_ / "copy"));
}

TEST_F(DownloaderTest, SendsBearerTokenWhenGiven) {
  std::string seen;
  FakeHub hub([&seen](httplib::Server& svr) {
    svr.Get("/auth", [&seen](const httplib::Request& req, httplib::Response& res) {
      seen = req.get_header_value("Authorization");
      res.set_content("ok", "text/plain");
    });
  });
  DownloadOptions opts;
  opts.bearer_token = "hf_test";
  download_file(hub.endpoint() + "/auth", dir_ / "a", opts);
  EXPECT_EQ(seen, "Bearer hf_test");
}

TEST(FormatTest, Bytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(int64_t{942} * 1024 * 1024), "942.0 MiB");
  EXPECT_EQ(format_bytes(int64_t{3} * 1024 * 1024 * 1024), "3.0 GiB");
}

TEST(FormatTest, ProgressLine) {
  EXPECT_EQ(format_progress("model.safetensors", 512, 1024, 0),
            "model.safetensors  50% [##########..........] 512 B / 1.0 KiB");
  EXPECT_EQ(format_progress("f", 2048, -1, 2.0), "f  2.0 KiB  1.0 KiB/s");
  EXPECT_EQ(format_progress("f", 10, 10, 0), "f 100% [####################] 10 B / 10 B");
}

TEST(FormatTest, DefaultProgressHandlesRepeatsAndUnknownSizes) {
  // Under ctest stderr is not a terminal, so this drives the log-line path; it must accept a new
  // file, a repeated file name (a retry), and unknown totals without printing twice per finish.
  DownloadProgress p = make_default_progress();
  p("a.json", 0, 10);
  p("a.json", 10, 10);
  p("a.json", 10, 10);
  p("a.json", 5, 10);
  p("b.bin", 100, -1);
  p("b.bin", 200, 200);
  SUCCEED();
}

}  // namespace
}  // namespace anelm::server
