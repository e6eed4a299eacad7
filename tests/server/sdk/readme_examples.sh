#!/usr/bin/env bash
# Runs the curl examples of README.md ("## Using it", first sh block) against a running server at
# BASE_URL, exactly as written except for the port and --fail-with-body (so a 4xx/5xx fails).
# Prints one ok/FAIL line per example and 'N passed, M failed'. Usage: readme_examples.sh BASE_URL
set -uo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
base="${1:?usage: readme_examples.sh BASE_URL}"

# The first ```sh block after the "## Using it" heading; backslash-continued lines are joined.
mapfile -t examples < <(awk '
  /^## Using it/ { in_section = 1 }
  in_section && /^```sh/ && !done { in_block = 1; next }
  in_block && /^```/ { in_block = 0; done = 1 }
  in_block {
    line = $0
    if (sub(/\\$/, "", line)) { cmd = cmd line; next }
    print cmd line; cmd = ""
  }' "$root/README.md")

pass=0
failed=0
[ ${#examples[@]} -ge 5 ] || { echo "readme: found only ${#examples[@]} curl examples"; echo "0 passed, 1 failed"; exit 1; }
for ex in "${examples[@]}"; do
  cmd="${ex//http:\/\/127.0.0.1:8080/$base}"
  cmd="${cmd/curl /curl --fail-with-body --max-time 60 }"
  if out="$(bash -c "$cmd" 2>&1)" && [ -n "$out" ]; then
    pass=$((pass + 1)); echo "ok   $ex" | cut -c1-110
  else
    failed=$((failed + 1)); echo "FAIL $ex"; echo "$out" | head -5 | sed 's/^/     /'
  fi
done
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
