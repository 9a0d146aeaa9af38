#!/usr/bin/env bash
# The JVM benchmarks, each against the contenders it is measured with, on a
# dedicated local control plane:
#   sources  Spark's legacy sources, a fabric8 informer + lister and the native
#            sources, each in its own JVM feeding Spark's real snapshot store, one
#            after the other (full: about 36 minutes)
#   fleet    N drivers of each contender (none, legacy, fabric8, native, native with
#            290 s watches) on one apiserver whose namespace also holds other apps'
#            pods, through executor churn, with another client's latency measured;
#            every size and contender repeated in a shuffled order (full: 10/30/100
#            drivers x 50 executors, 5,000 other pods, 5 repetitions of 30 s
#            windows; about 75 minutes). BENCH_FLEET_REPS and BENCH_FLEET_WINDOW
#            (seconds) shorten a full run by hand.
#
#   scripts/bench.sh BENCHMARK            full run: its sections of BENCHMARKS.md and
#                                         README.md, and its chart, under target/bench/
#   scripts/bench.sh BENCHMARK quick OUT  small numbers, a smoke check of the harness, into OUT/
#   scripts/bench.sh publish [FROM [TO]]  copies every section of FROM's BENCHMARKS.md and
#                                         README.md (target/bench: what full runs wrote) into
#                                         TO's (the repository), and FROM/docs/*.png into TO/docs
# A run never rewrites the repository's BENCHMARKS.md or README.md itself: figures are
# published on purpose, once looked at, and each section names the commit it measured.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"
benchmark=${1:?usage: scripts/bench.sh sources|fleet [quick OUT] | publish [FROM [TO]]}
mode=${2:-full}

if [[ "$benchmark" == publish ]]; then
  from=${2:-$bench_results} to=${3:-$root}
  published=0
  for file in BENCHMARKS.md README.md; do
    [[ -f "$from/$file" ]] || continue
    merge_markdown_sections "$from/$file" "$to/$file"
    for name in $(markdown_section_names "$from/$file"); do
      echo "published section $name of $file"
      published=$((published + 1))
    done
  done
  for chart in "$from"/docs/*.png; do
    [[ -f "$chart" ]] || continue
    mkdir -p "$to/docs" && cp "$chart" "$to/docs/"
    echo "published docs/$(basename "$chart")"
  done
  if ((published == 0)); then
    echo "nothing to publish in $from: run a full benchmark first (make bench, bench-fleet, bench-node, bench-informer)" >&2
    exit 1
  fi
  exit 0
fi
case "$benchmark" in
  sources) main=org.sparkk8snative.bench.SnapshotSourcesBenchmark chart_name=benchmark.png ;;
  fleet) main=org.sparkk8snative.bench.FleetBenchmark chart_name=fleet.png ;;
  *) echo "unknown benchmark $benchmark: sources or fleet" >&2 && exit 2 ;;
esac
if [[ "$mode" == quick ]]; then
  out=${3:-target/bench-$benchmark-quick}
  markdown="$out/BENCHMARKS.md" chart="$out/$chart_name" readme="$out/README.md"
  mkdir -p "$out"
else
  markdown=$bench_results/BENCHMARKS.md chart=$bench_results/docs/$chart_name readme=$bench_results/README.md
fi

# Every section the run writes names the commit it measured.
BENCH_COMMIT=$(git describe --always --dirty 2> /dev/null || echo unknown)
export BENCH_COMMIT

phase "tools"
ensure_tools
bin=$(scripts/localplane-build.sh)

phase "native library and benchmark classes"
build_native_and_classes bench.classpath
# A copy of its own, so a Maven build during the run cannot pull classes from under it.
classes="$root/target/bench-$benchmark-classes"
rm -rf "$classes" && mkdir -p "$classes"
cp -r java/target/classes "$classes/main" && cp -r java/target/test-classes "$classes/test"

phase "start a dedicated local control plane"
dir="$root/target/localplane-bench-$benchmark"
start_plane "$bin" "$dir"

# The fleet's load apart from what measures it: the control plane (apiserver,
# etcd in the launcher, controller manager) and the benchmark's JVM (the churn
# and the other client) on CPU 0, the drivers' JVMs on the other CPUs, by CPU
# affinity, so that what the fleet does to everybody else measures the
# apiserver, not two cores shared with the drivers. BENCH_FLEET_CPUS=shared
# turns it off.
if [[ "$benchmark" == fleet && "${BENCH_FLEET_CPUS:-apart}" == apart && $(nproc) -ge 2 ]]; then
  plane_pid=$(sed -n 's/^LOCALPLANE_PID=//p' "$dir/plane.env")
  pids=("$plane_pid")
  for ((i = 0; i < ${#pids[@]}; i++)); do
    mapfile -t -O "${#pids[@]}" pids < <(pgrep -P "${pids[$i]}" || true)
  done
  for pid in "${pids[@]}"; do taskset -a -p -c 0 "$pid" > /dev/null; done
  export FLEET_DRIVERS_CPUS="1-$(($(nproc) - 1))"
  java_runner=(taskset -c 0)
  echo "control plane (${#pids[@]} processes) and the benchmark on CPU 0, drivers on CPUs $FLEET_DRIVERS_CPUS"
fi

phase "benchmark $benchmark ($mode)"
spark_java "$dir/plane.env" "$classes/test:$classes/main:$(cat java/target/bench.classpath)" \
  "$main" "$mode" "$markdown" "$chart" "$readme"
echo "wrote $markdown, $chart and $readme's table"
[[ "$mode" == quick ]] || echo "publish them into the repository's BENCHMARKS.md and README.md: make bench-publish"

phase_summary
