// Builds tokenizer VocabData from a GGUF file's tokenizer.* metadata (the bridge engine -> tokenizer).
#pragma once

#include "engine/gguf.h"
#include "tokenizer/vocab.h"

namespace anelm::server {

// Reads tokenizer.ggml.{model, pre, tokens, scores, token_type, merges, *_token_id, add_bos_token,
// add_space_prefix} and tokenizer.chat_template, with llama.cpp's defaults for absent keys
// (SPM: bos 1, eos 2, unk 0, add_bos, space prefix; Qwen2 pre: no BOS, NFC). eog ids are completed
// by tok::finalize_vocab (eos, eot, <|im_end|>, <|endoftext|>, ...).
// Throws std::invalid_argument naming the file and key for missing or inconsistent metadata.
tok::VocabData vocab_from_gguf(const engine::GgufFile& gguf);

}  // namespace anelm::server
