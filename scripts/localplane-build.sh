#!/usr/bin/env bash
# Builds the local control plane into a cache outside the repo, keyed by what
# it is built from, and prints the bin directory:
#  - from tests/localplane (Kubernetes at the release pinned in its go.mod):
#    kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy,
#    kubectl, and the localplane launcher with embedded etcd;
#  - from tests/localnode (modules of their own: they need a newer client-go):
#    node-agent (the node whose pods are processes) and coredns.
# Only the first run builds (about 12 minutes on 2 cores); later runs reuse the
# cache, and a change to one module rebuilds only that module.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/tests/localplane"
cache="${SPARK_K8S_NATIVE_CACHE:-$HOME/.cache/spark-k8s-native}"
k8s_version=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' "$src/go.mod")
minor=${k8s_version#v1.}; minor=${minor%%.*}
# Stamp the release into the binaries, as Kubernetes' own build does.
# -s -w: no symbol table or DWARF, which halves each link (the plane is never debugged from them).
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"
k8s_key=$( (cat "$src/go.mod" "$src/go.sum"; echo "$ldflags") | sha256sum | cut -c1-12)
bin="$cache/localplane/$k8s_version-$k8s_key"
mkdir -p "$bin"

say() { echo "[localplane-build] $*" >&2; }
export GOFLAGS="${GOFLAGS:-} -trimpath"
# A Go older than go.mod asks for fetches the right toolchain from the module proxy.
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

# go_build DIR LOG LDFLAGS OUT PACKAGE...: builds into OUT (a directory, or
# a file for one package), showing progress:
# go build -v names each package it compiles; count them, with the time since
# the build began (bash's $SECONDS, the same clock as $began).
go_build() {
  local dir=$1 log=$2 flags=$3 out=$4
  shift 4
  (cd "$dir" && go mod download) >&2
  say "modules downloaded in $((SECONDS - began))s; compiling"
  (cd "$dir" && go build -v -ldflags "$flags" -o "$out" "$@" 2>&1) | tee "$log" |
    { n=0; while IFS= read -r _; do
        n=$((n + 1))
        if ((n % 250 == 0)); then say "$n packages compiled ($((SECONDS - began))s)"; fi
      done; } \
    || true
}

# install_built LOG NAME...: moves what go_build made into $bin, or fails naming what is missing.
install_built() {
  local log=$1
  shift
  for b in "$@"; do
    if [[ ! -x "$tmp/$b" ]]; then
      tail -40 "$log" >&2
      say "FAILED: $b was not built; full log: $log"
      exit 1
    fi
    mv "$tmp/$b" "$bin/$b"
  done
  rm -rf "$tmp"
}

kube_binaries=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl)
missing=()
for b in "${kube_binaries[@]}"; do [[ -x "$bin/$b" ]] || missing+=("$b"); done
if ((${#missing[@]} > 0)); then
  say "building Kubernetes $k8s_version (${missing[*]}) into $bin"
  say "first build only: downloads modules and compiles ~3000 packages, about 8 minutes on 2 cores"
  began=$SECONDS
  tmp=$(mktemp -d "$bin/.build.XXXXXX")
  go_build "$src" "$bin/build.log" "$ldflags" "$tmp/" "${missing[@]/#/k8s.io/kubernetes/cmd/}"
  install_built "$bin/build.log" "${missing[@]}"
  say "Kubernetes binaries built in $((SECONDS - began))s"
fi

# build_module NAME DIR [PACKAGE]: our own Go programs, rebuilt when their source changes.
build_module() {
  local name=$1 dir=$2 key
  # Every Go file of the module, its packages' too (tests/localplane/internal/...), in a fixed order.
  key=$( (cat "$dir"/go.mod "$dir"/go.sum; find "$dir" -name '*.go' ! -name '*_test.go' -print0 | LC_ALL=C sort -z |
    xargs -0 cat) | sha256sum | cut -c1-12)
  if [[ -x "$bin/$name" && "$(cat "$bin/$name.key" 2>/dev/null)" == "$key" ]]; then
    return
  fi
  began=$SECONDS
  say "building $name from ${dir#"$root"/}${3:+ ($3)}"
  tmp=$(mktemp -d "$bin/.build.XXXXXX")
  go_build "$dir" "$bin/$name-build.log" "-s -w" "$tmp/$name" .
  install_built "$bin/$name-build.log" "$name"
  echo "$key" > "$bin/$name.key"
  say "$name built in $((SECONDS - began))s"
}

build_module localplane "$src" "embedded etcd"
build_module node-agent "$root/tests/localnode/agent" "virtual-kubelet; first build ~4 minutes"
build_module coredns "$root/tests/localnode/coredns" "first build ~3 minutes"
echo "$bin"
