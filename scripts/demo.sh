#!/usr/bin/env bash
# The demo: starts a local control plane, plays the kubelet for a few executor
# pods shaped like Spark's, and shows them as a Spark driver's informer would
# select them. Stops the plane at the end.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$root"

phase "tools"
ensure_tools
bin=$(scripts/localplane-build.sh)
dir="$root/target/localplane-demo"
"$bin/localplane" stop --dir "$dir" 2>/dev/null || true

phase "start the local control plane"
"$bin/localplane" start --dir "$dir" >/dev/null
trap '"$bin/localplane" stop --dir "$dir"' EXIT
export KUBECONFIG="$dir/kubeconfig"
kubectl() { "$bin/kubectl" "$@"; }
kubectl version 2>/dev/null | sed 's/^/  /'

app="spark-demo-$(date +%s)"
phase "create 3 executor pods of app $app (as Spark's allocator would)"
for id in 1 2 3; do
  kubectl create -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $app-exec-$id
  labels: {spark-app-selector: $app, spark-role: executor, spark-exec-id: "$id"}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  containers: [{name: spark-kubernetes-executor, image: "spark:4.0.0"}]
YAML
done
selector="spark-app-selector=$app,spark-role=executor,spark-exec-inactive!=true"
kubectl get pods -l "$selector" -L spark-exec-id

phase "play the kubelet: 1 and 2 run, 3 fails with exit code 137, then 2 is deleted"
status() { kubectl patch pod "$app-exec-$1" --subresource=status --type=merge -p "$2" >/dev/null; }
status 1 '{"status":{"phase":"Running"}}'
status 2 '{"status":{"phase":"Running"}}'
status 3 '{"status":{"phase":"Failed","containerStatuses":[{"name":"spark-kubernetes-executor","image":"spark:4.0.0","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}}'
kubectl delete pod "$app-exec-2" --grace-period=0 >/dev/null
kubectl get pods -l "$selector" -L spark-exec-id -o custom-columns='NAME:.metadata.name,EXEC:.metadata.labels.spark-exec-id,PHASE:.status.phase,EXIT:.status.containerStatuses[0].state.terminated.exitCode'

phase_summary
