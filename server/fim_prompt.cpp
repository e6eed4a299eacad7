#include "server/fim_prompt.h"

#include <algorithm>

#include "server/api_error.h"

namespace anelm::server {

namespace {

void require_fim(const tok::VocabData& v, const char* param) {
  if (v.fim_pre_id < 0 || v.fim_suf_id < 0 || v.fim_mid_id < 0)
    throw invalid_field(param, std::string(param) +
                                   " (fill-in-the-middle) needs a model whose vocabulary has FIM tokens "
                                   "(<|fim_prefix|>, <|fim_suffix|>, <|fim_middle|> or the like); this one has none");
}

void append(std::vector<int>& to, const std::vector<int>& ids) { to.insert(to.end(), ids.begin(), ids.end()); }

}  // namespace

std::vector<int> fim_prompt(const tok::Tokenizer& tk, const std::vector<int>& prefix, std::string_view suffix) {
  const tok::VocabData& v = tk.vocab();
  require_fim(v, "suffix");
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

std::vector<int> infill_prompt(const tok::Tokenizer& tk, const InfillInput& in, int n_ctx, int n_predict) {
  const tok::VocabData& v = tk.vocab();
  require_fim(v, "input_prefix");
  auto text = [&](const std::string& s) { return tk.encode(s, /*parse_special=*/false); };
  std::vector<int> extra;
  if (v.fim_rep_id >= 0) {
    extra.push_back(v.fim_rep_id);
    append(extra, text("myproject\n"));
  }
  for (const InfillInput::Chunk& c : in.extra) {
    if (v.fim_sep_id >= 0) {
      extra.push_back(v.fim_sep_id);
      append(extra, text(c.filename + "\n"));
    } else {
      append(extra, text("\n\n--- snippet ---\n\n"));
    }
    append(extra, text(c.text));
  }
  if (v.fim_sep_id >= 0) {
    extra.push_back(v.fim_sep_id);
    append(extra, text("filename\n"));
  }
  const int batch = std::min(2048, n_ctx / 2);
  const auto take = [](size_t have, int most) { return std::min(have, static_cast<size_t>(std::max(most, 0))); };
  const size_t n_prefix = take(in.prefix.size(), 3 * (batch / 4));
  const size_t n_suffix = take(in.suffix.size(), batch / 4 - (2 + static_cast<int>(std::min<size_t>(in.prompt.size(), 1 << 20))));
  const size_t n_extra = take(extra.size(), n_ctx - batch - 2 * std::max(n_predict, 0) - 8);

  std::vector<int> ids(extra.end() - static_cast<std::ptrdiff_t>(n_extra), extra.end());
  if (v.add_bos && v.bos_id >= 0) ids.push_back(v.bos_id);
  ids.push_back(v.fim_pre_id);
  ids.insert(ids.end(), in.prefix.end() - static_cast<std::ptrdiff_t>(n_prefix), in.prefix.end());
  append(ids, in.prompt);
  ids.push_back(v.fim_suf_id);
  ids.insert(ids.end(), in.suffix.begin(), in.suffix.begin() + static_cast<std::ptrdiff_t>(n_suffix));
  ids.push_back(v.fim_mid_id);
  return ids;
}

std::shared_ptr<const engine::InfillVocab> build_infill_vocab(const tok::Tokenizer& tk) {
  const tok::VocabData& v = tk.vocab();
  if (v.fim_pre_id < 0 || v.fim_suf_id < 0 || v.fim_mid_id < 0) return nullptr;
  auto out = std::make_shared<engine::InfillVocab>();
  const int n = tk.vocab_size();
  out->pieces.resize(static_cast<size_t>(n));
  out->eog.assign(static_cast<size_t>(n), 0);
  for (int id = 0; id < n; ++id)
    if (!tk.is_special(id)) out->pieces[static_cast<size_t>(id)] = tk.token_bytes(id);
  for (int id : v.eog_ids)
    if (id >= 0 && id < n) out->eog[static_cast<size_t>(id)] = 1;
  out->end_id = v.eot_id >= 0 ? v.eot_id : v.eos_id >= 0 ? v.eos_id : v.eog_ids.empty() ? -1 : v.eog_ids[0];
  return out->end_id >= 0 && out->end_id < n ? out : nullptr;
}

}  // namespace anelm::server
