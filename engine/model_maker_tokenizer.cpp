// Model-maker vocabularies: synthetic byte-level BPE training, HF/GGUF vocab import, GGUF/HF export.
#include "engine/model_maker_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/gguf.h"
#include "engine/gguf_writer.h"

namespace anelm::engine {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kTypeNormal = 1, kTypeControl = 3, kTypeUserDefined = 4, kTypeUnused = 5;
constexpr int kSyntheticVocab = 512;

const char* kChatMlTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}";

const char* kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Training text for the synthetic BPE: short story sentences, so merges look like English.
const char* kSampleText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with "
    "her friends. One day, she saw a big, red ball under a tree. She ran to the ball and picked it up. "
    "The sun was shining and the birds were singing. Lily was very happy. Her mom said, \"Lily, it is "
    "time to come home for dinner.\" Lily said goodbye to her friends and walked home with her mom. "
    "At home, they ate soup and bread. After dinner, Lily read a book about a brave little dog who "
    "wanted to find a friend. The dog looked everywhere: in the garden, by the river, and near the old "
    "house on the hill. At last he found a small cat who was also looking for a friend. They played "
    "together every day and were never lonely again. The end. Tom had a toy car that could go very "
    "fast. He liked to race it down the street with his brother Sam. One morning the car broke, and "
    "Tom was sad. Sam helped him fix it with some glue and tape. Now the car was even faster than "
    "before! The two brothers laughed and played until it was dark. 123 456 7890.";

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// GPT-2's byte -> printable code point table (byte-level BPE token text).
std::vector<std::string> byte_tokens() {
  std::vector<int> cps(256, -1);
  for (int b = 0; b < 256; ++b) {
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) cps[b] = b;
  }
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    if (cps[b] < 0) cps[b] = 256 + n++;
  }
  std::vector<std::string> out(256);
  for (int b = 0; b < 256; ++b) out[b] = utf8(static_cast<uint32_t>(cps[b]));
  return out;
}

// Greedy BPE training on kSampleText: words are " word" pieces; ties break on the pair text so the
// result is deterministic.
MakerVocab synthetic_vocab() {
  MakerVocab v;
  const std::vector<std::string> bytes = byte_tokens();
  v.tokens = bytes;
  std::vector<std::vector<std::string>> words;
  std::string text = kSampleText;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i + 1;
    while (j < text.size() && text[j] != ' ') ++j;
    std::vector<std::string> w;
    for (size_t k = i; k < j; ++k) w.push_back(bytes[static_cast<uint8_t>(text[k])]);
    words.push_back(std::move(w));
    i = j;
  }
  const int n_merges = kSyntheticVocab - 3 - 256;
  while (static_cast<int>(v.merges.size()) < n_merges) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const auto& w : words) {
      for (size_t k = 0; k + 1 < w.size(); ++k) ++counts[{w[k], w[k + 1]}];
    }
    if (counts.empty()) break;
    auto best = counts.begin();
    for (auto it = counts.begin(); it != counts.end(); ++it) {
      if (it->second > best->second) best = it;
    }
    const auto [a, b] = best->first;
    v.merges.push_back(a + " " + b);
    v.tokens.push_back(a + b);
    for (auto& w : words) {
      std::vector<std::string> out;
      for (size_t k = 0; k < w.size(); ++k) {
        if (k + 1 < w.size() && w[k] == a && w[k + 1] == b) {
          out.push_back(a + b);
          ++k;
        } else {
          out.push_back(w[k]);
        }
      }
      w = std::move(out);
    }
  }
  v.types.assign(v.tokens.size(), kTypeNormal);
  // Fill to 509 ids when the text ran out of pairs, then the three ChatML specials.
  while (v.tokens.size() < kSyntheticVocab - 3) {
    v.tokens.push_back("[PAD" + std::to_string(v.tokens.size()) + "]");
    v.types.push_back(kTypeUnused);
  }
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    v.tokens.push_back(s);
    v.types.push_back(kTypeControl);
  }
  v.bos = kSyntheticVocab - 3;  // <|endoftext|>, not added to prompts (add_bos false), as Qwen2
  v.pad = kSyntheticVocab - 3;
  v.eos = kSyntheticVocab - 1;  // <|im_end|>
  v.chat_template = kChatMlTemplate;
  return v;
}

json read_json(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error(ErrorKind::kNotFound, "cannot read '" + p.string() + "'");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kFormat, "'" + p.string() + "': invalid JSON: " + e.what());
  }
}

// tokenizer_config token fields are a string or {"content": ...}.
std::string token_content(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
  return "";
}

MakerVocab hf_vocab(const fs::path& dir) {
  MakerVocab v;
  v.hf_dir = dir.string();
  std::map<int, std::string> by_id;
  std::map<int, bool> added;  // id -> special
  if (fs::exists(dir / "vocab.json")) {
    const json vj = read_json(dir / "vocab.json");  // kept alive: items() refers into it
    for (const auto& [tok, id] : vj.items()) by_id[id.get<int>()] = tok;
    std::ifstream in(dir / "merges.txt");
    if (!in) throw Error(ErrorKind::kNotFound, "'" + dir.string() + "' has vocab.json but no merges.txt");
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line.starts_with("#version")) continue;
      v.merges.push_back(line);
    }
  } else if (fs::exists(dir / "tokenizer.json")) {
    json t = read_json(dir / "tokenizer.json");
    for (const auto& [tok, id] : t["model"]["vocab"].items()) by_id[id.get<int>()] = tok;
    for (const json& m : t["model"]["merges"]) {
      v.merges.push_back(m.is_string() ? m.get<std::string>()
                                       : m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
    const json added_tokens = t.value("added_tokens", json::array());
    for (const json& a : added_tokens) {
      by_id[a["id"].get<int>()] = a["content"].get<std::string>();
      added[a["id"].get<int>()] = a.value("special", false);
    }
  } else {
    throw Error(ErrorKind::kNotFound, "tokenizer dir '" + dir.string() + "' has neither vocab.json nor tokenizer.json");
  }
  json cfg = fs::exists(dir / "tokenizer_config.json") ? read_json(dir / "tokenizer_config.json") : json::object();
  const json decoder = cfg.value("added_tokens_decoder", json::object());
  for (const auto& [k, d] : decoder.items()) {
    int id = std::stoi(k);
    by_id[id] = d.value("content", "");
    added[id] = d.value("special", false);
  }
  if (by_id.empty()) throw Error(ErrorKind::kFormat, "tokenizer dir '" + dir.string() + "' has an empty vocab");
  const int n = by_id.rbegin()->first + 1;
  v.tokens.resize(n);
  v.types.assign(n, kTypeUnused);
  for (int id = 0; id < n; ++id) v.tokens[id] = "[PAD" + std::to_string(id) + "]";
  for (const auto& [id, tok] : by_id) {
    v.tokens[id] = tok;
    v.types[id] = kTypeNormal;
  }
  std::map<std::string, int> ids;
  for (const auto& [id, special] : added) {
    const std::string& s = v.tokens[id];
    bool looks_special = s.starts_with("<|") && s.ends_with("|>");
    v.types[id] = (special || looks_special) ? kTypeControl : kTypeUserDefined;
  }
  for (int id = 0; id < n; ++id) ids[v.tokens[id]] = id;
  auto id_of = [&](const char* key) {
    std::string s = cfg.contains(key) ? token_content(cfg[key]) : "";
    auto it = ids.find(s);
    return s.empty() || it == ids.end() ? -1 : it->second;
  };
  v.eos = id_of("eos_token");
  v.pad = id_of("pad_token");
  v.bos = id_of("bos_token");
  if (v.bos < 0 && ids.count("<|endoftext|>")) v.bos = ids["<|endoftext|>"];  // as convert_hf_to_gguf
  v.add_bos = cfg.value("add_bos_token", false);
  if (cfg.contains("chat_template") && cfg["chat_template"].is_string()) v.chat_template = cfg["chat_template"];
  return v;
}

MakerVocab gguf_vocab(const std::string& path) {
  MakerVocab v;
  v.gguf = GgufFile::open(path);
  v.paddable = false;
  const GgufFile& g = *v.gguf;
  v.tokens = g.get_string_array("tokenizer.ggml.tokens");
  if (g.has("tokenizer.ggml.token_type")) {
    for (int64_t t : g.get_int_array("tokenizer.ggml.token_type")) v.types.push_back(static_cast<int32_t>(t));
  } else {
    v.types.assign(v.tokens.size(), kTypeNormal);
  }
  if (g.has("tokenizer.ggml.merges")) v.merges = g.get_string_array("tokenizer.ggml.merges");
  auto id = [&](const char* key) {
    auto x = g.find_int(key);
    return x && *x >= 0 && *x < static_cast<int64_t>(v.tokens.size()) ? static_cast<int>(*x) : -1;
  };
  v.bos = id("tokenizer.ggml.bos_token_id");
  v.eos = id("tokenizer.ggml.eos_token_id");
  v.pad = id("tokenizer.ggml.padding_token_id");
  v.add_bos = g.find_bool("tokenizer.ggml.add_bos_token").value_or(false);
  v.chat_template = g.find_string("tokenizer.chat_template").value_or("");
  return v;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw Error(ErrorKind::kIo, "cannot write '" + p.string() + "'");
}

}  // namespace

MakerVocab load_maker_vocab(const std::string& source) {
  if (source.empty()) return synthetic_vocab();
  if (fs::is_directory(source)) return hf_vocab(source);
  return gguf_vocab(source);
}

void pad_maker_vocab(MakerVocab& v, int vocab_size) {
  const int n = static_cast<int>(v.tokens.size());
  if (n == vocab_size) return;
  if (n > vocab_size || !v.paddable) {
    throw Error(ErrorKind::kInvalidArgument, "tokenizer has " + std::to_string(n) +
                                                 " tokens but the model vocab is " + std::to_string(vocab_size));
  }
  for (int id = n; id < vocab_size; ++id) {
    v.tokens.push_back("[PAD" + std::to_string(id) + "]");
    v.types.push_back(kTypeUnused);
  }
}

void add_maker_vocab_to_gguf(const MakerVocab& v, GgufWriter& w) {
  if (v.gguf) {
    for (const std::string& k : v.gguf->keys()) {
      if (k.starts_with("tokenizer.")) w.copy_key(*v.gguf, k);
    }
    return;
  }
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "qwen2");
  w.add_string_array("tokenizer.ggml.tokens", v.tokens);
  w.add_i32_array("tokenizer.ggml.token_type", v.types);
  w.add_string_array("tokenizer.ggml.merges", v.merges);
  if (v.eos >= 0) w.add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos));
  if (v.pad >= 0) w.add_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(v.pad));
  if (v.bos >= 0) w.add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos));
  w.add_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  if (!v.chat_template.empty()) w.add_string("tokenizer.chat_template", v.chat_template);
}

// Plain (sorted-key) JSON on purpose: nlohmann's ordered_json inserts in O(n), which makes a
// 150k-token vocab take minutes.
void write_maker_vocab_hf(const MakerVocab& v, const std::string& dir) {
  const fs::path d(dir);
  if (!v.hf_dir.empty()) {
    for (const char* f : {"vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json",
                          "added_tokens.json", "special_tokens_map.json"}) {
      fs::path src = fs::path(v.hf_dir) / f;
      if (!fs::exists(src)) continue;
      fs::copy_file(src, d / f, fs::copy_options::overwrite_existing);
      // Sources may be read-only (shared data); the copy belongs to the new model.
      fs::permissions(d / f, fs::perms::owner_write, fs::perm_options::add);
    }
    return;
  }
  if (v.gguf && v.gguf->find_string("tokenizer.ggml.model").value_or("") != "gpt2") {
    throw Error(ErrorKind::kUnsupported, "cannot write HF tokenizer files from '" + v.gguf->path() +
                                             "': only byte-level BPE (tokenizer.ggml.model gpt2) converts");
  }
  json vocab = json::object(), added = json::array(), decoder = json::object();
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    if (v.types[id] == kTypeControl || v.types[id] == kTypeUserDefined) {
      const bool special = v.types[id] == kTypeControl;
      added.push_back({{"id", id}, {"content", v.tokens[id]}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", !special}, {"special", special}});
      decoder[std::to_string(id)] = {{"content", v.tokens[id]}, {"lstrip", false}, {"normalized", !special},
                                     {"rstrip", false}, {"single_word", false}, {"special", special}};
    } else {
      vocab[v.tokens[id]] = id;
    }
  }
  std::string merges = "#version: 0.2\n";
  for (const std::string& m : v.merges) merges += m + "\n";
  write_text(d / "vocab.json", vocab.dump());
  write_text(d / "merges.txt", merges);
  json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                             {"use_regex", false}};
  json tok = {
      {"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", kQwen2Regex}}}, {"behavior", "Isolated"}, {"invert", false}},
          byte_level}}}},
      {"post_processor", byte_level}, {"decoder", byte_level},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
        {"vocab", vocab}, {"merges", v.merges}}}};
  write_text(d / "tokenizer.json", tok.dump(2));
  auto tok_or_null = [&](int id) { return id >= 0 ? json(v.tokens[id]) : json(nullptr); };
  json cfg = {{"add_bos_token", v.add_bos}, {"add_prefix_space", false},
                      {"added_tokens_decoder", decoder}, {"bos_token", v.add_bos ? tok_or_null(v.bos) : nullptr},
                      {"chat_template", v.chat_template}, {"clean_up_tokenization_spaces", false},
                      {"eos_token", tok_or_null(v.eos)}, {"model_max_length", 32768},
                      {"pad_token", tok_or_null(v.pad)}, {"tokenizer_class", "Qwen2Tokenizer"},
                      {"unk_token", nullptr}};
  write_text(d / "tokenizer_config.json", cfg.dump(2));
}

}  // namespace anelm::engine
