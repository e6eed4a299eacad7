// Model resolution: explicit path, $ANELM_MODEL or the default repo; HF cache, anelm cache, download.
//
// Cache choice: downloads go to anelm's own cache ($XDG_CACHE_HOME/anelm/hub), in the HF layout
// (models--ORG--NAME/{refs/<revision>, snapshots/<commit>/<file>}) but with plain files instead of
// HF's blobs/ + symlinks. The HF cache is only read: writing a layout huggingface_hub does not
// produce (no blobs, no .no_exist markers) into its cache could confuse it.
#include "server/model_resolver.h"

#include <fcntl.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>

#include "engine/error.h"
#include "engine/json_depth.h"
#include "server/downloader.h"

namespace anelm::server {

namespace fs = std::filesystem;

namespace {

constexpr const char* kConfig = "config.json";
constexpr const char* kWeights = "model.safetensors";
constexpr const char* kWeightsIndex = "model.safetensors.index.json";
// Fetched when present; a 404 is not an error (the tokenizer check below decides what is needed).
constexpr const char* kOptionalFiles[] = {"generation_config.json", "tokenizer.json",
                                          "tokenizer_config.json", "vocab.json", "merges.txt"};

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

fs::path home_dir() {
  if (auto home = env_or_empty("HOME"); !home.empty()) return home;
  if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) return pw->pw_dir;
  throw Error(ErrorKind::kNotFound,
              "cannot find the home directory for the model caches: set HOME, HF_HOME or "
              "XDG_CACHE_HOME");
}

std::string expand_home(const std::string& p) {
  if (p == "~") return home_dir().string();
  if (p.rfind("~/", 0) == 0) return (home_dir() / p.substr(2)).string();
  return p;
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

// One path component we are willing to create from remote or user data (shard names, commits).
bool is_safe_component(std::string_view s) {
  if (s.empty() || s.size() > 255 || s.front() == '.') return false;
  for (char c : s)
    if (!is_name_char(c)) return false;
  return true;
}

bool is_commit_hash(std::string_view s) {
  if (s.size() != 40) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Branches and tags may contain '/' (refs/pr/1); each part must still be a safe component.
bool is_valid_revision(std::string_view rev) {
  if (rev.empty() || rev.size() > 200) return false;
  size_t start = 0;
  while (start <= rev.size()) {
    size_t end = rev.find('/', start);
    if (end == std::string_view::npos) end = rev.size();
    if (!is_safe_component(rev.substr(start, end - start))) return false;
    start = end + 1;
  }
  return true;
}

std::string url_encode_revision(const std::string& rev) {
  std::string out;
  for (char c : rev) out += (c == '/') ? std::string("%2F") : std::string(1, c);
  return out;
}

std::string read_trimmed(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

// Writes small text through a .part file and a rename, like the downloads, so readers never see
// a half-written ref.
void write_atomically(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  const fs::path part = p.string() + ".part";
  {
    std::ofstream out(part, std::ios::trunc);
    out << text;
    if (!out.flush()) throw Error(ErrorKind::kIo, "cannot write " + part.string());
  }
  std::error_code ec;
  fs::rename(part, p, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot rename " + part.string() + ": " + ec.message());
}

// Shard file names from a safetensors index; they come from the network, so each must be a plain
// file name (no '/', no "..") before it is used in a path.
std::vector<std::string> shard_names(const fs::path& index) {
  std::ifstream in(index, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  engine::check_json_depth(text.str(), index.string(), "the shard index");
  // Errors name the file, never its bytes (they may reach /health).
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(ErrorKind::kFormat, index.string() + " is not valid JSON");
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw Error(ErrorKind::kFormat, index.string() + " has no \"weight_map\" object");
  std::set<std::string> names;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    if (!file.is_string() || !is_safe_component(file.get<std::string>()))
      throw Error(ErrorKind::kFormat, index.string() + ": a tensor maps to an invalid shard file name");
    names.insert(file.get<std::string>());
  }
  if (names.empty()) throw Error(ErrorKind::kFormat, index.string() + " lists no shards");
  return {names.begin(), names.end()};
}

// What a snapshot lacks to be loadable, "" when nothing.
std::string missing_parts(const fs::path& dir) {
  std::vector<std::string> missing;
  if (!fs::exists(dir / kConfig)) missing.push_back(kConfig);
  if (fs::exists(dir / kWeightsIndex)) {
    try {
      for (const auto& shard : shard_names(dir / kWeightsIndex))
        if (!fs::exists(dir / shard)) missing.push_back(shard);
    } catch (const Error& e) {
      missing.push_back(std::string("a valid ") + kWeightsIndex + " (" + e.what() + ")");
    }
  } else if (!fs::exists(dir / kWeights)) {
    missing.push_back(kWeights);
  }
  if (!fs::exists(dir / "tokenizer.json") &&
      !(fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt")))
    missing.push_back("tokenizer.json (or vocab.json + merges.txt)");
  std::string out;
  for (const auto& m : missing) out += (out.empty() ? "" : ", ") + m;
  return out;
}

// The single .gguf of a snapshot without config.json (GGUF repos), if there is exactly one.
std::optional<fs::path> single_gguf(const fs::path& dir) {
  if (fs::exists(dir / kConfig)) return std::nullopt;
  std::optional<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".gguf" || !fs::is_regular_file(e.path())) continue;
    if (found) return std::nullopt;  // several quantizations: the user must pick one with --model
    found = e.path();
  }
  return found;
}

// Exclusive lock on a repo folder so two anelm processes do not download the same files at once.
class DirLock {
 public:
  explicit DirLock(const fs::path& dir) {
    const fs::path p = dir / ".lock";
    fd_ = ::open(p.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(ErrorKind::kIo, "cannot open lock file " + p.string());
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      spdlog::info("waiting for another anelm process downloading into {}", dir.string());
      ::flock(fd_, LOCK_EX);
    }
  }
  ~DirLock() { ::close(fd_); }  // closing releases the flock
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

std::string effective_endpoint(const ResolveOptions& opts) {
  std::string ep = opts.endpoint;
  if (ep == kDefaultEndpoint)
    if (auto env = env_or_empty("HF_ENDPOINT"); !env.empty()) ep = env;
  while (!ep.empty() && ep.back() == '/') ep.pop_back();
  if (ep.rfind("http://", 0) != 0 && ep.rfind("https://", 0) != 0)
    throw Error(ErrorKind::kInvalidArgument,
                "download endpoint must start with http:// or https://: '" + ep + "'");
  return ep;
}

bool env_offline() {
  const std::string v = env_or_empty("HF_HUB_OFFLINE");
  return v == "1" || v == "true" || v == "TRUE" || v == "yes" || v == "ON" || v == "on";
}

void check_repo_and_revision(const std::string& repo_id, const std::string& revision) {
  if (!is_repo_id(repo_id))
    throw Error(ErrorKind::kInvalidArgument,
                "'" + repo_id + "' is not a HuggingFace repo id (expected ORG/NAME, e.g. " +
                    kDefaultModel + ")");
  if (!is_valid_revision(revision))
    throw Error(ErrorKind::kInvalidArgument, "invalid revision '" + revision + "'");
}

// Fetches the files of one snapshot whose config.json is already in place. `fetch` downloads one
// repo file to a path.
void fetch_snapshot_files(const fs::path& snap, const std::string& base_url,
                          const std::function<void(const std::string&, const fs::path&)>& fetch) {
  auto is_404 = [](const HttpError& e) { return e.status() == 404; };
  for (const char* f : kOptionalFiles) {
    if (fs::exists(snap / f)) continue;
    try {
      fetch(f, snap / f);
    } catch (const HttpError& e) {
      if (!is_404(e)) throw;
      spdlog::debug("{} is not in the repository (404), skipped", f);
    }
  }
  if (!fs::exists(snap / "tokenizer.json") &&
      !(fs::exists(snap / "vocab.json") && fs::exists(snap / "merges.txt")))
    throw Error(ErrorKind::kNotFound, "the repository has no tokenizer: " + base_url +
                                          "tokenizer.json and vocab.json/merges.txt returned 404");

  // Sharded checkpoints have an index; a 404 on it means a single model.safetensors.
  if (!fs::exists(snap / kWeightsIndex) && !fs::exists(snap / kWeights)) {
    try {
      fetch(kWeightsIndex, snap / kWeightsIndex);
    } catch (const HttpError& e) {
      if (!is_404(e)) throw;
      try {
        fetch(kWeights, snap / kWeights);
      } catch (const HttpError& e2) {
        if (!is_404(e2)) throw;
        throw Error(ErrorKind::kNotFound,
                    std::string("the repository has no safetensors weights: ") + e.what() +
                        "; " + e2.what() +
                        " (only safetensors checkpoints are downloaded; for a GGUF repository "
                        "download the .gguf file and pass --model PATH)");
      }
    }
  }
  if (fs::exists(snap / kWeightsIndex))
    for (const auto& shard : shard_names(snap / kWeightsIndex))
      if (!fs::exists(snap / shard)) fetch(shard, snap / shard);
}

}  // namespace

bool is_repo_id(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos || s.find('/', slash + 1) != std::string_view::npos)
    return false;
  for (std::string_view part : {s.substr(0, slash), s.substr(slash + 1)}) {
    if (part.empty() || part.size() > 96 || part.front() == '.' || part.front() == '-') return false;
    if (part.find("..") != std::string_view::npos || part.find("--") != std::string_view::npos)
      return false;
    for (char c : part)
      if (!is_name_char(c)) return false;
  }
  return true;
}

std::string repo_folder_name(std::string_view repo_id) {
  std::string out = "models--";
  for (char c : repo_id) out += (c == '/') ? std::string("--") : std::string(1, c);
  return out;
}

fs::path hf_hub_dir(const ResolveOptions& opts) {
  if (!opts.hf_home.empty()) return fs::path(expand_home(opts.hf_home)) / "hub";
  if (auto v = env_or_empty("HF_HUB_CACHE"); !v.empty()) return expand_home(v);
  if (auto v = env_or_empty("HF_HOME"); !v.empty()) return fs::path(expand_home(v)) / "hub";
  return home_dir() / ".cache" / "huggingface" / "hub";
}

fs::path anelm_hub_dir(const ResolveOptions& opts) {
  if (!opts.cache_dir.empty()) return fs::path(expand_home(opts.cache_dir)) / "hub";
  if (auto v = env_or_empty("XDG_CACHE_HOME"); !v.empty() && v.front() == '/')
    return fs::path(v) / "anelm" / "hub";
  return home_dir() / ".cache" / "anelm" / "hub";
}

std::optional<fs::path> find_cached_model(const fs::path& hub_dir, const std::string& repo_id,
                                          const std::string& revision, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<fs::path> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const fs::path repo_dir = hub_dir / repo_folder_name(repo_id);
  if (!fs::is_directory(repo_dir)) return fail(repo_dir.string() + ": not found");
  std::string commit;
  if (is_commit_hash(revision) && fs::is_directory(repo_dir / "snapshots" / revision)) {
    commit = revision;
  } else {
    const fs::path ref = repo_dir / "refs" / revision;
    if (!fs::is_regular_file(ref)) return fail(ref.string() + ": not found");
    commit = read_trimmed(ref);
    if (!is_safe_component(commit)) return fail(ref.string() + ": invalid content");
  }
  const fs::path snap = repo_dir / "snapshots" / commit;
  if (!fs::is_directory(snap)) return fail(snap.string() + ": not found");
  const std::string missing = missing_parts(snap);
  if (missing.empty()) return snap;
  if (auto gguf = single_gguf(snap)) return gguf;
  return fail(snap.string() + ": incomplete, missing " + missing);
}

namespace {
fs::path download_locked(const std::string& repo_id, const ResolveOptions& opts, const fs::path& repo_dir);
}  // namespace

fs::path download_snapshot(const std::string& repo_id, const ResolveOptions& opts) {
  check_repo_and_revision(repo_id, opts.revision);
  const fs::path repo_dir = anelm_hub_dir(opts) / repo_folder_name(repo_id);
  std::error_code ec;
  const bool created = !fs::exists(repo_dir);
  fs::create_directories(repo_dir, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot create " + repo_dir.string() + ": " + ec.message());
  try {
    return download_locked(repo_id, opts, repo_dir);
  } catch (...) {
    // A mistyped ORG/NAME (or any download that never produced a snapshot) leaves no folder behind.
    if (created && !fs::exists(repo_dir / "snapshots")) fs::remove_all(repo_dir, ec);
    throw;
  }
}

namespace {

fs::path download_locked(const std::string& repo_id, const ResolveOptions& opts, const fs::path& repo_dir) {
  std::error_code ec;
  const std::string endpoint = effective_endpoint(opts);
  DirLock lock(repo_dir);
  // Another process may have completed the download while we waited for the lock.
  if (auto done = find_cached_model(anelm_hub_dir(opts), repo_id, opts.revision);
      done && fs::is_directory(*done))
    return *done;

  const std::string base = endpoint + "/" + repo_id + "/resolve/" +
                           url_encode_revision(opts.revision) + "/";
  DownloadOptions dl;
  dl.progress = opts.progress ? DownloadProgress(opts.progress) : make_default_progress();
  dl.bearer_token = env_or_empty("HF_TOKEN");
  auto fetch = [&](const std::string& file, const fs::path& dest) {
    dl.label = file;
    download_file(base + file, dest, dl);
  };
  spdlog::info("downloading {} (revision {}) from {} into {}", repo_id, opts.revision, endpoint,
               repo_dir.string());

  // config.json goes first, to a staging folder: its response names the commit (X-Repo-Commit)
  // that the snapshot folder is named after, and a 404/401 here means "no such model" early.
  const fs::path staging = repo_dir / ".incoming";
  DownloadResult first;
  try {
    dl.label = kConfig;
    first = download_file(base + kConfig, staging / kConfig, dl);
  } catch (const HttpError& e) {
    if (e.status() != 401 && e.status() != 404) throw;
    throw Error(ErrorKind::kNotFound,
                std::string(e.what()) + " (does the repository " + repo_id + " exist at revision " +
                    opts.revision + "? for a private or gated model set HF_TOKEN)");
  }
  // Without a commit header (a mirror or test server) the snapshot is named after the revision.
  std::string snap_name = first.repo_commit;
  if (!is_safe_component(snap_name)) {
    snap_name = opts.revision;
    for (char& c : snap_name)
      if (c == '/') c = '_';
  }
  const fs::path snap = repo_dir / "snapshots" / snap_name;
  fs::create_directories(snap, ec);
  fs::rename(staging / kConfig, snap / kConfig, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot move config.json into " + snap.string() + ": " + ec.message());
  fs::remove_all(staging, ec);

  fetch_snapshot_files(snap, base, fetch);
  if (auto missing = missing_parts(snap); !missing.empty())
    throw Error(ErrorKind::kFormat, "downloaded snapshot " + snap.string() + " is incomplete: missing " + missing);
  // The ref is written last: find_cached_model only sees a snapshot once every file is in place.
  write_atomically(repo_dir / "refs" / opts.revision, snap_name);
  spdlog::info("downloaded {} into {}", repo_id, snap.string());
  return snap;
}

}  // namespace

std::string resolve_model_path(const ResolveOptions& opts) {
  std::string model = opts.model;
  std::string source = "--model";
  if (model.empty()) {
    model = env_or_empty("ANELM_MODEL");
    source = "$ANELM_MODEL";
  }
  if (model.empty()) {
    model = kDefaultModel;
    source = "the default model";
  }
  const std::string expanded = expand_home(model);
  if (fs::exists(expanded)) {
    spdlog::debug("model {} ({}) is a local path", expanded, source);
    return expanded;
  }
  if (!is_repo_id(model))
    throw Error(ErrorKind::kNotFound,
                "model '" + model + "' (from " + source +
                    ") is neither an existing GGUF file or model directory nor a HuggingFace repo "
                    "id (ORG/NAME, e.g. " + kDefaultModel + ")");
  check_repo_and_revision(model, opts.revision);

  const fs::path hf_hub = hf_hub_dir(opts);
  const fs::path own_hub = anelm_hub_dir(opts);
  std::string why_hf, why_own;
  if (auto p = find_cached_model(hf_hub, model, opts.revision, &why_hf)) {
    spdlog::info("model {} found in the HuggingFace cache: {}", model, p->string());
    return p->string();
  }
  if (auto p = find_cached_model(own_hub, model, opts.revision, &why_own)) {
    spdlog::info("model {} found in the anelm cache: {}", model, p->string());
    return p->string();
  }

  const bool offline = opts.offline || env_offline();
  if (offline)
    throw Error(ErrorKind::kNotFound,
                "model " + model + " (revision " + opts.revision + ", from " + source +
                    ") is not cached and offline mode (--offline or HF_HUB_OFFLINE=1) forbids "
                    "downloading it. Searched:\n  " + why_hf + "\n  " + why_own +
                    "\nFix: run once without --offline to download it into " + own_hub.string() +
                    ", fetch it with `huggingface-cli download " + model +
                    "`, or pass --model PATH (a GGUF file or HF model directory).");
  try {
    return download_snapshot(model, opts).string();
  } catch (const Error& e) {
    std::string msg = "cannot download model " + model + " (from " + source + "): " + e.what();
    if (source == "--model" || source == "$ANELM_MODEL")
      msg += " (no local file or directory named '" + model + "' exists either)";
    throw Error(e.kind(), msg);
  }
}

}  // namespace anelm::server
