#!/usr/bin/env bash
# The real-node benchmark: Spark jobs on executor pods that are processes,
# native sources against Spark's own, round after round in one run.
#   scripts/bench-node.sh            full run (warm-up + 5 rounds, about 6 minutes): its section
#                                    of BENCHMARKS.md under target/bench/ (make bench-publish)
#   scripts/bench-node.sh quick OUT  1 round, a smoke check of the harness, into OUT/
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"
mode=${1:-full}
markdown=${bench_results#"$root/"}/BENCHMARKS.md
if [[ "$mode" == quick ]]; then
  markdown=${2:-target/bench-node-quick}/BENCHMARKS.md
fi

phase "tools"
ensure_tools
bin=$(scripts/localplane-build.sh)

phase "native library and benchmark classes"
build_native_and_classes spark-node.classpath

phase "start the sealed cluster"
dir="$root/target/localplane-bench-node"
start_sealed_cluster "$bin" "$dir"

phase "benchmark ($mode): native and legacy, in alternating order"
run_node_benchmark "$bin" "$dir" "$mode" "$root/$markdown"

phase "stop the sealed cluster"
stop_sealed_cluster_and_check "$bin" "$dir"

phase_summary
