// Finds the shared test data and the build's binaries for every test suite.
#include "tests/support/shared_data.h"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace anelm::testing {

namespace fs = std::filesystem;

std::optional<fs::path> shared_dir() {
  if (const char* env = std::getenv("ANELM_SHARED_DIR"); env && *env) {
    if (fs::is_directory(env)) return fs::path(env);
    return std::nullopt;
  }
  for (fs::path p = fs::path(ANELM_SOURCE_DIR); !p.empty(); p = p.parent_path()) {
    if (fs::is_directory(p / "shared" / "models")) return p / "shared";
    if (fs::is_directory(p / ".." / "shared" / "models")) return fs::weakly_canonical(p / ".." / "shared");
    if (p == p.parent_path()) break;
  }
  return std::nullopt;
}

std::optional<fs::path> shared_model(const std::string& relative) {
  auto dir = shared_dir();
  if (!dir) return std::nullopt;
  fs::path p = *dir / "models" / relative;
  if (!fs::exists(p)) return std::nullopt;
  return p;
}

fs::path anelm_binary() { return fs::path(ANELM_BINARY_DIR) / "anelm"; }

namespace {

// Every directory make_temp_dir made, removed when the test process exits: tests write model files of
// hundreds of MB, and thousands of ctest processes a run would otherwise fill the disk (they once did, in CI).
// ANELM_KEEP_TEST_DIRS=1 keeps them for a post-mortem.
class TempDirs {
 public:
  void add(const fs::path& p) {
    std::lock_guard lock(mutex_);
    dirs_.push_back(p);
  }
  ~TempDirs() {
    if (const char* keep = std::getenv("ANELM_KEEP_TEST_DIRS"); keep && *keep && *keep != '0') return;
    for (const auto& p : dirs_) {
      std::error_code ec;  // a test may have removed it, or left a read-only file: never throw at exit
      fs::remove_all(p, ec);
    }
  }

 private:
  std::mutex mutex_;
  std::vector<fs::path> dirs_;
};

TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

fs::path make_temp_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  fs::path p = fs::temp_directory_path() /
               ("anelm-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(p);
  fs::create_directories(p);
  temp_dirs().add(p);
  return p;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_file(const fs::path& p, const std::string& bytes) {
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::optional<std::filesystem::path> llama_vocab_file(const std::string& name, std::string* why) {
  const std::filesystem::path dir = std::filesystem::path(ANELM_BINARY_DIR) / "llama-vocab";
  const std::filesystem::path file = dir / name;
  if (std::filesystem::exists(file)) return file;
  const std::string script =
      std::string(ANELM_SOURCE_DIR) + "/tests/tokenizer/llama_vocab_files.sh";
  const std::string cmd = "bash " + shell_quote(script) + " " + shell_quote(dir.string()) +
                          " " + shell_quote(name);
  const int rc = std::system(cmd.c_str());
  if (std::filesystem::exists(file)) return file;
  if (rc != 0) {
    *why = "tests/tokenizer/llama_vocab_files.sh could not extract llama.cpp's models/" + name +
           " (exit status " + std::to_string(rc) + ", see its message above)";
  } else {
    const char* peer = std::getenv("ANELM_PEER_DIR");
    *why = "llama.cpp's models/" + name +
           " is not available: the llama.cpp peer kit's source bundle " +
           (peer ? std::string(peer) : std::string("~/.cache/anelm-peer")) +
           "/node_modules/node-llama-cpp/llama/gitRelease.bundle is not installed "
           "(../shared/peers/install.sh installs it)";
  }
  return std::nullopt;
}

}  // namespace anelm::testing
