#!/usr/bin/env bash
# Runs the openai-SDK end-to-end checks against real anelm server processes on loopback:
# stories260K.gguf (Llama, SentencePiece) and a generated tiny qwen2 model with the real Qwen2.5 tokenizer
# and chat template; the qwen2 runs also run tools_check.mjs (tool calling and structured output) and
# responses_check.mjs (the Responses API) and anthropic_check.mjs (the Anthropic Messages API).
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
exit $status
