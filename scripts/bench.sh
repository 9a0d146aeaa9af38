#!/usr/bin/env bash
# The three-way benchmark: Spark's legacy sources, a fabric8 informer
# + lister, and the native sources, each in its own JVM feeding Spark's real
# snapshot store, one after the other on a dedicated local control plane.
#   scripts/bench.sh            full run (about 15 minutes): BENCHMARKS.md, docs/benchmark.png,
#                               README.md's headline table
#   scripts/bench.sh quick OUT  small numbers, a smoke check of the harness, into OUT/
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"
mode=${1:-full}
if [[ "$mode" == quick ]]; then
  out=${2:-target/bench-quick}
  markdown="$out/BENCHMARKS.md" chart="$out/benchmark.png" readme="$out/README.md"
  mkdir -p "$out"
else
  markdown=BENCHMARKS.md chart=docs/benchmark.png readme=README.md
fi

phase "tools"
ensure_tools
bin=$(scripts/localplane-build.sh)

phase "native library and benchmark classes"
build_native_and_classes bench.classpath
# A copy of its own, so a Maven build during the run cannot pull classes from under it.
classes="$root/target/bench-classes"
rm -rf "$classes" && mkdir -p "$classes"
cp -r java/target/classes "$classes/main" && cp -r java/target/test-classes "$classes/test"

phase "start a dedicated local control plane"
dir="$root/target/localplane-bench"
start_plane "$bin" "$dir"

phase "benchmark ($mode): floor, legacy, fabric8, native"
spark_java "$dir/plane.env" "$classes/test:$classes/main:$(cat java/target/bench.classpath)" \
  org.sparkk8snative.bench.SnapshotSourcesBenchmark "$mode" "$markdown" "$chart" "$readme"
echo "wrote $markdown, $chart and the headline table of $readme"

phase_summary
