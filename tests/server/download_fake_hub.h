// A loopback HTTP server in HuggingFace's URL layout (/ORG/NAME/resolve/REV/FILE) for download tests.
#pragma once

// libcpp-httplib is a compiled library built with these (pkg-config Cflags); the test target does
// not inherit them from anelm_server_core, and without them httplib::Request has another layout.
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#ifndef CPPHTTPLIB_ZLIB_SUPPORT
#define CPPHTTPLIB_ZLIB_SUPPORT
#endif
#ifndef CPPHTTPLIB_BROTLI_SUPPORT
#define CPPHTTPLIB_BROTLI_SUPPORT
#endif
#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace anelm::testing {

// Whether a download left a .part file anywhere under dir (a missing dir has none).
inline bool has_part_files(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir)) return false;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().extension() == ".part") return true;
  return false;
}

// Deterministic pseudo-random bytes (a fake weights file), different for each seed.
inline std::string fake_bytes(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1u;
  for (auto& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xff);
  }
  return s;
}

class FakeHub {
 public:
  // `extra_routes` may register more handlers before the server starts.
  explicit FakeHub(const std::function<void(httplib::Server&)>& extra_routes = {}) {
    svr_.Get(R"(/([^/]+/[^/]+)/resolve/([^/]+)/(.+))",
             [this](const httplib::Request& req, httplib::Response& res) { serve(req, res); });
    if (extra_routes) extra_routes(svr_);
    port_ = svr_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("FakeHub: cannot bind 127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    for (int i = 0; i < 500 && !svr_.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~FakeHub() {
    svr_.stop();
    thread_.join();
  }
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  // Serves `body` at /REPO/resolve/<any revision>/FILE. `truncate`: announce the full
  // Content-Length, send half, then drop the connection.
  void add(const std::string& repo, const std::string& file, std::string body, bool truncate = false) {
    std::lock_guard<std::mutex> lock(mu_);
    files_[repo + "/" + file] = Entry{std::move(body), truncate};
  }
  void remove(const std::string& repo, const std::string& file) {
    std::lock_guard<std::mutex> lock(mu_);
    files_.erase(repo + "/" + file);
  }
  // Sends X-Repo-Commit: commit with every file of `repo`.
  void set_commit(const std::string& repo, const std::string& commit) {
    std::lock_guard<std::mutex> lock(mu_);
    commits_[repo] = commit;
  }
  // Request paths seen, in order.
  std::vector<std::string> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  struct Entry {
    std::string body;
    bool truncate = false;
  };

  void serve(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(req.path);
    const std::string repo = req.matches[1];
    auto it = files_.find(repo + "/" + std::string(req.matches[3]));
    if (auto c = commits_.find(repo); c != commits_.end()) res.set_header("X-Repo-Commit", c->second);
    if (it == files_.end()) {
      res.status = 404;
      res.set_content("Entry not found", "text/plain");
      return;
    }
    if (!it->second.truncate) {
      res.set_content(it->second.body, "application/octet-stream");
      return;
    }
    auto body = std::make_shared<std::string>(it->second.body);
    const size_t half = body->size() / 2;
    res.set_content_provider(body->size(), "application/octet-stream",
                             [body, half](size_t offset, size_t, httplib::DataSink& sink) {
                               if (offset >= half) return false;  // abort: connection closed
                               sink.write(body->data() + offset, half - offset);
                               return true;
                             });
  }

  httplib::Server svr_;
  int port_ = -1;
  std::thread thread_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> files_;
  std::map<std::string, std::string> commits_;
  std::vector<std::string> requests_;
};

}  // namespace anelm::testing
