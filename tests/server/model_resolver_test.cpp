// Tests model resolution: paths, $ANELM_MODEL, HF and anelm caches, offline errors, downloads.
#include "server/model_bundle.h"
#include "server/model_resolver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "engine/error.h"
#include "tests/server/download_fake_hub.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

namespace fs = std::filesystem;
using anelm::testing::FakeHub;
using anelm::testing::fake_bytes;

constexpr const char* kRepo = "tiny-org/Tiny-Model-0.1B";
constexpr const char* kCommit = "4e0c3bb2d4f1a9e8c7b6a5f4e3d2c1b0a9f8e7d6";

using ::anelm::testing::read_file;

using ::anelm::testing::has_part_files;
using ::anelm::testing::write_file;

// The files of a small model in HF layout (names as in Qwen2.5-0.5B-Instruct, tiny contents).
std::map<std::string, std::string> tiny_model_files() {
  return {
      {"config.json", R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 8})"},
      {"generation_config.json", R"({"eos_token_id": [2, 3]})"},
      {"tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})"},
      {"tokenizer_config.json", R"({"add_bos_token": false})"},
      {"vocab.json", R"({"a": 0})"},
      {"merges.txt", "#version: 0.2\n"},
      {"model.safetensors", fake_bytes(256 * 1024 + 3, 7)},
  };
}

// Writes a snapshot in the real HF cache layout: files in blobs/, symlinks in snapshots/<commit>.
fs::path make_hf_cache_snapshot(const fs::path& hub, const std::string& repo,
                                const std::map<std::string, std::string>& files) {
  const fs::path repo_dir = hub / repo_folder_name(repo);
  write_file(repo_dir / "refs" / "main", kCommit);
  const fs::path snap = repo_dir / "snapshots" / kCommit;
  fs::create_directories(snap);
  int i = 0;
  for (const auto& [name, body] : files) {
    const fs::path blob = repo_dir / "blobs" / ("blob" + std::to_string(i++));
    write_file(blob, body);
    fs::create_symlink(fs::path("../../blobs") / blob.filename(), snap / name);
  }
  return snap;
}

// Saves an environment variable and restores it when the test ends.
class EnvGuard {
 public:
  explicit EnvGuard(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
  }
  ~EnvGuard() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  void set(const std::string& v) { ::setenv(name_, v.c_str(), 1); }
  void unset() { ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class ModelResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = anelm::testing::make_temp_dir("resolver");
    // The developer's environment must not leak into the tests.
    anelm_model_.unset();
    hf_offline_.unset();
    hf_token_.unset();
    opts_.hf_home = (root_ / "hf").string();
    opts_.cache_dir = (root_ / "anelm").string();
    opts_.endpoint = hub_.endpoint();
    opts_.progress = [this](const std::string& file, int64_t done, int64_t total) {
      if (total >= 0 && done == total) completed_.push_back(file);
    };
  }
  void TearDown() override { fs::remove_all(root_); }

  void serve_tiny_model(const std::string& repo = kRepo) {
    for (const auto& [name, body] : tiny_model_files()) hub_.add(repo, name, body);
  }
  fs::path own_repo_dir(const std::string& repo = kRepo) const {
    return root_ / "anelm" / "hub" / repo_folder_name(repo);
  }

  EnvGuard anelm_model_{"ANELM_MODEL"};
  EnvGuard hf_offline_{"HF_HUB_OFFLINE"};
  EnvGuard hf_token_{"HF_TOKEN"};
  FakeHub hub_;
  fs::path root_;
  ResolveOptions opts_;
  std::vector<std::string> completed_;
};

TEST(RepoIdTest, Validation) {
  EXPECT_TRUE(is_repo_id("Qwen/Qwen2.5-0.5B-Instruct"));
  EXPECT_TRUE(is_repo_id("a/b"));
  EXPECT_FALSE(is_repo_id("Qwen"));
  EXPECT_FALSE(is_repo_id("a/b/c"));
  EXPECT_FALSE(is_repo_id("/abs/path"));
  EXPECT_FALSE(is_repo_id("../x"));
  EXPECT_FALSE(is_repo_id("a/.."));
  EXPECT_FALSE(is_repo_id("a/b c"));
  EXPECT_FALSE(is_repo_id("a--b/c"));
  EXPECT_FALSE(is_repo_id("model.gguf"));
  EXPECT_EQ(repo_folder_name("Qwen/Qwen2.5-0.5B-Instruct"), "models--Qwen--Qwen2.5-0.5B-Instruct");
}

TEST_F(ModelResolverTest, ExplicitGgufPathIsReturnedAsIs) {
  const fs::path gguf = root_ / "m.gguf";
  write_file(gguf, "GGUF");
  opts_.model = gguf.string();
  EXPECT_EQ(resolve_model_path(opts_), gguf.string());
}

TEST_F(ModelResolverTest, ExplicitDirectoryWins) {
  const fs::path dir = root_ / "my-model";
  fs::create_directories(dir);
  anelm_model_.set((root_ / "other.gguf").string());
  opts_.model = dir.string();
  EXPECT_EQ(resolve_model_path(opts_), dir.string());
}

TEST_F(ModelResolverTest, MissingExplicitPathIsNotFound) {
  opts_.model = (root_ / "nope.gguf").string();
  try {
    resolve_model_path(opts_);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("nope.gguf"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(hub_.requests().empty()) << "a path must never turn into a download";
}

TEST_F(ModelResolverTest, AnelmModelEnvironmentVariable) {
  const fs::path gguf = root_ / "env.gguf";
  write_file(gguf, "GGUF");
  anelm_model_.set(gguf.string());
  EXPECT_EQ(resolve_model_path(opts_), gguf.string());
}

TEST_F(ModelResolverTest, DefaultModelFromHfCache) {
  const fs::path snap =
      make_hf_cache_snapshot(root_ / "hf" / "hub", kDefaultModel, tiny_model_files());
  opts_.offline = true;
  EXPECT_EQ(fs::path(resolve_model_path(opts_)), snap);
}

TEST_F(ModelResolverTest, HfCacheHitForRepoId) {
  const fs::path snap = make_hf_cache_snapshot(root_ / "hf" / "hub", kRepo, tiny_model_files());
  opts_.model = kRepo;
  EXPECT_EQ(fs::path(resolve_model_path(opts_)), snap);
  EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(ModelResolverTest, HfCacheByCommitRevision) {
  const fs::path snap = make_hf_cache_snapshot(root_ / "hf" / "hub", kRepo, tiny_model_files());
  opts_.model = kRepo;
  opts_.revision = kCommit;
  opts_.offline = true;
  EXPECT_EQ(fs::path(resolve_model_path(opts_)), snap);
}

TEST_F(ModelResolverTest, HfHomeFromEnvironment) {
  EnvGuard hf_home("HF_HOME");
  EnvGuard hub_cache("HF_HUB_CACHE");
  hub_cache.unset();
  hf_home.set((root_ / "hf").string());
  const fs::path snap = make_hf_cache_snapshot(root_ / "hf" / "hub", kRepo, tiny_model_files());
  opts_.hf_home.clear();
  opts_.model = kRepo;
  opts_.offline = true;
  EXPECT_EQ(fs::path(resolve_model_path(opts_)), snap);
}

TEST_F(ModelResolverTest, ShardedSnapshotNeedsEveryShard) {
  auto files = tiny_model_files();
  files.erase("model.safetensors");
  files["model.safetensors.index.json"] =
      R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})";
  files["model-00001-of-00002.safetensors"] = "shard1";
  const fs::path hub = root_ / "hf" / "hub";
  const fs::path snap = make_hf_cache_snapshot(hub, kRepo, files);
  std::string why;
  EXPECT_FALSE(find_cached_model(hub, kRepo, "main", &why));
  EXPECT_NE(why.find("model-00002-of-00002.safetensors"), std::string::npos) << why;
  write_file(snap / "model-00002-of-00002.safetensors", "shard2");
  EXPECT_EQ(find_cached_model(hub, kRepo, "main"), snap);
}

TEST_F(ModelResolverTest, GgufOnlySnapshotReturnsTheFile) {
  const fs::path snap = make_hf_cache_snapshot(root_ / "hf" / "hub", kRepo,
                                               {{"tiny-q8_0.gguf", "GGUF"}, {"README.md", "x"}});
  opts_.model = kRepo;
  opts_.offline = true;
  EXPECT_EQ(fs::path(resolve_model_path(opts_)), snap / "tiny-q8_0.gguf");
}

TEST_F(ModelResolverTest, OwnCacheHit) {
  const fs::path snap = own_repo_dir() / "snapshots" / "main";
  for (const auto& [name, body] : tiny_model_files()) write_file(snap / name, body);
  write_file(own_repo_dir() / "refs" / "main", "main");
  opts_.model = kRepo;
  opts_.offline = true;
  EXPECT_EQ(fs::path(resolve_model_path(opts_)), snap);
}

TEST_F(ModelResolverTest, IncompleteHfSnapshotFallsBackToOwnCache) {
  auto partial = tiny_model_files();
  partial.erase("model.safetensors");
  make_hf_cache_snapshot(root_ / "hf" / "hub", kRepo, partial);
  const fs::path snap = own_repo_dir() / "snapshots" / "main";
  for (const auto& [name, body] : tiny_model_files()) write_file(snap / name, body);
  write_file(own_repo_dir() / "refs" / "main", "main");
  opts_.model = kRepo;
  opts_.offline = true;
  EXPECT_EQ(fs::path(resolve_model_path(opts_)), snap);
}

TEST_F(ModelResolverTest, OfflineMissNamesSearchedPathsAndFix) {
  auto partial = tiny_model_files();
  partial.erase("model.safetensors");
  make_hf_cache_snapshot(root_ / "hf" / "hub", kRepo, partial);
  serve_tiny_model();
  opts_.model = kRepo;
  opts_.offline = true;
  try {
    resolve_model_path(opts_);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    const std::string msg = e.what();
    EXPECT_NE(msg.find((root_ / "hf" / "hub").string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("missing model.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find(own_repo_dir().string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("--offline"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--model PATH"), std::string::npos) << msg;
  }
  EXPECT_TRUE(hub_.requests().empty()) << "offline must not touch the network";
}

TEST_F(ModelResolverTest, HfHubOfflineEnvironmentForbidsDownload) {
  serve_tiny_model();
  hf_offline_.set("1");
  opts_.model = kRepo;
  EXPECT_THROW(resolve_model_path(opts_), Error);
  EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(ModelResolverTest, DownloadsByteIdenticalFilesThenHitsCacheOffline) {
  serve_tiny_model();
  opts_.model = kRepo;
  const fs::path snap = resolve_model_path(opts_);
  EXPECT_EQ(snap, own_repo_dir() / "snapshots" / "main");
  for (const auto& [name, body] : tiny_model_files()) {
    ASSERT_TRUE(fs::exists(snap / name)) << name;
    EXPECT_EQ(read_file(snap / name), body) << name;
  }
  EXPECT_EQ(read_file(own_repo_dir() / "refs" / "main"), "main");
  EXPECT_FALSE(has_part_files(root_ / "anelm"));
  EXPECT_FALSE(fs::exists(own_repo_dir() / ".incoming"));
  EXPECT_FALSE(fs::exists(root_ / "hf")) << "the HF cache is never written";
  EXPECT_NE(std::find(completed_.begin(), completed_.end(), "model.safetensors"), completed_.end());
  for (const auto& path : hub_.requests())
    EXPECT_EQ(path.rfind(std::string("/") + kRepo + "/resolve/main/", 0), 0u) << path;

  const size_t before = hub_.requests().size();
  opts_.offline = true;
  EXPECT_EQ(fs::path(resolve_model_path(opts_)), snap);
  EXPECT_EQ(hub_.requests().size(), before);
}

TEST_F(ModelResolverTest, DownloadNamesSnapshotAfterRepoCommit) {
  serve_tiny_model();
  hub_.set_commit(kRepo, kCommit);
  opts_.model = kRepo;
  const fs::path snap = resolve_model_path(opts_);
  EXPECT_EQ(snap, own_repo_dir() / "snapshots" / kCommit);
  EXPECT_EQ(read_file(own_repo_dir() / "refs" / "main"), kCommit);
  EXPECT_EQ(read_file(snap / "model.safetensors"), tiny_model_files()["model.safetensors"]);
}

TEST_F(ModelResolverTest, DownloadsShardedCheckpoint) {
  auto files = tiny_model_files();
  files.erase("model.safetensors");
  files["model.safetensors.index.json"] =
      R"({"metadata": {}, "weight_map": {"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors", "z": "model-00001-of-00002.safetensors"}})";
  files["model-00001-of-00002.safetensors"] = fake_bytes(70000, 11);
  files["model-00002-of-00002.safetensors"] = fake_bytes(50000, 12);
  for (const auto& [name, body] : files) hub_.add(kRepo, name, body);
  opts_.model = kRepo;
  const fs::path snap = resolve_model_path(opts_);
  for (const auto& [name, body] : files) EXPECT_EQ(read_file(snap / name), body) << name;
  EXPECT_FALSE(fs::exists(snap / "model.safetensors"));
  for (const auto& path : hub_.requests())
    EXPECT_EQ(path.find("/model.safetensors", path.size() - 18), std::string::npos) << path;
}

TEST_F(ModelResolverTest, OptionalFilesMayBeMissing) {
  serve_tiny_model();
  hub_.remove(kRepo, "generation_config.json");
  hub_.remove(kRepo, "vocab.json");
  hub_.remove(kRepo, "merges.txt");
  opts_.model = kRepo;
  const fs::path snap = resolve_model_path(opts_);
  EXPECT_TRUE(fs::exists(snap / "tokenizer.json"));
  EXPECT_FALSE(fs::exists(snap / "generation_config.json"));
}

TEST_F(ModelResolverTest, MissingConfigIsNotFoundWithUrlAndStatus) {
  opts_.model = kRepo;
  try {
    resolve_model_path(opts_);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(hub_.endpoint() + "/" + kRepo + "/resolve/main/config.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("404"), std::string::npos) << msg;
  }
  EXPECT_FALSE(fs::exists(own_repo_dir())) << "a mistyped repository leaves no cache folder behind";
}

TEST_F(ModelResolverTest, MissingWeightsIsNotFoundWithUrlAndStatus) {
  serve_tiny_model();
  hub_.remove(kRepo, "model.safetensors");
  opts_.model = kRepo;
  try {
    resolve_model_path(opts_);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(hub_.endpoint() + "/" + kRepo + "/resolve/main/model.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find("404"), std::string::npos) << msg;
  }
  EXPECT_FALSE(fs::exists(own_repo_dir() / "refs" / "main"));
  opts_.offline = true;
  EXPECT_THROW(resolve_model_path(opts_), Error) << "an incomplete download is not a cache hit";
}

TEST_F(ModelResolverTest, MissingTokenizerIsAnError) {
  serve_tiny_model();
  hub_.remove(kRepo, "tokenizer.json");
  hub_.remove(kRepo, "merges.txt");
  opts_.model = kRepo;
  try {
    resolve_model_path(opts_);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer"), std::string::npos) << e.what();
  }
}

TEST_F(ModelResolverTest, TruncatedWeightsFailAndLeaveNoFinalFile) {
  serve_tiny_model();
  hub_.add(kRepo, "model.safetensors", fake_bytes(256 * 1024, 9), /*truncate=*/true);
  opts_.model = kRepo;
  try {
    resolve_model_path(opts_);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/resolve/main/model.safetensors"), std::string::npos) << msg;
  }
  const fs::path snap = own_repo_dir() / "snapshots" / "main";
  EXPECT_FALSE(fs::exists(snap / "model.safetensors"));
  EXPECT_FALSE(has_part_files(root_ / "anelm"));
  EXPECT_FALSE(fs::exists(own_repo_dir() / "refs" / "main"));

  // A later run downloads the weights; the files already complete are not fetched again.
  hub_.add(kRepo, "model.safetensors", tiny_model_files()["model.safetensors"]);
  const size_t before = hub_.requests().size();
  EXPECT_EQ(fs::path(resolve_model_path(opts_)), snap);
  EXPECT_EQ(read_file(snap / "model.safetensors"), tiny_model_files()["model.safetensors"]);
  auto reqs = hub_.requests();
  for (size_t i = before; i < reqs.size(); ++i)
    EXPECT_EQ(reqs[i].find("tokenizer.json"), std::string::npos) << reqs[i];
}

TEST_F(ModelResolverTest, RejectsUnsafeShardNames) {
  auto files = tiny_model_files();
  files.erase("model.safetensors");
  files["model.safetensors.index.json"] = R"({"weight_map": {"x": "../../../evil.safetensors"}})";
  for (const auto& [name, body] : files) hub_.add(kRepo, name, body);
  opts_.model = kRepo;
  try {
    resolve_model_path(opts_);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFormat);
    EXPECT_NE(std::string(e.what()).find("invalid shard file name"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(root_ / "evil.safetensors"));
}

TEST_F(ModelResolverTest, RejectsBadRevisionAndNonRepoNames) {
  opts_.model = kRepo;
  opts_.revision = "../../etc";
  EXPECT_THROW(resolve_model_path(opts_), Error);
  opts_.revision = "main";
  opts_.model = "not a model";
  EXPECT_THROW(resolve_model_path(opts_), Error);
  EXPECT_TRUE(hub_.requests().empty());
}

}  // namespace
}  // namespace anelm::server

namespace anelm::server {
namespace {

TEST(DefaultModelId, RepositoryNameForCacheSnapshotsElseTheFileName) {
  EXPECT_EQ(default_model_id("/h/.cache/huggingface/hub/models--Qwen--Qwen2.5-0.5B-Instruct/snapshots/7ae5"),
            "Qwen/Qwen2.5-0.5B-Instruct");
  EXPECT_EQ(default_model_id("/h/hub/models--Qwen--Qwen2.5-0.5B-Instruct/snapshots/7ae5/"), "Qwen/Qwen2.5-0.5B-Instruct");
  EXPECT_EQ(default_model_id("/h/hub/models--org--a--b/snapshots/c1"), "org/a--b");
  EXPECT_EQ(default_model_id("/m/qwen2.5-0.5b-instruct-q4_k_m.gguf"), "qwen2.5-0.5b-instruct-q4_k_m.gguf");
  EXPECT_EQ(default_model_id("/m/my-model/"), "my-model");
  EXPECT_EQ(default_model_id("/m/snapshots/x"), "x");  // not a cache layout
}

}  // namespace
}  // namespace anelm::server
