# Cross-compiles anelm for 64-bit Arm Linux with Debian's g++-aarch64-linux-gnu, against the :arm64
# multiarch -dev packages (scripts/lib/cross_aarch64.sh installs both). Test binaries run under
# qemu-aarch64-static through CMAKE_CROSSCOMPILING_EMULATOR, so ctest and gtest_discover_tests work
# unchanged:
#   cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake ...
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Libraries and packages from the Arm sysroot and multiarch dirs only; programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)

find_program(ANELM_QEMU_AARCH64 qemu-aarch64-static)
if(ANELM_QEMU_AARCH64)
  # -L: where qemu finds the Arm dynamic loader. With the :arm64 packages installed it must be the
  # multiarch libc6:arm64 under / (the loader then reads the host's ld.so.cache, which lists the
  # multiarch libc): the cross toolchain's older loader in /usr/aarch64-linux-gnu would be paired
  # with that newer libc.so.6, and the mismatch hangs the first pthread_create.
  if(EXISTS /lib/ld-linux-aarch64.so.1)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${ANELM_QEMU_AARCH64} -L /)
  else()
    set(CMAKE_CROSSCOMPILING_EMULATOR ${ANELM_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
  endif()
endif()
