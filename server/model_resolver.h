// Turns --model (a path, a HuggingFace repo id, or nothing) into a local GGUF file or HF directory,
// looking in the HuggingFace cache and anelm's own cache and downloading when allowed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace anelm::server {

// The model served when neither --model nor $ANELM_MODEL is given.
inline constexpr const char* kDefaultModel = "Qwen/Qwen2.5-0.5B-Instruct";
inline constexpr const char* kDefaultEndpoint = "https://huggingface.co";

struct ResolveOptions {
  // Empty: $ANELM_MODEL, else kDefaultModel. An existing path (GGUF file or HF directory) is used
  // as is; otherwise "ORG/NAME" is a HuggingFace repo id.
  std::string model;
  // Never download; a model missing from both caches is an error. $HF_HUB_OFFLINE=1 also sets it.
  bool offline = false;
  // HuggingFace home; empty: $HF_HOME, else ~/.cache/huggingface. Its hub/ folder is searched
  // (or $HF_HUB_CACHE when set and hf_home is empty). Read only: anelm never writes there.
  std::string hf_home;
  // anelm's own cache, where downloads go (in the same hub/ layout); empty: $XDG_CACHE_HOME/anelm,
  // else ~/.cache/anelm.
  std::string cache_dir;
  // Download server; $HF_ENDPOINT replaces it when it is left at the default.
  std::string endpoint = kDefaultEndpoint;
  // Branch, tag or commit to resolve (refs/<revision> in the cache, resolve/<revision> in URLs).
  std::string revision = "main";
  // Download progress per file; empty: a bar on a terminal, log lines otherwise.
  std::function<void(const std::string& file, int64_t done, int64_t total)> progress;
};

// Returns the path of a GGUF file or an HF model directory for opts.model. Order: an existing
// path; a complete snapshot in the HF cache; one in anelm's cache; a download into anelm's cache.
// Throws anelm::Error naming the places searched and how to fix it (kNotFound when missing and
// offline or the server has no such file, kIo for network and disk failures, kInvalidArgument
// for a malformed repo id or revision).
std::string resolve_model_path(const ResolveOptions& opts);

// Downloads repo `repo_id` at opts.revision into anelm's cache (skipping files already complete
// there) and returns the snapshot directory. Ignores opts.offline; resolve_model_path checks it.
std::filesystem::path download_snapshot(const std::string& repo_id, const ResolveOptions& opts);

// ---- building blocks, public for tests and CLI subcommands ----

// "ORG/NAME" with characters from [A-Za-z0-9._-], no ".." and no leading '.' or '-'.
bool is_repo_id(std::string_view s);

// "Qwen/Qwen2.5-0.5B-Instruct" -> "models--Qwen--Qwen2.5-0.5B-Instruct" (HF cache folder name).
std::string repo_folder_name(std::string_view repo_id);

// Hub folders searched, after the environment defaults are applied.
std::filesystem::path hf_hub_dir(const ResolveOptions& opts);
std::filesystem::path anelm_hub_dir(const ResolveOptions& opts);

// The snapshot of repo_id at `revision` under hub_dir (refs/<revision> -> snapshots/<commit>, or
// snapshots/<revision> for a commit hash) when it holds a usable model: config.json, the weights
// (model.safetensors, or the index and every shard it names) and a tokenizer (tokenizer.json or
// vocab.json + merges.txt); or a GGUF-only snapshot holding exactly one .gguf, whose file is
// returned. nullopt otherwise; `why`, when given, receives the reason.
std::optional<std::filesystem::path> find_cached_model(const std::filesystem::path& hub_dir,
                                                       const std::string& repo_id,
                                                       const std::string& revision,
                                                       std::string* why = nullptr);

}  // namespace anelm::server
