# Cross-compiling for linux/arm64 on a Debian amd64 machine, which needs
#   gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu, and for the test tree the
#   arm64 libraries through Debian multiarch (dpkg --add-architecture arm64).
# The test programs run under qemu-user (qemu-aarch64-static): CTest and
# gtest_discover_tests start them through CMAKE_CROSSCOMPILING_EMULATOR.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
# pkg-config sees the target's .pc files only (multiarch puts them under
# /usr/lib/aarch64-linux-gnu; arch-independent ones under /usr/share).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
