#!/usr/bin/env bash
# Runs the curl examples of README.md (every ```sh block of the "## Using it" section) against a running
# server at BASE_URL, exactly as written except for the port and --fail-with-body (so a 4xx/5xx fails).
# Prints one ok/FAIL line per example and 'N passed, M failed'. Usage: readme_examples.sh BASE_URL
set -uo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
base="${1:?usage: readme_examples.sh BASE_URL}"

# One example per curl command: a line starting with "curl" opens it, the lines up to the next curl,
# comment or end of block belong to it (backslash-continued lines joined, other line breaks kept as
# \001, e.g. inside a quoted JSON body). POSIX awk, so mawk runs it too.
mapfile -t examples < <(awk '
  function flush() { if (cmd != "") print cmd; cmd = "" }
  /^## / { if (in_section) { flush(); exit } in_section = ($0 ~ /^## Using it/); next }
  !in_section { next }
  /^```sh/ { in_block = 1; next }
  in_block && /^```/ { flush(); in_block = 0; next }
  !in_block { next }
  /^#/ { flush(); next }
  {
    line = $0
    cont = sub(/\\$/, "", line)
    if (line ~ /^curl /) { flush(); cmd = line }
    else if (cmd != "") cmd = cmd (joined ? "" : "\001") line
    joined = cont
  }
  END { flush() }' "$root/README.md")

pass=0
failed=0
[ ${#examples[@]} -ge 5 ] || { echo "readme: found only ${#examples[@]} curl examples"; echo "0 passed, 1 failed"; exit 1; }
for ex in "${examples[@]}"; do
  ex="${ex//$'\001'/$'\n'}"
  cmd="${ex//http:\/\/127.0.0.1:8080/$base}"
  cmd="${cmd/curl /curl --fail-with-body --max-time 60 }"
  if out="$(bash -c "$cmd" 2>&1)" && [ -n "$out" ]; then
    pass=$((pass + 1)); echo "ok   ${ex%%$'\n'*}" | cut -c1-110
  else
    failed=$((failed + 1)); echo "FAIL $ex"; echo "$out" | head -5 | sed 's/^/     /'
  fi
done
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
