#!/usr/bin/env bash
# Extracts files of llama.cpp's models/ folder (its tokenizer test vocabularies and vectors that
# ../shared/models lacks) into OUTDIR, from the llama.cpp source bundle the peer kit installs:
#   ${ANELM_PEER_DIR:-$HOME/.cache/anelm-peer}/node_modules/node-llama-cpp/llama/gitRelease.bundle
# The repository holds no third-party files, so tests get them at test time (the LlamaVocabFiles
# ctest fixture runs this into the build tree).
# Usage: llama_vocab_files.sh OUTDIR FILE...    (FILE: a name in models/, e.g. ggml-vocab-bert-bge.gguf)
# Files already in OUTDIR are kept; each new one is written whole, then renamed into place. Without
# the bundle the kit's installer (../shared/peers/install.sh; $ANELM_SHARED_DIR overrides ../shared)
# is run once; if there is still no bundle, nothing is written, a note says so and the exit status is
# 0: the tests that need the files then skip. A FILE that is not in the bundle is an error.
set -euo pipefail
usage() { echo "usage: $0 OUTDIR FILE..." >&2; exit 2; }
[ $# -ge 2 ] || usage
out=$1
shift

missing=()
for f in "$@"; do
  [ -s "$out/$f" ] || missing+=("$f")
done
[ ${#missing[@]} -gt 0 ] || exit 0

peer=${ANELM_PEER_DIR:-${HOME:-}/.cache/anelm-peer}
bundle=$peer/node_modules/node-llama-cpp/llama/gitRelease.bundle

# The shared folder as tests/support/shared_data.cpp finds it: $ANELM_SHARED_DIR, else shared/ beside
# the checkout or one of its parents.
shared_dir() {
  if [ -n "${ANELM_SHARED_DIR:-}" ]; then
    echo "$ANELM_SHARED_DIR"
    return
  fi
  local p
  p=$(cd "$(dirname "$0")/../.." && pwd -P)
  while [ -n "$p" ]; do
    [ -d "$p/shared/models" ] && { echo "$p/shared"; return; }
    [ -d "$p/../shared/models" ] && { (cd "$p/../shared" && pwd -P); return; }
    [ "$p" = / ] && break
    p=$(dirname "$p")
  done
}

if [ ! -f "$bundle" ]; then
  kit="$(shared_dir)/peers"
  if [ -x "$kit/install.sh" ]; then
    "$kit/install.sh" --check >/dev/null 2>&1 || "$kit/install.sh" >&2 || true
  fi
fi
if [ ! -f "$bundle" ]; then
  echo "llama_vocab_files: no llama.cpp source bundle at $bundle (the llama.cpp peer kit is not" \
       "installed: ../shared/peers/install.sh); nothing extracted" >&2
  exit 0
fi

repo=$(mktemp -d "${TMPDIR:-/tmp}/anelm-llama-vocab.XXXXXX")
trap 'rm -rf "$repo"' EXIT
git -C "$repo" init -q
git -C "$repo" fetch -q "$bundle"
mkdir -p "$out"
for f in "${missing[@]}"; do
  tmp=$(mktemp "$out/.$f.XXXXXX")
  if ! git -C "$repo" show "FETCH_HEAD:models/$f" >"$tmp"; then
    rm -f "$tmp"
    echo "llama_vocab_files: models/$f is not in $bundle" >&2
    exit 1
  fi
  chmod 644 "$tmp"
  mv "$tmp" "$out/$f"
done
