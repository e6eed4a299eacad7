#!/usr/bin/env python3
"""Records llama.cpp's token ids and detokenized text for BERT's WordPiece over the real vocabulary of
llama.cpp's models/ggml-vocab-bert-bge.gguf (BAAI/bge-small-en-v1.5), as the fixture
tests/tokenizer/wordpiece_test.cpp holds anelm against (wordpiece_llamacpp.json). The vocabulary is
extracted from the peer kit's llama.cpp source bundle by tests/tokenizer/llama_vocab_files.sh (the
repository holds no third-party files). Needs the peer kit (shared/peers).

  python3 tests/data/tokenizer/make_wordpiece_fixture.py --peers ../shared/peers/bin \\
      --out tests/data/tokenizer/wordpiece_llamacpp.json

Each text goes through `llamacpp-tokenize --file F --detok [--special]` (a file, so that NUL and other
control characters reach llama.cpp intact): add_special=false, parse_special=special; detok is
llama_detokenize(ids, remove_special=false, unparse_special=special)."""
import argparse
import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = "ggml-vocab-bert-bge.gguf"

# (text, parse_special): the BERT pre-tokenizer's classes (whitespace, controls, punctuation, ASCII and
# other symbols, CJK ideographs, accent marks), lower-casing and accent stripping, [UNK], long words,
# special-token text, and the detokenizer's space clean-up.
CASES = [
    ("Hello, World!", False),
    ("Café Äpfel naïve résumé façade Tiếng Việt", False),
    ("e\u0301cole, cafe\u0301", False),
    ("Ångström \u212b ß \u1e9e İstanbul \u01c5 \ufb01nance", False),
    ("中文分词测试，你好！Tokyo東京2024年", False),
    ("日本語のテキスト、カタカナ", False),
    ("한국어 텍스트", False),
    ("Ελληνικά άέή Привет, мир! مرحبا नमस्ते", False),
    ("a+b=c; x<y>z $5 ^_^ ~tilde` |pipe| #tag @user 100%", False),
    ("price €5 ©2024 ™ ±1 °C → ∑", False),
    ("this is 🦙.cpp 😀👍", False),
    ("hello 𝔘𝔫𝔦 world abc𝔘 ＦＵＬＬ ｗｉｄｔｈ", False),
    ("supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis", False),
    ("a" * 300 + " " + "ab" * 150, False),
    ("", False),
    ("   \t\n\r\u3000\u00a0\u2028 ", False),
    ("\u200bzero\u200dwidth\ufeff \u0000nul\u0001ctrl\u007fdel\u0085next", False),
    ("\ufffdreplacement\ufffd", False),
    ("[CLS] query [SEP] document [SEP]", True),
    ("[CLS] query [SEP] document [SEP]", False),
    ("[MASK] is [mask], hello[SEP]world[UNK]", True),
    ("it ' s don't we're I'm you'll they've he'd ' quoted '", False),
    ("Hello ,world . How are you ? Fine !", False),
    ("3.14159 1,000,000 42nd 2nd-hand", False),
    ("https://example.com/path?q=1&r=2 user@mail.com", False),
    ("snake_case CamelCase kebab-case UPPER lower MiXeD", False),
    ("line1\r\nline2\tTab\n\n", False),
    ("def f(x):\n    return x ** 2  # square", False),
    ("The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!", False),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peers", default=os.path.join(HERE, "../../../../shared/peers/bin"))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["bash", os.path.join(HERE, "../../tokenizer/llama_vocab_files.sh"), tmp, VOCAB], check=True)
        vocab = os.path.join(tmp, VOCAB)
        if not os.path.exists(vocab):
            raise SystemExit("the llama.cpp source bundle of the peer kit is not installed")
        text_file = os.path.join(tmp, "text.txt")
        for text, special in CASES:
            with open(text_file, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            cmd = [os.path.join(a.peers, "llamacpp-tokenize"), vocab, "--file", text_file, "--detok"]
            if special:
                cmd.append("--special")
            r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            cases.append({"text": text, "special": special, "ids": r["ids"], "detok": r["detok"]})
    fx = {
        "_comment": "llama.cpp v0.5.0 (shared/peers/bin/llamacpp-tokenize --file --detok [--special]: add_special=false, "
                    "parse_special=special; detok = llama_detokenize(ids, remove_special=false, unparse_special=special)) "
                    "on llama.cpp's models/ggml-vocab-bert-bge.gguf. Made by "
                    "`python3 tests/data/tokenizer/make_wordpiece_fixture.py --out <this file>`.",
        "vocab": VOCAB,
        "cases": cases,
    }
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(fx, f, ensure_ascii=False, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
