#!/usr/bin/env bash
# The replace block of go.mod for a Kubernetes release. k8s.io/kubernetes's own
# go.mod replaces each staging module (k8s.io/api, k8s.io/client-go, ...) with
# ./staging/src/..., which a module that requires k8s.io/kubernetes cannot
# see; so this module pins each of them to its published tag of that release
# (Kubernetes v1.36.3 -> v0.36.3).
#   tests/localplane/gen-replaces.sh VERSION      print the block, e.g. for v1.36.3
#   tests/localplane/gen-replaces.sh -w VERSION   rewrite go.mod: the k8s.io/kubernetes
#                                                 require and the replace block
# `make bump-kubernetes K8S_VERSION=...` runs -w, then go mod tidy.
# Reads nothing but the Go module proxy (and its cache).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
gomod_file=${GO_MOD_FILE:-$here/go.mod} # another file: to try -w on a copy

write=0
if [[ "${1:-}" == -w ]]; then
  write=1
  shift
fi
version=${1:-}
if [[ ! "$version" =~ ^v1\.([0-9]+)\.([0-9]+)(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: $0 [-w] VERSION   (a Kubernetes release, e.g. v1.36.3)" >&2
  exit 2
fi
staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
# A Go older than a go.mod asks for fetches the right toolchain from the module proxy.
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

# Outside any module, so that the look-ups touch neither go.mod nor go.sum.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

kube_mod=$(go mod download -json "k8s.io/kubernetes@$version" |
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
if [[ ! -f "$kube_mod" ]]; then
  echo "no go.mod for k8s.io/kubernetes@$version" >&2
  exit 1
fi

# "OLD => NEW" of every replace directive of a go.mod, one pair a line (the
# block form and the one-line form; a version on either side is dropped).
replaces() {
  awk '
    function pair(first,   i) {
      for (i = first; i <= NF; i++) if ($i == "=>") { print $first, $(i + 1); return }
    }
    $1 == "replace" && $2 == "(" { block = 1; next }
    block && $1 == ")" { block = 0; next }
    block { pair(1); next }
    $1 == "replace" { pair(2) }
  ' "$1"
}

# The staging modules, each only if the proxy serves its tag of this release
# (a replace by a version that does not exist would break the build); any
# other error (network) stops here rather than drop a module quietly.
modules=()
while read -r module; do
  if go list -m -json "$module@$staging" >/dev/null 2>"$work/err"; then
    modules+=("$module")
  elif grep -qE '40[34] |410 |not available|not found|unknown revision|invalid version' "$work/err"; then
    echo "skipped $module: $module@$staging is not served ($(head -1 "$work/err"))" >&2
  else
    cat "$work/err" >&2
    exit 1
  fi
done < <(replaces "$kube_mod" | awk '$2 ~ /^\.\/staging\// {print $1}' | LC_ALL=C sort -u)
if ((${#modules[@]} == 0)); then
  echo "k8s.io/kubernetes@$version: no staging module found at $staging" >&2
  exit 1
fi

block() {
  echo "replace ("
  for module in "${modules[@]}"; do
    printf '\t%s => %s %s\n' "$module" "$module" "$staging"
  done
  echo ")"
}
if ((write == 0)); then
  block
  exit 0
fi

# The require line by go mod edit (it keeps go.mod's form); the replace block
# as text, in place of the old one (go mod edit would split it into one-line
# directives). `go mod tidy` (make bump-kubernetes) then settles the rest.
go mod edit "-require=k8s.io/kubernetes@$version" "$gomod_file"
block >"$work/block"
awk -v block="$work/block" '
  function put(line) { while ((getline line < block) > 0) print line; placed = 1 }
  /^replace \($/ { put(); skip = 1; next }
  skip { if ($0 == ")") skip = 0; next }
  /^replace k8s\.io\// { next }
  { print }
  END { if (!placed) { print ""; put() } }
' "$gomod_file" >"$work/go.mod"
cat "$work/go.mod" >"$gomod_file"
echo "rewrote $gomod_file for Kubernetes $version (${#modules[@]} staging modules at $staging)" >&2
