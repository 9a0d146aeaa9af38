#!/usr/bin/env bash
# Builds the native library that the jars ship, for every platform a Spark
# driver runs on, at the glibc floor of 2.17 (the manylinux2014 floor and Rust's
# own minimum for *-linux-gnu), stripped, with the symbols kept beside it:
#
#   target/native/linux-<arch>/libspark_k8s_native.so         what a jar carries
#   target/native/symbols/linux-<arch>/libspark_k8s_native.so.debug
#                                       line tables and symbols for backtraces
#                                       (the stripped library names this file
#                                       in its .gnu_debuglink; gdb finds it)
#
# Then it checks every library it wrote against the floor (scripts/check-glibc-floor.sh).
#   scripts/native-build.sh                 every platform of native_platforms (lib.sh)
#   scripts/native-build.sh x86_64          one platform
# `make test` runs it first; the Rust tests then build on the same target
# (cargo-zigbuild test --target "$(zig_target x86_64)"), so that they share its
# compiled dependencies and the JVM tests load the library that ships.
#
# zig links against the glibc version named in the target (cargo-zigbuild wraps
# it for cargo and also compiles ring's C with it); both come from PyPI as wheels
# and live in a virtualenv under the project's cache. The aarch64 standard
# library and llvm-objcopy (which reads both architectures) come from rustup.
# See docs/platforms.md.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"

arches=("$@")
((${#arches[@]} > 0)) || arches=("${native_platforms[@]}")
ensure_cross_build_tools "${arches[@]}"

for arch in "${arches[@]}"; do
  triple="$arch-unknown-linux-gnu"
  echo "==> $triple, linked against glibc $glibc_floor"
  target_dir=$(cargo_target_dir "$arch")
  CARGO_TARGET_DIR="$target_dir" cargo-zigbuild zigbuild --release --locked --lib --target "$(zig_target "$arch")"
  built="$target_dir/$triple/release/libspark_k8s_native.so"
  shipped="$native_dir/linux-$arch/libspark_k8s_native.so"
  symbols="$native_dir/symbols/linux-$arch/libspark_k8s_native.so.debug"
  if [[ ! "$shipped" -nt "$built" ]]; then
    mkdir -p "$(dirname "$shipped")" "$(dirname "$symbols")"
    "$llvm_tools/llvm-objcopy" --only-keep-debug "$built" "$symbols"
    "$llvm_tools/llvm-objcopy" --strip-all --add-gnu-debuglink="$symbols" "$built" "$shipped"
  fi
  printf '%s: %s bytes built, %s shipped, %s gzipped; symbols in %s\n' "$shipped" \
    "$(stat -c %s "$built")" "$(stat -c %s "$shipped")" "$(gzip -c "$shipped" | wc -c)" "$symbols"
  scripts/check-glibc-floor.sh "$glibc_floor" "$shipped"
done
