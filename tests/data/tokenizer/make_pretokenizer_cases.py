#!/usr/bin/env python3
# Writes pretokenizer_cases.json: random strings split by the reference regexes with the Python
# `regex` module (which supports \p{L}/\p{N}); run by hand, not by tests. Seeded, so reproducible.
import json, os, random, regex
PATTERNS = {
    "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "llama3": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
}
POOL = list("aZé'sStTmMdDlLrReEvV 0123456789\n\r\t!?.,-_\"") + [
    "\u00a0", "\u3000", "\u2028", "\u0301", "你", "½", "²", "Ⅻ", "😀", "ǅ", "ʰ", "\x0b", "\x85", "١", "ក", "ា",
    "\u200d", "\ufe0f"]
random.seed(20261122)
texts = ["".join(random.choice(POOL) for _ in range(random.randint(1, 16))) for _ in range(300)]
cases = [{"text": t, **{k: regex.findall(p, t) for k, p in PATTERNS.items()}} for t in texts]
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pretokenizer_cases.json")
json.dump({"generator": "make_pretokenizer_cases.py (python regex " + regex.__version__ + ")", "patterns": PATTERNS,
           "cases": cases}, open(out, "w"), ensure_ascii=False, indent=0)
