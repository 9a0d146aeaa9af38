#!/usr/bin/env bash
# The fleet benchmark: N drivers of each contender (none, legacy, fabric8,
# native, native with 290 s watches) on one apiserver whose namespace also
# holds other apps' pods, through executor churn, with another client's
# latency measured; every size and contender repeated in a shuffled order.
#   scripts/bench-fleet.sh            full run (10/30/100 drivers x 50 executors, 5,000 other pods,
#                                     5 repetitions of 30 s windows; about 75 minutes):
#                                     BENCHMARKS.md, docs/fleet.png, README.md's fleet table
#   scripts/bench-fleet.sh quick OUT  small numbers, a smoke check of the harness, into OUT/
# BENCH_FLEET_REPS and BENCH_FLEET_WINDOW (seconds) shorten a full run by hand.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"
mode=${1:-full}
if [[ "$mode" == quick ]]; then
  out=${2:-target/bench-fleet-quick}
  markdown="$out/BENCHMARKS.md" chart="$out/fleet.png" readme="$out/README.md"
  mkdir -p "$out"
else
  markdown=BENCHMARKS.md chart=docs/fleet.png readme=README.md
fi

phase "tools"
ensure_tools
bin=$(scripts/localplane-build.sh)

phase "native library and benchmark classes"
build_native_and_classes bench.classpath
# A copy of its own, so a Maven build during the run cannot pull classes from under it.
classes="$root/target/fleet-classes"
rm -rf "$classes" && mkdir -p "$classes"
cp -r java/target/classes "$classes/main" && cp -r java/target/test-classes "$classes/test"

phase "start a dedicated local control plane"
dir="$root/target/localplane-fleet"
start_plane "$bin" "$dir"

# The load apart from what measures it: the control plane (apiserver, etcd in
# the launcher, controller manager) and this JVM (the churn and the other
# client) on CPU 0, the drivers' JVMs on the other CPUs, by CPU affinity, so
# that what the fleet does to everybody else measures the apiserver, not two
# cores shared with the drivers. BENCH_FLEET_CPUS=shared turns it off.
if [[ "${BENCH_FLEET_CPUS:-apart}" == apart && $(nproc) -ge 2 ]]; then
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

phase "fleet benchmark ($mode)"
spark_java "$dir/plane.env" "$classes/test:$classes/main:$(cat java/target/bench.classpath)" \
  org.sparkk8snative.bench.FleetBenchmark "$mode" "$markdown" "$chart" "$readme"
echo "wrote $markdown, $chart and the fleet table of $readme"

phase_summary
