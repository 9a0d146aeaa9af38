#!/usr/bin/env bash
# Builds the local control plane (kube-apiserver, kube-controller-manager,
# kubectl from the Go module proxy at the release pinned in
# tests/localplane/go.mod, and the localplane launcher with embedded etcd) into
# a cache outside the repo, keyed by what it is built from, and prints the bin
# directory. Only the first run builds (about 7 minutes on 2 cores); later runs
# reuse the cache.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/tests/localplane"
cache="${SPARK_K8S_NATIVE_CACHE:-$HOME/.cache/spark-k8s-native}"
k8s_version=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' "$src/go.mod")
minor=${k8s_version#v1.}; minor=${minor%%.*}
# Stamp the release into the binaries, as Kubernetes' own build does.
ldflags="-X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"
k8s_key=$( (cat "$src/go.mod" "$src/go.sum"; echo "$ldflags") | sha256sum | cut -c1-12)
bin="$cache/localplane/$k8s_version-$k8s_key"
mkdir -p "$bin"

say() { echo "[localplane-build] $*" >&2; }
export GOFLAGS="${GOFLAGS:-} -trimpath"
# A Go older than go.mod asks for fetches the right toolchain from the module proxy.
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

if [[ ! -x "$bin/kube-apiserver" || ! -x "$bin/kube-controller-manager" || ! -x "$bin/kubectl" ]]; then
  say "building Kubernetes $k8s_version (kube-apiserver, kube-controller-manager, kubectl) into $bin"
  say "first build only: downloads modules and compiles ~3000 packages, about 7 minutes on 2 cores"
  began=$SECONDS
  (cd "$src" && go mod download) >&2
  say "modules downloaded in $((SECONDS - began))s; compiling"
  tmp=$(mktemp -d "$bin/.build.XXXXXX")
  # go build -v names each package it compiles: count them, with the time
  # since the build began (bash's $SECONDS, the same clock as $began).
  (cd "$src" && go build -v -ldflags "$ldflags" -o "$tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver \
      k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kubectl 2>&1) | tee "$bin/build.log" |
    { n=0; while IFS= read -r _; do
        n=$((n + 1))
        if ((n % 250 == 0)); then say "$n packages compiled ($((SECONDS - began))s)"; fi
      done; } \
    || true
  for b in kube-apiserver kube-controller-manager kubectl; do
    if [[ ! -x "$tmp/$b" ]]; then
      tail -40 "$bin/build.log" >&2
      say "FAILED: $b was not built; full log: $bin/build.log"
      exit 1
    fi
    mv "$tmp/$b" "$bin/$b"
  done
  rmdir "$tmp"
  say "Kubernetes binaries built in $((SECONDS - began))s"
fi

launcher_key=$(cat "$src"/go.mod "$src"/go.sum "$src"/*.go | sha256sum | cut -c1-12)
if [[ ! -x "$bin/localplane" || "$(cat "$bin/localplane.key" 2>/dev/null)" != "$launcher_key" ]]; then
  began=$SECONDS
  say "building the localplane launcher (embedded etcd)"
  (cd "$src" && go build -o "$bin/localplane.tmp" . >&2)
  mv "$bin/localplane.tmp" "$bin/localplane"
  echo "$launcher_key" > "$bin/localplane.key"
  say "launcher built in $((SECONDS - began))s"
fi
echo "$bin"
