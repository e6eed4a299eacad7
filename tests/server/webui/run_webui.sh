#!/usr/bin/env bash
# The chat page at / in a real browser: Debian's chromium, headless, driven by playwright-core (pinned
# in package.json) through webui_test.mjs against two `anelm serve` processes on a random
# Qwen2.5-shaped model with the real tokenizer and chat template: one without an API key, one with.
# Checks: the page loads with model and health, a reply streams (several DOM updates before its end),
# Stop cancels a long generation (the server logs the client's departure), a reload restores the
# conversations, and with --api-key the page asks for the key, says clearly that a wrong one was
# refused, then works with the right one. Screenshots go to BUILD_DIR/webui-screenshots/.
# Prints PASS/FAIL per check and 'N passed, M failed'; exit 1 on any failure.
#
# Usage: run_webui.sh BUILD_DIR
# Env:   ANELM_WEBUI_KEEP=1  keep the work folder (model, server logs)
#        CHROMIUM           the browser (default /usr/bin/chromium, installed from Debian when missing)
# Where chromium or playwright-core cannot be installed it prints a SKIPPED line and exits 0, except
# when CI or ANELM_REQUIRE_WEBUI=1 is set, where that is a failure.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
build="$(cd "${1:?usage: run_webui.sh BUILD_DIR}" && pwd)"
shared="${ANELM_SHARED_DIR:-$(cd "$root/.." && pwd)/shared}"
chromium="${CHROMIUM:-/usr/bin/chromium}"
api_key="webui-test-key-$RANDOM$RANDOM"

say() { echo "webui: $*"; }
skip_or_fail() {
  if [ -n "${CI:-}" ] || [ "${ANELM_REQUIRE_WEBUI:-0}" = 1 ]; then
    say "FAILED (CI or ANELM_REQUIRE_WEBUI=1): $1"; echo "0 passed, 1 failed"; exit 1
  fi
  say "SKIPPED: $1"
  exit 0
}
# common.sh sets -e; its install_debs runs in a subshell so that a failed apt-get is ours to report.
install() { (source "$root/scripts/lib/common.sh" && install_debs "$@"); }

# Like the SDK and agent checks: without the shared test data (the Qwen2.5 tokenizer) this is a skip.
if [ ! -d "$shared/models/qwen2.5-0.5b-instruct" ]; then
  say "SKIPPED: shared test data not found at $shared (set ANELM_SHARED_DIR)"
  exit 0
fi
[ -x "$build/anelm" ] || { say "no $build/anelm"; echo "0 passed, 1 failed"; exit 1; }

# --- the browser and its driver ---------------------------------------------------------------------
if [ ! -x "$chromium" ] && [ -z "${CHROMIUM:-}" ]; then
  install chromium >/dev/null 2>&1 || true
fi
if [ ! -x "$chromium" ]; then
  [ -n "${CHROMIUM:-}" ] && skip_or_fail "CHROMIUM=$chromium is not an executable"
  skip_or_fail "$chromium is missing and the Debian package chromium could not be installed"
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  install nodejs npm >/dev/null 2>&1 || true
fi
command -v node >/dev/null && command -v npm >/dev/null || skip_or_fail "node/npm missing and could not be installed"
# npm ci from the lock, once per lock (a stamp in node_modules).
stamp="$here/node_modules/.anelm-installed-lock.json"
if ! cmp -s "$here/package-lock.json" "$stamp"; then
  if ! timeout 30 npm ping >/dev/null 2>&1; then
    skip_or_fail "the npm registry ($(npm config get registry)) is unreachable; playwright-core cannot be installed"
  fi
  npm_log="$(mktemp /tmp/anelm-webui-npm.XXXXXX.log)"
  if ! (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >"$npm_log" 2>&1); then
    say "npm ci failed:"; tail -20 "$npm_log" | sed 's/^/  /'; rm -f "$npm_log"
    echo "0 passed, 1 failed"; exit 1
  fi
  rm -f "$npm_log"
  cp "$here/package-lock.json" "$stamp"
fi

# --- the model and the two servers ---------------------------------------------------------------------
work="$(mktemp -d "$build/webui-run.XXXXXX")"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  if [ "${ANELM_WEBUI_KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

model="$work/qwen2-tiny-random.gguf"
if ! "$build/anelm" make-model --arch qwen2 --shape tiny --dtype f16 --format gguf --out "$model" --seed 7 \
    --tokenizer-from "$shared/models/qwen2.5-0.5b-instruct" >"$work/make-model.log" 2>&1; then
  say "make-model failed:"; sed 's/^/  /' "$work/make-model.log"; echo "0 passed, 1 failed"; exit 1
fi

# Starts `anelm serve` with the arguments after $1 (its log); sets url once /health is 200.
# Every end-of-generation token of the vocabulary (<|endoftext|>, <|im_end|>, and the FIM tokens
# <|fim_pad|>, <|repo_name|>, <|file_sep|> that llama.cpp also ends on) is biased away, so a reply runs
# to max_tokens: a reply long enough to watch stream and to stop. (With only the first two biased, one CI run's
# sampled reply ended at 114 of its 120 tokens.)
start_server() {
  local log="$1" port="" deadline pid
  shift
  url=""
  "$build/anelm" serve --model "$model" --alias anelm-test --host 127.0.0.1 --port 0 --ctx 8192 --parallel 2 \
    --logit-bias 151643-100,151645-100,151662-100,151663-100,151664-100 "$@" >"$log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    port="$(grep -o 'listening url=http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://')"
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { say "server exited before binding:"; tail -5 "$log" | sed 's/^/  /'; return 1; }
    sleep 0.1
  done
  [ -n "$port" ] || { say "no listening line within 10 s"; return 1; }
  deadline=$((SECONDS + 120))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = "200" ]; do
    kill -0 "$pid" 2>/dev/null || { say "server exited while loading"; return 1; }
    [ $SECONDS -lt $deadline ] || { say "/health not 200 within 120 s"; return 1; }
    sleep 0.2
  done
  url="http://127.0.0.1:$port"
}
start_server "$work/server.log" || { echo "0 passed, 1 failed"; exit 1; }
base="$url"
start_server "$work/server-key.log" --api-key "$api_key" || { echo "0 passed, 1 failed"; exit 1; }
key_base="$url"

shots="$build/webui-screenshots"
mkdir -p "$shots"
WEBUI_BASE="$base" WEBUI_KEY_BASE="$key_base" WEBUI_API_KEY="$api_key" WEBUI_SERVER_LOG="$work/server.log" \
  WEBUI_OUT="$shots" CHROMIUM="$chromium" node "$here/webui_test.mjs"
code=$?
if [ $code -ne 0 ]; then
  # The servers' warnings and errors, and their last request lines.
  for log in "$work/server.log" "$work/server-key.log"; do
    say "$(basename "$log"):"; grep -E '\[(warning|error|critical)\]| (GET|POST) ' "$log" | tail -8 | cut -c1-300 | sed 's/^/  /'
  done
fi
exit $code
