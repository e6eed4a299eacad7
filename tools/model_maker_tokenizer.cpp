// Model-maker vocabularies: synthetic byte-level BPE training, HF/GGUF vocab import, GGUF/HF export.
#include "tools/model_maker_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "server/gguf_vocab.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/hf_vocab.h"

namespace anelm::tools {

using namespace engine;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kTypeNormal = static_cast<int>(tok::TokenType::kNormal);
constexpr int kTypeControl = static_cast<int>(tok::TokenType::kControl);
constexpr int kTypeUserDefined = static_cast<int>(tok::TokenType::kUserDefined);
constexpr int kTypeUnused = static_cast<int>(tok::TokenType::kUnused);
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

// GPT-2's byte -> printable code point table (byte-level BPE token text).
std::vector<std::string> byte_tokens() {
  std::vector<std::string> out(256);
  for (int b = 0; b < 256; ++b) out[b] = tok::byte_level::encode(std::string(1, static_cast<char>(b)));
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

// The tokenizer library's reading of a vocabulary, in the writer's GGUF terms.
MakerVocab from_vocab_data(const tok::VocabData& d) {
  MakerVocab v;
  v.tokens = d.tokens;
  for (tok::TokenType t : d.types) v.types.push_back(static_cast<int32_t>(t));
  v.merges = d.merges;
  v.bos = d.bos_id;
  v.eos = d.eos_id;
  v.pad = d.pad_id;
  v.add_bos = d.add_bos;
  v.chat_template = d.chat_template;
  return v;
}

MakerVocab hf_vocab(const std::string& dir) {
  tok::VocabData d;
  try {
    d = tok::load_hf_vocab(dir);
    tok::finalize_vocab(d);  // token types of the added tokens, as the tokenizer reads them
  } catch (const tok::TokenizerError& e) {
    throw Error(ErrorKind::kFormat, e.what());
  }
  MakerVocab v = from_vocab_data(d);
  // As convert_hf_to_gguf: a model without a BOS token names <|endoftext|>.
  if (v.bos < 0) {
    for (size_t id = 0; id < v.tokens.size(); ++id)
      if (v.tokens[id] == "<|endoftext|>") v.bos = static_cast<int>(id);
  }
  v.hf_dir = dir;
  return v;
}

MakerVocab gguf_vocab(const std::string& path) {
  auto gguf = GgufFile::open(path);
  MakerVocab v;
  try {
    v = from_vocab_data(server::vocab_from_gguf(*gguf));
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::kFormat, e.what());
  }
  v.gguf = std::move(gguf);
  v.paddable = false;
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

void add_maker_vocab_to_gguf(const MakerVocab& v, GgufWriter& w, const std::string& pre) {
  if (v.gguf) {
    for (const std::string& k : v.gguf->keys()) {
      // Keys the model's hyperparameters wrote already (BERT's token_type_count) are the model's.
      if (k.starts_with("tokenizer.") && !(k == "tokenizer.ggml.pre" && !pre.empty()) && !w.has_key(k)) w.copy_key(*v.gguf, k);
    }
    if (!pre.empty()) w.add_string("tokenizer.ggml.pre", pre);
    return;
  }
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", pre.empty() ? "qwen2" : pre);
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

}  // namespace anelm::tools
