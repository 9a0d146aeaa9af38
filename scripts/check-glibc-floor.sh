#!/usr/bin/env bash
# Fails when a native library needs a glibc newer than the floor, naming each
# symbol that does: the dynamic loader of an older glibc refuses the whole
# library ("version `GLIBC_2.34' not found").
#   scripts/check-glibc-floor.sh 2.17 LIB.so [LIB.so ...]
# Given a jar, it reads the libraries the jar carries, and fails unless there is
# one for every platform of native_platforms (lib.sh):
#   scripts/check-glibc-floor.sh 2.17 java/target/spark-k8s-native_2.13-0.1.0.jar
set -euo pipefail
floor=$1
shift
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
ensure_llvm_tools
readobj="$llvm_tools/llvm-readobj"

# Prints "VERSION SYMBOL" for every versioned glibc symbol the library imports.
glibc_imports() {
  "$readobj" --dyn-syms "$1" | awk '
    /Name: / { name = $2 }
    /Section: Undefined/ { if (name ~ /@GLIBC_/) { split(name, p, "@"); sub(/^GLIBC_/, "", p[2]); print p[2], p[1] } }'
}

check() {
  local lib=$1 label=$2 newest above
  [[ -f "$lib" ]] || { echo "$label: no such file" >&2; return 1; }
  newest=$(glibc_imports "$lib" | sort -V | tail -1)
  above=$(glibc_imports "$lib" | awk -v floor="$floor" '
    { split($1, v, "."); split(floor, f, ".");
      if (v[1] > f[1] || (v[1] == f[1] && v[2] + 0 > f[2] + 0)) print "  " $2 "@GLIBC_" $1 }' | sort -u)
  if [[ -n "$above" ]]; then
    echo "$label needs a glibc newer than $floor:" >&2
    echo "$above" >&2
    return 1
  fi
  echo "$label: newest glibc symbol ${newest:-none} (floor $floor)"
}

status=0
for path in "$@"; do
  if [[ ! -f "$path" ]]; then
    echo "$path: no such file" >&2
    status=1
  elif [[ "$path" == *.jar ]]; then
    work=$(mktemp -d)
    unzip -q -o "$path" 'org/sparkk8snative/native/*' -d "$work" || true # none: named below
    while IFS= read -r lib; do
      check "$lib" "$path!/${lib#"$work"/}" || status=1
    done < <(find "$work" -name '*.so' | sort)
    for arch in "${native_platforms[@]}"; do
      [[ -f "$work/org/sparkk8snative/native/linux-$arch/libspark_k8s_native.so" ]] ||
        { echo "$path carries no library for linux-$arch" >&2; status=1; }
    done
    rm -rf "$work"
  else
    check "$path" "$path" || status=1
  fi
done
exit "$status"
