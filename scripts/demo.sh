#!/usr/bin/env bash
# The demo: a real Spark 4.x driver (client mode) on the local control plane,
# first with the native informer and lister, then with Spark's own watch and
# polling sources, while a script plays the kubelet. Prints live what Spark
# sees and the apiserver's LIST / WATCH requests for the executor pods.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"

phase "tools"
ensure_tools
bin=$(scripts/localplane-build.sh)

phase "native library and jar"
build_native_and_classes demo.classpath

phase "start the local control plane"
dir="$root/target/localplane-demo"
start_plane "$bin" "$dir"

phase "Spark driver: native informer, then legacy sources"
spark_java "$dir/plane.env" "java/target/test-classes:java/target/classes:$(cat java/target/demo.classpath)" \
  org.sparkk8snative.demo.NativeInformerDemo

phase_summary
