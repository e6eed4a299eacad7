# Sourced by scripts/test after common.sh: cross-compiles the kernel suites and the engine's greedy
# parity suites for aarch64 (the NEON kernel table) and runs them under qemu-aarch64-static.
# Correctness only: qemu says nothing about NEON speed.

ANELM_AARCH64_BUILD="${ANELM_AARCH64_BUILD:-$ANELM_ROOT/build-aarch64}"
ANELM_AARCH64_HOST_DEBS=(g++-aarch64-linux-gnu qemu-user-static)
# The :arm64 halves of the libraries the engine and test targets link (multiarch; the header-only
# nlohmann-json3-dev and libcxxopts-dev serve both architectures).
ANELM_AARCH64_TARGET_DEBS=(libspdlog-dev:arm64 libgtest-dev:arm64 libutf8proc-dev:arm64
  libcurl4-openssl-dev:arm64 zlib1g-dev:arm64 libcpp-httplib-dev:arm64)
# Every kernel on the neon table against the scalar reference, then whole models: the naive
# forward, llama.cpp's recorded greedy ids and logits, golden generations, continuous batching.
ANELM_AARCH64_TESTS=(kernels_test deltanet_kernels_test quant_types_test attention_test transformer_test generate_test
  qwen2_llamacpp_test batching_test)

# Adds arm64 to dpkg's architectures and installs the cross toolchain, qemu and the :arm64 packages.
install_cross_aarch64() {
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    log "adding the arm64 dpkg architecture (for the :arm64 -dev packages of the cross build)"
    $sudo dpkg --add-architecture arm64 || return 1
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
  fi
  install_debs "${ANELM_AARCH64_HOST_DEBS[@]}" "${ANELM_AARCH64_TARGET_DEBS[@]}"
}

# Returns 0 when every suite passed, 1 on a failure, 2 when skipped (no toolchain, and neither
# ANELM_REQUIRE_AARCH64 (.ci/run sets it) nor CI is set).
run_aarch64_tests() {
  if ! (install_cross_aarch64); then
    if [ -n "${ANELM_REQUIRE_AARCH64:-}${CI:-}" ]; then
      log "aarch64 cross toolchain could not be installed; CI (ANELM_REQUIRE_AARCH64 or CI set) needs the NEON suites: failing"
      return 1
    fi
    log "SKIPPED the aarch64 NEON suites: could not install g++-aarch64-linux-gnu, qemu-user-static and the :arm64 packages"
    return 2
  fi
  log "cross-compiling the NEON suites for aarch64 ($ANELM_AARCH64_BUILD): ${ANELM_AARCH64_TESTS[*]}"
  local launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
  cmake -S "$ANELM_ROOT" -B "$ANELM_AARCH64_BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$ANELM_ROOT/cmake/aarch64-linux-gnu.cmake" \
    -DANELM_BUILD_TESTS=ON -DANELM_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null || return 1
  cmake --build "$ANELM_AARCH64_BUILD" -j"$(nproc)" --target "${ANELM_AARCH64_TESTS[@]}" || return 1
  # ctest runs each test through qemu (CMAKE_CROSSCOMPILING_EMULATOR of the toolchain file); the
  # engine suites that were not built appear as *_NOT_BUILT placeholders and are left out.
  log "running the aarch64 suites under qemu-aarch64-static (ctest)"
  (cd "$ANELM_AARCH64_BUILD" && ctest -L engine -E '_NOT_BUILT$' --output-on-failure -j"$(nproc)" --timeout 900) || return 1
}
