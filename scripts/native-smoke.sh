#!/usr/bin/env bash
# Proves the library of another architecture, not only builds it: its Rust unit
# tests under qemu-user, then tests/platform/NativeLoadSmoke.java in a JVM of
# that architecture under qemu-user, with the built jar on its classpath: the
# real loader extracts the jar's library for that platform, an informer syncs
# executor pods from the local control plane (the x86_64 apiserver on
# 127.0.0.1), reads health and a lister snapshot, and closes without leaks.
# binfmt is not registered in these sandboxes, so qemu is named.
#   scripts/native-smoke.sh aarch64 [PLANE_DIR]
# PLANE_DIR: a running plane (scripts/test.sh passes its JVM tests' plane);
# without it, one is started for the run. Needs scripts/native-build.sh's
# library and Maven's jar (java/target). Installs Debian's qemu-user and,
# through multiarch, its openjdk-17 JRE for the architecture.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"

arch=${1:?usage: scripts/native-smoke.sh aarch64 [PLANE_DIR]}
plane=${2:-}
case "$arch" in
  aarch64) debian_arch=arm64 ;;
  *) echo "no smoke run for '$arch': give aarch64" >&2; exit 2 ;;
esac
jar=$(shipped_jar "$spark_artifact")
[[ -f "$jar" ]] || { echo "$jar not built: run (cd java && mvn -pl $spark_artifact package)" >&2; exit 1; }

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
env "$runner_var=qemu-$arch" CARGO_TARGET_DIR="$(cargo_target_dir "$arch")" \
  cargo-zigbuild test --release --locked --lib --target "$(zig_target "$arch")"

if [[ -z "$plane" ]]; then
  plane="$root/target/localplane-native-smoke"
  LOCALPLANE_BIN=${LOCALPLANE_BIN:-$(scripts/localplane-build.sh)}
  start_plane "$LOCALPLANE_BIN" "$plane"
fi
kubectl=("${LOCALPLANE_BIN:-$(scripts/localplane-build.sh)}/kubectl" --kubeconfig "$plane/kubeconfig")
app="spark-smoke-$arch-$$"
pods=3
echo "==> $pods executor pods of $app on the plane"
for id in $(seq 1 "$pods"); do
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $app-exec-$id
  labels: {spark-app-selector: $app, spark-role: executor, spark-exec-id: "$id"}
spec:
  containers: [{name: spark-kubernetes-executor, image: spark-k8s-native/smoke}]
---
YAML
done | "${kubectl[@]}" create -f - >/dev/null

work="target/native-smoke/$arch"
rm -rf "$work"
mkdir -p "$work/classes"
# Copied out of Maven's local repository, wherever that is: it follows Java's user.home (or a
# settings.xml), not $HOME, so a path built from $HOME can name a jar that is not there.
slf4j_version=2.0.17
slf4j="$work/slf4j-api-$slf4j_version.jar"
mvn -B -q -ntp dependency:copy -Dartifact="org.slf4j:slf4j-api:$slf4j_version" -DoutputDirectory="$work" \
  -Dmdep.overWriteReleases=true
[[ -f "$slf4j" ]] || { echo "Maven did not copy slf4j-api $slf4j_version to $work" >&2; exit 1; }
javac --release 17 -d "$work/classes" -cp "$jar:$slf4j" tests/platform/NativeLoadSmoke.java

echo "==> NativeLoadSmoke in an $arch JVM under qemu-$arch, the library from $jar"
start=$SECONDS
"qemu-$arch" "$java" -Xshare:off -XX:TieredStopAtLevel=1 \
  -Dspark.kubernetes.native.library.extractDir="$root/$work" \
  -cp "$work/classes:$jar:$slf4j" NativeLoadSmoke "$plane/plane.env" "$app" "$pods"
"${kubectl[@]}" delete pods -l "spark-app-selector=$app" --wait=false >/dev/null
echo "passed in $((SECONDS - start)) s"
