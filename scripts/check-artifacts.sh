#!/usr/bin/env bash
# Checks what `mvn deploy` wrote to a Maven repository, as a repository such as
# Maven Central would take it and as Spark's Ivy (`--packages`) resolves it:
#   - exactly the two artifacts, spark-k8s-native_2.13 and _2.12 (not the
#     parent, not the line tests);
#   - each with its jar, sources and javadoc jars, and a flattened POM: no
#     parent to resolve, name, description, url, licenses, scm and developers,
#     Spark provided;
#   - each jar with META-INF/LICENSE, NOTICE and THIRD-PARTY-LICENSES, and a
#     native library for every platform, none above the glibc floor
#     (scripts/check-glibc-floor.sh).
#   scripts/check-artifacts.sh target/maven-repository
# Fails naming each thing missing.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
repo=${1:?usage: scripts/check-artifacts.sh MAVEN_REPOSITORY_DIR}
version=$(project_version)
group_dir="$repo/org/sparkk8snative"
artifacts=(spark-k8s-native_2.13 spark-k8s-native_2.12)
failures=()
fail() { failures+=("$*"); }

deployed=$(find "$group_dir" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort | tr '\n' ' ')
[[ "$deployed" == "$(printf '%s\n' "${artifacts[@]}" | sort | tr '\n' ' ')" ]] ||
  fail "deployed artifacts are [${deployed% }], expected [${artifacts[*]}]"

for artifact in "${artifacts[@]}"; do
  base="$group_dir/$artifact/$version/$artifact-$version"
  for file in "$base.jar" "$base-sources.jar" "$base-javadoc.jar" "$base.pom"; do
    [[ -f "$file" ]] || fail "$file is missing"
  done
  if [[ -f "$base.pom" ]]; then
    ! grep -q '<parent>' "$base.pom" || fail "$base.pom names a parent: not flattened"
    for element in name description url licenses scm developers; do
      grep -qE "<$element[ >]" "$base.pom" || fail "$base.pom has no <$element>"
    done
    grep -A3 '<artifactId>spark-kubernetes_' "$base.pom" | grep -q '<scope>provided</scope>' ||
      fail "$base.pom: Spark is not provided"
  fi
  if [[ -f "$base.jar" ]]; then
    for entry in META-INF/LICENSE META-INF/NOTICE META-INF/THIRD-PARTY-LICENSES; do
      unzip -l "$base.jar" "$entry" >/dev/null 2>&1 || fail "$base.jar has no $entry"
    done
    "$root/scripts/check-glibc-floor.sh" "$glibc_floor" "$base.jar" || fail "$base.jar: native libraries (above)"
    printf '%s: %s bytes\n' "$(basename "$base.jar")" "$(stat -c %s "$base.jar")"
  fi
done

if ((${#failures[@]} > 0)); then
  printf '%s\n' "${failures[@]}" >&2
  exit 1
fi
echo "the repository holds ${artifacts[*]} $version, each with sources, javadoc and a flattened POM"
