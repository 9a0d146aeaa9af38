#!/usr/bin/env bash
# THIRD-PARTY-LICENSES: the Rust crates compiled into the shipped library, each
# with its licence text, as every jar carries it (META-INF/, java/pom.xml).
#   scripts/licenses.sh generate   writes it with cargo-about (installed from
#                                  crates.io into the project's cache; a first
#                                  install compiles for a few minutes)
#   scripts/licenses.sh check      fails unless it lists exactly the crates
#                                  Cargo.lock compiles into the library for the
#                                  platforms the jars carry (cargo metadata;
#                                  installs nothing: `make test` runs this)
# `make licenses` generates it; run it after a change to Cargo.lock.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"

cargo_about_version=0.9.3
file=THIRD-PARTY-LICENSES

# "name version" of every crate the file lists, sorted and unique.
listed_crates() {
  sed -n 's/^  crate \([^ ]*\) \([^ ]*\)$/\1 \2/p' "$file" | sort -u
}

# "name version" of every crate the library compiles on the platforms the
# jars carry: the normal (not build, not dev) dependencies reachable from the
# project's own package, from cargo's resolve of Cargo.lock.
compiled_crates() {
  local arch
  for arch in "${native_platforms[@]}"; do
    cargo metadata --format-version 1 --locked --filter-platform "$arch-unknown-linux-gnu" | python3 -c '
import json, sys
meta = json.load(sys.stdin)
packages = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
root = meta["resolve"]["root"]
seen, todo = set(), [root]
while todo:
    node = nodes[todo.pop()]
    for dep in node["deps"]:
        if any(k["kind"] is None for k in dep["dep_kinds"]) and dep["pkg"] not in seen:
            seen.add(dep["pkg"])
            todo.append(dep["pkg"])
for pkg in seen:
    print(packages[pkg]["name"], packages[pkg]["version"])
'
  done | sort -u
}

case "${1:-}" in
  generate)
    cache=${SPARK_K8S_NATIVE_CACHE:-$HOME/.cache/spark-k8s-native}
    tool="$cache/cargo-about-$cargo_about_version"
    if [[ ! -x "$tool/bin/cargo-about" ]]; then
      echo "installing cargo-about $cargo_about_version from crates.io into $tool (compiles; a few minutes)"
      cargo install --locked --quiet --features cli --root "$tool" --version "$cargo_about_version" cargo-about
    fi
    # Offline: the licence texts the crates ship, or the SPDX text of their licence, never fetched.
    "$tool/bin/cargo-about" generate --locked --offline --config scripts/licenses/about.toml \
      --output-file "$file" scripts/licenses/about.hbs
    echo "$file: $(listed_crates | wc -l) crates"
    ;;
  check)
    [[ -f "$file" ]] || { echo "$file is missing: run scripts/licenses.sh generate" >&2; exit 1; }
    if ! difference=$(diff <(listed_crates) <(compiled_crates)); then
      echo "$file does not list the crates Cargo.lock compiles into the library (< listed only, > compiled only):" >&2
      echo "$difference" >&2
      echo "run scripts/licenses.sh generate" >&2
      exit 1
    fi
    echo "$file lists the $(listed_crates | wc -l) crates compiled into the library"
    ;;
  *)
    echo "usage: scripts/licenses.sh generate|check" >&2
    exit 2
    ;;
esac
