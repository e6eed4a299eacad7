// HF tokenizer file parsing (nlohmann::json stays inside this file).
#include "tokenizer/hf_vocab.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/tokenizer.h"

namespace anelm::tok {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

[[noreturn]] void fail(const fs::path& file, const std::string& what) {
  throw TokenizerError(file.string() + ": " + what);
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json read_json(const fs::path& file) {
  try {
    return json::parse(read_file(file));
  } catch (const json::exception& e) {
    fail(file, std::string("invalid JSON: ") + e.what());
  }
}

// A special-token field is a string, {"content": "..."} or null.
std::optional<std::string> token_content(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

// Places id -> text into `tokens`, growing it; gaps stay empty (marked unused later).
void put_token(VocabData& d, const fs::path& file, const std::string& field, int id, const std::string& text) {
  if (id < 0 || id > (1 << 24)) fail(file, field + ": token \"" + text + "\" has invalid id " + std::to_string(id));
  if (static_cast<size_t>(id) >= d.tokens.size()) d.tokens.resize(id + 1);
  d.tokens[id] = text;
}

void read_vocab_object(VocabData& d, const json& vocab, const fs::path& file, const std::string& field) {
  if (!vocab.is_object()) fail(file, "field " + field + " is missing or not an object");
  for (const auto& [text, id] : vocab.items()) {
    if (!id.is_number_integer()) fail(file, field + ": id of \"" + text + "\" is not an integer");
    put_token(d, file, field, id.get<int>(), text);
  }
}

void add_added(VocabData& d, const fs::path& file, const std::string& field, int id, const std::string& content,
               bool special) {
  put_token(d, file, field, id, content);
  for (auto& a : d.added) {
    if (a.id == id) {
      a = {id, content, special};
      return;
    }
  }
  d.added.push_back({id, content, special});
}

// Which pre-tokenizer a HF pre_tokenizer section describes.
PreTokenizer detect_pre(const json& pre, const fs::path& file) {
  if (pre.is_null()) return PreTokenizer::kNone;
  std::vector<const json*> parts;
  if (pre.value("type", "") == "Sequence" && pre.contains("pretokenizers")) {
    for (const auto& p : pre["pretokenizers"]) parts.push_back(&p);
  } else {
    parts.push_back(&pre);
  }
  bool byte_level_regex = false;
  for (const json* p : parts) {
    const std::string type = p->value("type", "");
    if (type == "Split" && p->contains("pattern")) {
      const std::string re = (*p)["pattern"].value("Regex", (*p)["pattern"].value("String", ""));
      if (re.find("\\p{N}{1,3}") != std::string::npos) return PreTokenizer::kLlama3;
      if (re.find("[\\p{L}\\p{M}]+") != std::string::npos) return PreTokenizer::kQwen35;
      if (re.find("(?i:'s|'t|'re|'ve|'m|'ll|'d)") != std::string::npos) return PreTokenizer::kQwen2;
      if (re.find("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+") != std::string::npos) return PreTokenizer::kGpt2;
      fail(file, "pre_tokenizer: unsupported Split pattern " + re);
    }
    if (type == "ByteLevel" && p->value("use_regex", true)) byte_level_regex = true;
  }
  return byte_level_regex ? PreTokenizer::kGpt2 : PreTokenizer::kNone;
}

bool has_type(const json& node, const std::string& type) {
  if (!node.is_object()) return false;
  if (node.value("type", "") == type) return true;
  for (const char* key : {"normalizers", "pretokenizers", "decoders"}) {
    if (node.contains(key)) {
      for (const auto& n : node[key]) {
        if (has_type(n, type)) return true;
      }
    }
  }
  return false;
}

void read_tokenizer_json(VocabData& d, const fs::path& file) {
  const json j = read_json(file);
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) fail(file, "field model is missing");
  const json& model = j["model"];
  const std::string type = model.value("type", "BPE");
  if (type != "BPE") fail(file, "model.type \"" + type + "\" is not supported (only BPE)");
  read_vocab_object(d, model.contains("vocab") ? model["vocab"] : json(), file, "model.vocab");
  if (!model.contains("merges") || !model["merges"].is_array()) fail(file, "field model.merges is missing or not an array");
  size_t i = 0;
  for (const auto& m : model["merges"]) {
    if (m.is_string()) {
      d.merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      d.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    } else {
      fail(file, "model.merges[" + std::to_string(i) + "] is neither \"a b\" nor [\"a\", \"b\"]");
    }
    ++i;
  }
  d.ignore_merges = model.value("ignore_merges", false);
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const auto& a : j["added_tokens"]) {
      if (!a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") || !a["content"].is_string()) {
        fail(file, "added_tokens: each entry needs an integer id and a string content");
      }
      add_added(d, file, "added_tokens", a["id"].get<int>(), a["content"].get<std::string>(), a.value("special", false));
    }
  }
  const json normalizer = j.value("normalizer", json());
  const json pre = j.value("pre_tokenizer", json());
  d.normalize_nfc = has_type(normalizer, "NFC");
  if (has_type(pre, "ByteLevel") || has_type(pre, "Split")) {
    d.kind = VocabKind::kByteLevelBpe;
    d.pre = detect_pre(pre, file);
  } else if (has_type(pre, "Metaspace") || has_type(normalizer, "Replace") || model.value("byte_fallback", false)) {
    // SentencePiece converted to HF BPE (Llama-2): merge ranks stand in for piece scores, since
    // the converter orders merges by the merged piece's score.
    d.kind = VocabKind::kSentencePiece;
    d.pre = PreTokenizer::kNone;
    d.add_space_prefix = has_type(normalizer, "Prepend") || (pre.is_object() && pre.value("prepend_scheme", "always") != "never");
  } else {
    fail(file, "pre_tokenizer: neither ByteLevel nor Metaspace; unsupported tokenizer");
  }
}

void read_vocab_merges(VocabData& d, const fs::path& dir) {
  const fs::path vocab_file = dir / "vocab.json", merges_file = dir / "merges.txt";
  read_vocab_object(d, read_json(vocab_file), vocab_file, "(top level)");
  std::istringstream in(read_file(merges_file));
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (lineno == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t sp = line.find(' ', 1);
    if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos) {
      fail(merges_file, "line " + std::to_string(lineno) + " is not of the form \"a b\": " + line);
    }
    d.merges.push_back(line);
  }
  const fs::path added_file = dir / "added_tokens.json";
  if (fs::exists(added_file)) {
    const json a = read_json(added_file);
    if (!a.is_object()) fail(added_file, "expected an object of token -> id");
    for (const auto& [content, id] : a.items()) {
      if (!id.is_number_integer()) fail(added_file, "id of \"" + content + "\" is not an integer");
      add_added(d, added_file, "(top level)", id.get<int>(), content, false);
    }
  }
}

int resolve(const VocabData& d, const fs::path& file, const std::string& field, const std::string& text) {
  for (int i = static_cast<int>(d.tokens.size()) - 1; i >= 0; --i) {
    if (d.tokens[i] == text) return i;
  }
  fail(file, field + " \"" + text + "\" is not in the vocabulary");
}

void apply_tokenizer_config(VocabData& d, const fs::path& file, const json& cfg) {
  if (!cfg.is_object()) fail(file, "expected a JSON object");
  std::vector<std::string> special_names;
  if (cfg.contains("added_tokens_decoder") && cfg["added_tokens_decoder"].is_object()) {
    for (const auto& [key, v] : cfg["added_tokens_decoder"].items()) {
      int id = -1;
      try {
        id = std::stoi(key);
      } catch (const std::exception&) {
        fail(file, "added_tokens_decoder: key \"" + key + "\" is not an id");
      }
      const auto content = token_content(v);
      if (!content) fail(file, "added_tokens_decoder." + key + ".content is missing");
      add_added(d, file, "added_tokens_decoder", id, *content, v.value("special", false));
    }
  }
  auto special_id = [&](const char* field) -> int {
    if (!cfg.contains(field)) return -1;
    const auto content = token_content(cfg[field]);
    if (!content) return -1;
    special_names.push_back(*content);
    return resolve(d, file, field, *content);
  };
  if (int id = special_id("bos_token"); id >= 0) d.bos_id = id;
  if (int id = special_id("eos_token"); id >= 0) d.eos_id = id;
  if (int id = special_id("pad_token"); id >= 0) d.pad_id = id;
  if (int id = special_id("unk_token"); id >= 0) d.unk_id = id;
  if (cfg.contains("additional_special_tokens") && cfg["additional_special_tokens"].is_array()) {
    for (const auto& t : cfg["additional_special_tokens"]) {
      if (auto c = token_content(t)) special_names.push_back(*c);
    }
  }
  // Entries known only from added_tokens.json are special when the config names them so.
  for (auto& a : d.added) {
    for (const auto& s : special_names) a.special = a.special || a.content == s;
  }
  if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) d.add_bos = cfg["add_bos_token"].get<bool>();
  if (cfg.contains("add_eos_token") && cfg["add_eos_token"].is_boolean()) d.add_eos = cfg["add_eos_token"].get<bool>();
  if (cfg.contains("chat_template")) {
    const json& t = cfg["chat_template"];
    if (t.is_string()) {
      d.chat_template = t.get<std::string>();
    } else if (t.is_array()) {  // [{"name": "default", "template": "..."}, ...]
      for (const auto& e : t) {
        if (e.value("name", "") == "default" && e.contains("template")) d.chat_template = e["template"].get<std::string>();
      }
    }
  }
}

}  // namespace

VocabData load_hf_vocab(const std::string& dir_str) {
  const fs::path dir(dir_str);
  if (!fs::is_directory(dir)) fail(dir, "not a directory");
  VocabData d;
  const fs::path tj = dir / "tokenizer.json";
  const fs::path cfg_file = dir / "tokenizer_config.json";
  json cfg;
  if (fs::exists(cfg_file)) cfg = read_json(cfg_file);
  if (fs::exists(tj)) {
    d.source = tj.string();
    read_tokenizer_json(d, tj);
  } else if (fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt")) {
    d.source = (dir / "merges.txt").string();
    d.kind = VocabKind::kByteLevelBpe;
    const std::string cls = cfg.is_object() ? cfg.value("tokenizer_class", "") : "";
    // Qwen2Tokenizer (the slow class) NFC-normalises and uses the Qwen2 split regex.
    const bool qwen = cls.find("Qwen") != std::string::npos;
    d.pre = qwen ? PreTokenizer::kQwen2 : PreTokenizer::kGpt2;
    d.normalize_nfc = qwen;
    read_vocab_merges(d, dir);
  } else {
    fail(dir, "no tokenizer files: expected tokenizer.json, or vocab.json and merges.txt");
  }
  d.add_bos = false;
  if (!cfg.is_null()) apply_tokenizer_config(d, cfg_file, cfg);
  // Gaps in the id space (ids nobody defines) stay empty and unused.
  d.types.assign(d.tokens.size(), TokenType::kNormal);
  for (size_t i = 0; i < d.tokens.size(); ++i) {
    if (d.tokens[i].empty()) d.types[i] = TokenType::kUnused;
  }
  if (d.unk_id >= 0) d.types[d.unk_id] = TokenType::kUnknown;
  if (d.kind == VocabKind::kSentencePiece) {
    d.scores.assign(d.tokens.size(), 0.0f);
    // Byte tokens and rank-derived scores for the SentencePiece path.
    for (size_t i = 0; i < d.tokens.size(); ++i) {
      const std::string& t = d.tokens[i];
      if (t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>') d.types[i] = TokenType::kByte;
    }
    std::map<std::string, int, std::less<>> ids;
    for (size_t i = 0; i < d.tokens.size(); ++i) ids[d.tokens[i]] = static_cast<int>(i);
    for (size_t r = 0; r < d.merges.size(); ++r) {
      const std::string& m = d.merges[r];
      const size_t sp = m.find(' ', 1);
      if (sp == std::string::npos) continue;
      const auto it = ids.find(m.substr(0, sp) + m.substr(sp + 1));
      if (it != ids.end() && d.scores[it->second] == 0.0f) d.scores[it->second] = -static_cast<float>(r + 1);
    }
    d.merges.clear();
  }
  return d;
}

std::unique_ptr<Tokenizer> Tokenizer::from_hf_dir(const std::string& dir) {
  return create(load_hf_vocab(dir));
}

}  // namespace anelm::tok
