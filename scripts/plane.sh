#!/usr/bin/env bash
# Starts or stops a local control plane by hand, for debugging and the demo.
#   scripts/plane.sh up   [DIR]  -> prints DIR/plane.env (source it; KUBECONFIG is LOCALPLANE_KUBECONFIG)
#   scripts/plane.sh down [DIR]
#   scripts/plane.sh ctl  [DIR] METHOD PATH   (fault controls, see tests/localplane/control.go)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
dir=${2:-$root/target/localplane-manual}
bin=$("$root/scripts/localplane-build.sh")
case "$cmd" in
  up)   "$bin/localplane" start --dir "$dir" ;;
  down) "$bin/localplane" stop --dir "$dir" ;;
  ctl)  shift 2; "$bin/localplane" ctl --dir "$dir" "$@" ;;
  *)    echo "usage: scripts/plane.sh up|down|ctl [DIR] ..." >&2; exit 2 ;;
esac
