#!/usr/bin/env bash
# The demo: a real Spark job on the sealed cluster's node, whose executor pods
# are processes. A Spark driver (client mode, inside the cluster's network
# namespace) runs a groupBy with a shuffle on two executor pods, first with
# the native informer and lister, then with Spark's own sources; mid-job one
# executor is OOM-killed and another deleted, and Spark replaces them. Prints
# live what Spark sees, and the apiserver's LIST / WATCH requests at the end.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"

phase "tools"
ensure_tools
bin=$(scripts/localplane-build.sh)

phase "native library and jar"
build_native_and_classes demo.classpath

phase "start the sealed cluster (control plane, scheduler, node agent, kube-proxy, CoreDNS)"
dir="$root/target/localplane-demo"
start_sealed_cluster "$bin" "$dir"

phase "Spark driver on the node: native informer, then Spark's own sources"
java_runner=("$bin/localplane" exec --dir "$dir" --)
spark_java "$dir/plane.env" "java/target/test-classes:java/target/classes:$(cat java/target/demo.classpath)" \
  org.sparkk8snative.demo.NativeInformerDemo

phase "stop the sealed cluster"
stop_sealed_cluster_and_check "$bin" "$dir"

phase_summary
