#include "server/fim_prompt.h"

#include "server/api_error.h"

namespace anelm::server {

std::vector<int> fim_prompt(const tok::Tokenizer& tk, const std::vector<int>& prefix, std::string_view suffix) {
  const tok::VocabData& v = tk.vocab();
  if (v.fim_pre_id < 0 || v.fim_suf_id < 0 || v.fim_mid_id < 0)
    throw invalid_field("suffix",
                        "suffix (fill-in-the-middle) needs a model whose vocabulary has FIM tokens "
                        "(<|fim_prefix|>, <|fim_suffix|>, <|fim_middle|> or the like); this one has none");
  std::vector<int> ids;
  const bool bos = v.add_bos && v.bos_id >= 0;
  const size_t skip = bos && !prefix.empty() && prefix[0] == v.bos_id ? 1 : 0;  // BOS goes first
  const std::vector<int> suf = tk.encode(suffix, /*parse_special=*/false);
  ids.reserve(prefix.size() + suf.size() + 4);
  if (bos) ids.push_back(v.bos_id);
  ids.push_back(v.fim_pre_id);
  ids.insert(ids.end(), prefix.begin() + static_cast<std::ptrdiff_t>(skip), prefix.end());
  ids.push_back(v.fim_suf_id);
  ids.insert(ids.end(), suf.begin(), suf.end());
  ids.push_back(v.fim_mid_id);
  return ids;
}

}  // namespace anelm::server
