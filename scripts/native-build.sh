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
#   scripts/native-build.sh                 x86_64 and aarch64
#   scripts/native-build.sh aarch64         one platform
#
# zig links against the glibc version named in the target (cargo-zigbuild wraps
# it for cargo and also compiles ring's C with it); both come from PyPI as wheels
# and live in a virtualenv under the project's cache. The aarch64 standard
# library and llvm-objcopy (which reads both architectures) come from rustup.
# Not yet part of `make test`: see docs/platforms.md.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"

glibc_floor=2.17
ziglang_version=0.17.1
cargo_zigbuild_version=0.24.1
arches=("$@")
((${#arches[@]} > 0)) || arches=(x86_64 aarch64)

cache=${SPARK_K8S_NATIVE_CACHE:-$HOME/.cache/spark-k8s-native}
venv="$cache/zig-$ziglang_version-cargo-zigbuild-$cargo_zigbuild_version"
if [[ ! -x "$venv/bin/cargo-zigbuild" ]]; then
  echo "installing zig $ziglang_version and cargo-zigbuild $cargo_zigbuild_version from PyPI into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "ziglang==$ziglang_version" "cargo-zigbuild==$cargo_zigbuild_version"
fi
# cargo-zigbuild finds zig as `python3 -m ziglang` of this virtualenv.
export PATH="$venv/bin:$PATH"

for arch in "${arches[@]}"; do
  case "$arch" in
    x86_64 | aarch64) ;;
    *) echo "unknown platform '$arch': give x86_64 or aarch64" >&2; exit 2 ;;
  esac
  if ! rustup target list --installed | grep -qx "$arch-unknown-linux-gnu"; then
    echo "adding the Rust standard library for $arch-unknown-linux-gnu (rustup)"
    rustup target add "$arch-unknown-linux-gnu"
  fi
done
tools="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
if [[ ! -x "$tools/llvm-objcopy" ]]; then
  echo "adding llvm-objcopy (rustup component llvm-tools)"
  rustup component add llvm-tools
fi

for arch in "${arches[@]}"; do
  triple="$arch-unknown-linux-gnu"
  echo "==> $triple, linked against glibc $glibc_floor"
  cargo-zigbuild zigbuild --release --locked --lib --target "$triple.$glibc_floor"
  built="target/$triple/release/libspark_k8s_native.so"
  shipped="target/native/linux-$arch/libspark_k8s_native.so"
  symbols="target/native/symbols/linux-$arch/libspark_k8s_native.so.debug"
  mkdir -p "$(dirname "$shipped")" "$(dirname "$symbols")"
  "$tools/llvm-objcopy" --only-keep-debug "$built" "$symbols"
  "$tools/llvm-objcopy" --strip-all --add-gnu-debuglink="$symbols" "$built" "$shipped"
  printf '%s: %s bytes built, %s shipped, %s gzipped; symbols in %s\n' "$shipped" \
    "$(stat -c %s "$built")" "$(stat -c %s "$shipped")" "$(gzip -c "$shipped" | wc -c)" "$symbols"
  scripts/check-glibc-floor.sh "$glibc_floor" "$shipped"
done
