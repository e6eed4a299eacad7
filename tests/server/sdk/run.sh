#!/usr/bin/env bash
# Starts `BINARY serve --model MODEL` on a free loopback port, waits for /health 200, runs the
# openai-SDK checks (check.mjs), stops the server. Exit status non-zero on any failure; prints
# 'N passed, M failed'. Usage: run.sh BINARY MODEL [EXTRA_CHECK]   (env: ANELM_SDK_HEALTH_TIMEOUT seconds, default 180)
# EXTRA_CHECK: a script run after check.mjs against the same server: a *.mjs is run with node and the
# /v1 base URL (like check.mjs), anything else is executed with the root URL (readme_examples.sh).
# ANELM_SDK_SKIP_BASIC=1 runs only EXTRA_CHECK (for a model too slow for check.mjs's generic run, e.g.
# the 0.8B-shape Qwen3.5 of qwen35_check.mjs). ANELM_SDK_SERVE_ARGS: extra `serve` flags (e.g.
# "--chat-template FILE"; split on spaces).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:?usage: run.sh BINARY MODEL}"
model="${2:?usage: run.sh BINARY MODEL}"
timeout_s="${ANELM_SDK_HEALTH_TIMEOUT:-180}"

if [ ! -d "$here/node_modules/openai" ]; then
  (cd "$here" && npm ci --no-audit --no-fund >/dev/null 2>&1 || npm install --no-audit --no-fund >/dev/null) ||
    { echo "sdk: npm install failed"; echo "0 passed, 1 failed"; exit 1; }
fi

log="$(mktemp /tmp/anelm-serve.XXXXXX.log)"
# shellcheck disable=SC2086  # ANELM_SDK_SERVE_ARGS: extra serve flags, split on spaces (no spaces in paths)
"$bin" serve --model "$model" --host 127.0.0.1 --port 0 ${ANELM_SDK_SERVE_ARGS:-} >"$log" 2>&1 &
pid=$!
cleanup() {
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$log"
}
trap cleanup EXIT

fail() {
  echo "sdk: $1 ($(basename "$model"))"
  sed 's/^/  server: /' "$log" | tail -20
  echo "0 passed, 1 failed"
  exit 1
}

# The server logs "listening url=http://HOST:PORT" once the port is bound.
port=""
for _ in $(seq 100); do
  port="$(grep -o 'listening url=http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://')"
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || fail "server exited before binding"
  sleep 0.1
done
[ -n "$port" ] || fail "no listening line within 10 s"
base="http://127.0.0.1:$port"

deadline=$((SECONDS + timeout_s))
until [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/health")" = "200" ]; do
  kill -0 "$pid" 2>/dev/null || fail "server exited while loading"
  [ $SECONDS -lt $deadline ] || fail "/health not 200 within ${timeout_s} s"
  sleep 0.2
done

echo "sdk: $(basename "$model") on $base"
status=0
if [ "${ANELM_SDK_SKIP_BASIC:-0}" != 1 ]; then
  node "$here/check.mjs" "$base/v1"
  status=$?
fi
if [ -n "${3:-}" ]; then  # an extra check script
  case "$3" in
    *.mjs) node "$3" "$base/v1" || status=1 ;;
    *) "$3" "$base" || status=1 ;;
  esac
fi

kill -TERM "$pid" 2>/dev/null
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  echo "sdk: server did not exit within 10 s of SIGTERM"
  status=1
else
  wait "$pid"
  code=$?
  if [ "$code" -ne 0 ]; then echo "sdk: server exited with $code after SIGTERM"; status=1; fi
fi
exit $status
