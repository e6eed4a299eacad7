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

# What a first build costs, printed before one so people know what they are waiting for: measured from
# scratch (no ccache) with -j2 on the project's VM while other work ran on it (load 2-4): CPU seconds
# of compiling (user + sys) and the wall time. The server's part was built library by library, the
# tests' part as one build after reconfiguring. Re-measure when the code grows: configure a fresh dir,
# `/usr/bin/time cmake --build DIR -j2` with scripts/serve's options, then with the tests and benches on.
ANELM_MEASURED_CPU="2-vCPU AMD EPYC (Zen 3)"
ANELM_MEASURED_DATE="2026-11-29"
ANELM_MEASURED_SERVE_CPU_S=1549   # scripts/serve: the anelm binary and its libraries
ANELM_MEASURED_SERVE_WALL_S=1490
ANELM_MEASURED_TESTS_CPU_S=3114   # scripts/test: the same plus every test suite and bench
ANELM_MEASURED_TESTS_WALL_S=2425

# "N min S s" for a number of seconds.
format_duration() {
  local s=$1
  if [ "$s" -ge 60 ]; then echo "$((s / 60)) min $((s % 60)) s"; else echo "$s s"; fi
}

# Before a build: what the last one with these options took (from $ANELM_BUILD/.anelm-build-times,
# lines "SECONDS KIND first|incremental DATE"), or on a first build the measured estimate above.
announce_build() {
  local kind=$1 times="$ANELM_BUILD/.anelm-build-times"
  local cpu cores
  cpu="$(LC_ALL=C lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n1)"
  cores="$(nproc)"
  if [ ! -f "$ANELM_BUILD/CMakeCache.txt" ]; then
    local cpu_s=$ANELM_MEASURED_SERVE_CPU_S wall_s=$ANELM_MEASURED_SERVE_WALL_S what="the server"
    if [ "$kind" = tests ]; then
      cpu_s=$ANELM_MEASURED_TESTS_CPU_S wall_s=$ANELM_MEASURED_TESTS_WALL_S what="the server, the tests and the benches"
    fi
    log "first build of $what: it took $(format_duration "$wall_s") on a $ANELM_MEASURED_CPU ($ANELM_MEASURED_DATE," \
        "$((cpu_s / 60)) CPU-minutes of compiling, with other work running); here, with $cores cores${cpu:+ ($cpu)}," \
        "at best about $(format_duration $((cpu_s / cores))), with idle cores. CMake prints its percentage as it goes;" \
        "later builds are incremental."
    return 0
  fi
  local last="" first=""
  if [ -f "$times" ]; then
    last="$(awk -v k="$kind" '$2 == k { l = $0 } END { print l }' "$times")"
    first="$(awk -v k="$kind" '$2 == k && $3 == "first" { l = $0 } END { print l }' "$times")"
  fi
  if [ -z "$last" ] && [ "$kind" = tests ]; then
    local more_s=$((ANELM_MEASURED_TESTS_CPU_S - ANELM_MEASURED_SERVE_CPU_S))
    log "first build with the tests in $ANELM_BUILD: $((more_s / 60)) more CPU-minutes than the server's build" \
        "(measured on a $ANELM_MEASURED_CPU), at best about $(format_duration $((more_s / cores))) with $cores idle cores." \
        "CMake prints its percentage as it goes."
  fi
  if [ -n "$last" ]; then
    set -- $last
    log "the last build with these options took $(format_duration "$1") ($4); only what changed is rebuilt"
  fi
  if [ -n "$first" ] && [ "$first" != "$last" ]; then
    set -- $first
    log "(the first, full build in $ANELM_BUILD took $(format_duration "$1") on $4)"
  fi
}

build_anelm() {
  install_debs "${ANELM_DEB_PACKAGES[@]}"
  local launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
  local kind=serve first=incremental start
  case " $* " in *" -DANELM_BUILD_TESTS=ON "*) kind=tests ;; esac
  [ -f "$ANELM_BUILD/CMakeCache.txt" ] || first=first
  announce_build "$kind"
  start=$(date +%s)
  log "configuring ($ANELM_BUILD)"
  cmake -S "$ANELM_ROOT" -B "$ANELM_BUILD" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@"
  log "compiling with $(nproc) jobs"
  cmake --build "$ANELM_BUILD" -j"$(nproc)"
  local took=$(( $(date +%s) - start ))
  echo "$took $kind $first $(date -u +%Y-%m-%d)" >>"$ANELM_BUILD/.anelm-build-times"
  log "build finished in $(format_duration "$took")"
}
