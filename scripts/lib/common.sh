# Shared by scripts/serve and scripts/test: installs missing Debian packages and builds anelm.
set -euo pipefail

ANELM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ANELM_BUILD="${ANELM_BUILD:-$ANELM_ROOT/build}"

ANELM_DEB_PACKAGES=(g++ cmake make pkg-config libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev
  libcxxopts-dev libgtest-dev libutf8proc-dev libcurl4-openssl-dev zlib1g-dev libmimalloc-dev)

log() { echo "[anelm] $*" >&2; }

# Installs the packages in "$@" that dpkg does not know as installed (apt, as root or via sudo).
install_debs() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

build_anelm() {
  install_debs "${ANELM_DEB_PACKAGES[@]}"
  local launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
  if [ ! -f "$ANELM_BUILD/CMakeCache.txt" ]; then
    log "first build: configuring, then compiling (about 6 minutes on 2 cores with the tests; later builds are incremental)"
  fi
  log "configuring ($ANELM_BUILD)"
  cmake -S "$ANELM_ROOT" -B "$ANELM_BUILD" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@"
  log "compiling with $(nproc) jobs"
  cmake --build "$ANELM_BUILD" -j"$(nproc)"
}
