#!/usr/bin/env bash
# Starts or stops a local control plane by hand, for debugging and the demo.
#   scripts/plane.sh up   [DIR]  -> prints DIR/plane.env (source it; KUBECONFIG is LOCALPLANE_KUBECONFIG)
#   scripts/plane.sh down [DIR]
#   scripts/plane.sh ctl  [DIR] METHOD PATH   (fault controls, see tests/localplane/control.go)
# The sealed cluster (a node whose pods are processes; root), in DIR or target/localplane-node:
#   scripts/plane.sh node-up   [DIR]
#   scripts/plane.sh exec      [DIR] -- CMD...   (inside the node namespace, with KUBECONFIG and kubectl)
#   scripts/plane.sh node-down [DIR]            (and checks that nothing of the run is left)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cmd=${1:-}
shift || true
dir=$root/target/localplane-manual
case "$cmd" in node-up | node-down | exec) dir=$root/target/localplane-node ;; esac
if [[ $# -gt 0 && "$1" != "--" && "$cmd" != ctl ]] || [[ "$cmd" == ctl && $# -gt 2 ]]; then
  dir=$1
  shift
fi
bin=$("$root/scripts/localplane-build.sh")
case "$cmd" in
  up)   "$bin/localplane" start --dir "$dir" ;;
  down) "$bin/localplane" stop --dir "$dir" ;;
  ctl)  "$bin/localplane" ctl --dir "$dir" "$@" ;;
  node-up)
    ensure_tools >/dev/null
    # Not start_sealed_cluster: that one stops the cluster when this script exits.
    "$bin/localplane" start --dir "$dir" --node --images "$(sealed_cluster_images "$dir")"
    ;;
  exec)
    [[ "${1:-}" == "--" ]] && shift
    KUBECONFIG=$(plane_var "$dir" LOCALPLANE_KUBECONFIG) PATH="$bin:$PATH" "$bin/localplane" exec --dir "$dir" -- "$@"
    ;;
  node-down)
    stop_sealed_cluster_and_check "$bin" "$dir"
    ;;
  *)    echo "usage: scripts/plane.sh up|down|ctl|node-up|exec|node-down [DIR] ..." >&2; exit 2 ;;
esac
