#!/usr/bin/env python3
"""Records llama.cpp's token ids for GPT-2's pre-tokenizer (tokenizer.ggml.pre = "gpt-2") as the fixture
tests/tokenizer/gpt2_pre_test.cpp holds anelm against (gpt2_pre_llamacpp.json). There is no GPT-2 vocab in
shared/models: the byte-level BPE vocab of ggml-vocab-qwen2.gguf is used under GPT-2's regex, in the file
`anelm make-model --arch gpt2 --shape tiny --tokenizer-from <it>` writes (make-model sets pre "gpt-2" for
gpt2); the test rebuilds the same vocab (qwen2's keys, pre "gpt-2") itself. Needs the peer kit and a built
anelm.

  python3 tests/data/tokenizer/make_gpt2_pre_fixture.py --anelm build/anelm --peers ../shared/peers/bin \\
      --models ../shared/models --out tests/data/tokenizer/gpt2_pre_llamacpp.json

llamacpp-tokenize --inp (add_special=false, parse_special=false: llama.cpp's test-tokenizer-0)."""
import argparse
import json
import os
import subprocess
import tempfile

SEP = "\n__ggml_vocab_test__\n"
# Where GPT-2's regex ('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)
# parts from Qwen2's / Llama-3's: case-sensitive contractions, unlimited digit runs, a space before
# punctuation and letters glued, no [\r\n]* after punctuation, letters and marks.
TEXTS = [
    "Hello world",
    " Hello world",
    "Hello World!",
    "I'm here, you're there; it's fine. We'll see, they'd go, I've been.",
    "I'M LOUD, YOU'RE LOUD, IT'S LOUD",
    "don't DON'T Don't",
    "3.14159 and 1234567890 and 12 345",
    "ids: 007, 42nd, 3rd, x2, 2x",
    "a  b   c    d",
    "   leading and trailing   ",
    "tabs\there\t\tand\tthere",
    "line one\nline two\n\nline four\n",
    "\n\n\n",
    " \n \n",
    "end.\n\nNext paragraph!\r\nWindows line",
    "punctuation!!! ??? ... --- ,,,",
    "(parens) [brackets] {braces} <angles>",
    "email: someone@example.com, url: https://example.com/a?b=c&d=e",
    "snake_case camelCase PascalCase kebab-case",
    "def f(x):\n    return x ** 2  # square\n",
    "if (a < b && c >= d) { y = a->b; }",
    "naïve café résumé façade",
    "Grüße aus München, Ärger über Öl",
    "Привет, мир! Как дела?",
    "こんにちは世界、元気ですか？",
    "你好，世界。今天天气很好！",
    "مرحبا بالعالم",
    "emoji 😀 🎉👍 and ❤️ flags 🇫🇷",
    "math: ∑ x² ≤ ∞, α+β=γ",
    "\u00a0non-breaking\u00a0space\u2003em space",
    "mixed123abc456 ABC123def",
    "'quoted' \"double\" `back`",
    "it's 's 't 're 've 'm 'll 'd",
    "   ",
    "a",
    "Ⅻ roman ⅳ numerals ½ ¾",
    "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!",
    "<|endoftext|> is text here, not special",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--anelm", default="build/anelm")
    ap.add_argument("--peers", default="../shared/peers/bin")
    ap.add_argument("--models", default="../shared/models")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    vocab = os.path.join(a.models, "ggml-vocab-qwen2.gguf")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "gpt2-qwen2-vocab.gguf")
        subprocess.run([a.anelm, "make-model", "--arch", "gpt2", "--shape", "tiny", "--dtype", "q8_0",
                        "--tokenizer-from", vocab, "--out", model], check=True, capture_output=True)
        inp = os.path.join(tmp, "cases.inp")
        with open(inp, "w", encoding="utf-8", newline="") as f:
            f.write("".join(t + SEP for t in TEXTS))
        out = subprocess.run([os.path.join(a.peers, "llamacpp-tokenize"), model, "--inp", inp], check=True,
                             capture_output=True, text=True).stdout
    lines = out.rstrip("\n").split("\n")
    assert len(lines) == len(TEXTS), (len(lines), len(TEXTS))
    cases = [{"text": t, "ids": [int(x) for x in line.split()]} for t, line in zip(TEXTS, lines)]
    fx = {
        "_comment": "llama.cpp v0.5.0 (shared/peers/bin/llamacpp-tokenize --inp, add_special=false, parse_special=false) "
                    "on `anelm make-model --arch gpt2 --shape tiny --tokenizer-from shared/models/ggml-vocab-qwen2.gguf`: "
                    "Qwen2's byte-level BPE vocab under tokenizer.ggml.pre = gpt-2. Made by "
                    "`python3 tests/data/tokenizer/make_gpt2_pre_fixture.py --out <this file>`.",
        "vocab": "ggml-vocab-qwen2.gguf",
        "pre": "gpt-2",
        "cases": cases,
    }
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(fx, f, ensure_ascii=False, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
