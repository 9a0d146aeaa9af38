#!/usr/bin/env bash
# Runs the Rust unit tests for another architecture under qemu-user, then
# tests/platform/NativeLoadSmoke.java in a JVM of another architecture under
# qemu-user (binfmt is not registered in these sandboxes, so qemu is named): the
# real loader finds the library that scripts/native-build.sh shipped for that
# platform, in the jar's layout on the classpath, and runs an informer in it.
#   scripts/native-smoke.sh aarch64
# Installs Debian's qemu-user and, through multiarch, its openjdk-17 JRE for the
# architecture. Not yet part of `make test`: see docs/platforms.md.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"

arch=${1:?usage: scripts/native-smoke.sh aarch64}
case "$arch" in
  aarch64) debian_arch=arm64 ;;
  *) echo "no smoke run for '$arch': give aarch64" >&2; exit 2 ;;
esac
lib="target/native/linux-$arch/libspark_k8s_native.so"
[[ -f "$lib" ]] || { echo "$lib not built: run scripts/native-build.sh $arch" >&2; exit 1; }

java="/usr/lib/jvm/java-17-openjdk-$debian_arch/bin/java"
if ! command -v "qemu-$arch" >/dev/null || [[ ! -x "$java" ]]; then
  dpkg --print-foreign-architectures | grep -qx "$debian_arch" || dpkg --add-architecture "$debian_arch"
  apt_updated="" apt_install --no-install-recommends qemu-user "openjdk-17-jre-headless:$debian_arch"
fi

# The Rust unit tests, built for the architecture and run under qemu (the
# build shares the dependencies of scripts/native-build.sh's).
ensure_cross_build_tools "$arch"
echo "==> Rust unit tests for $arch under qemu-$arch"
runner_var="CARGO_TARGET_$(tr '[:lower:]' '[:upper:]' <<<"$arch")_UNKNOWN_LINUX_GNU_RUNNER"
env "$runner_var=qemu-$arch" cargo-zigbuild test --release --locked --lib --target "$arch-unknown-linux-gnu.$glibc_floor"

slf4j_version=2.0.17
slf4j="$HOME/.m2/repository/org/slf4j/slf4j-api/$slf4j_version/slf4j-api-$slf4j_version.jar"
[[ -f "$slf4j" ]] || mvn -B -q -ntp dependency:get -Dartifact="org.slf4j:slf4j-api:$slf4j_version" -Dtransitive=false
work="target/native-smoke/$arch"
rm -rf "$work"
mkdir -p "$work/classes/org/sparkk8snative/native/linux-$arch"
cp "$lib" "$work/classes/org/sparkk8snative/native/linux-$arch/"
javac --release 17 -d "$work/classes" -cp "$slf4j" -sourcepath java/src/main/java tests/platform/NativeLoadSmoke.java

echo "==> NativeLoadSmoke in an $arch JVM under qemu-$arch"
start=$SECONDS
"qemu-$arch" "$java" -Xshare:off -XX:TieredStopAtLevel=1 \
  -Dspark.kubernetes.native.library.extractDir="$root/$work" \
  -cp "$work/classes:$slf4j" NativeLoadSmoke
echo "passed in $((SECONDS - start)) s"
