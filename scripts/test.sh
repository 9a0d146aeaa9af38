#!/usr/bin/env bash
# Runs every test, stage by stage: builds the control plane (cached), the
# native libraries and the jars, checks formatting and lints, then runs the
# Rust tests and the JVM tests against real local control planes, and the
# node's. `make test` calls it with no argument, and so does CI: every stage,
# in this order, each one's time printed at the end.
#
#   scripts/test.sh [STAGE...]    (or make test-STAGE)
#     go        the plane launcher's and the node agent's Go tests
#     native    the shipped libraries, x86_64 and aarch64, at the glibc floor
#     lint      cargo fmt, clippy -D warnings, Java format, licences
#     rust      the Rust tests, against real planes
#     mutants   the quick broken builds of mutants/: each must fail the tests it names
#     jvm       the JVM tests on every Spark line; the artifacts deployed to
#               target/maven-repository and checked
#     jvm-4.2, jvm-4.1, jvm-4.0, jvm-3.5
#               the JVM tests of one Spark line alone (4.2: the full suite)
#     aarch64   the aarch64 Rust unit tests and JVM, under qemu-user
#     node      the sealed cluster: node tests, real Spark jobs, the node
#               benchmark quick, two runs side by side
#     bench     the benchmark harnesses quick, and their figures published into a copy
# A stage run alone first builds what it needs and an earlier stage would have
# built (the plane's binaries always; the libraries, the artifacts), reusing
# what is there.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"

all_stages=(go native lint rust mutants jvm aarch64 node bench)
jvm_plane="$root/target/localplane-jvm-tests"
maven_repository="$root/target/maven-repository"
node_plane="$root/target/localplane-node-tests"
native_built="" deployed="" cross_build_pid=""
cross_arches=()
for arch in "${native_platforms[@]}"; do [[ "$arch" == "$host_arch" ]] || cross_arches+=("$arch"); done
cross_log="$root/target/native-cross-build.log"

stage_go() {
  phase "plane launcher and node agent unit tests (go test: what the sealed cluster cannot show in minutes)"
  # With the flags scripts/localplane-build.sh built them with (-trimpath is part
  # of Go's cache key): the test builds reuse their compiled dependencies (etcd,
  # client-go, virtual-kubelet) instead of compiling them a second time. The
  # launcher's: its fault proxy and its HA load balancer, against stand-ins.
  local module
  for module in tests/localplane tests/localnode/agent; do
    (cd "$module" && GOFLAGS="${GOFLAGS:-} -trimpath" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" go test ./...)
  done
}

# This machine's library first: the Rust and JVM tests run on it. The other
# platforms' are needed only when the jars are packed (the JVM stage), so they
# build meanwhile, in the background and in a build directory of their own, at
# the idle scheduling class: they take only the cores that the Rust tests, which
# mostly wait on planes, leave idle, and never the tests' own time. Not free on 2
# cores: in a cold run the native stage took 229 s instead of 452, but lint took
# 140 s instead of about 60 and the Rust tests' build ran slower too (why is not
# measured: shared caches, or the package cache's lock each cargo takes at start).
stage_native() {
  phase "native library: $host_arch linked at glibc $glibc_floor, stripped (scripts/native-build.sh); ${cross_arches[*]:-no other platform} in the background"
  scripts/native-build.sh "$host_arch"
  native_built=1
  if ((${#cross_arches[@]})); then
    mkdir -p "$(dirname "$cross_log")"
    local idle=(chrt --idle 0)
    "${idle[@]}" true 2> /dev/null || idle=(nice -n 19) # where the idle class is refused
    # A session of its own, so that stop_cross_build stops cargo and every rustc with it.
    setsid "${idle[@]}" scripts/native-build.sh "${cross_arches[@]}" > "$cross_log" 2>&1 &
    cross_build_pid=$!
    at_exit 'stop_cross_build'
    echo "building ${cross_arches[*]} in the background (idle priority): $cross_log"
  fi
}

needs_native() {
  [[ -n "$native_built" ]] || stage_native
}

# A run that ends before the libraries are needed (it failed, or ran only some
# stages) leaves no build behind.
stop_cross_build() {
  [[ -n "$cross_build_pid" ]] || return 0
  kill -TERM -- "-$cross_build_pid" 2> /dev/null || true
  wait "$cross_build_pid" 2> /dev/null || true
}

# Every platform's library, as the jars ship them: waits for the background build.
needs_shipped_libraries() {
  needs_native
  [[ -n "$cross_build_pid" ]] || return 0
  phase "native libraries: ${cross_arches[*]} (built in the background since the native stage)"
  local status=0
  wait "$cross_build_pid" || status=$?
  cross_build_pid=""
  grep -v '^\s*Compiling ' "$cross_log" || true
  ((status == 0)) || { echo "the ${cross_arches[*]} build failed ($status); its log: $cross_log" >&2; exit 1; }
}

stage_lint() {
  phase "lint (scripts/lint.sh: cargo fmt --check, cargo clippy -D warnings, Java format)"
  scripts/lint.sh
}

# On the shipped library's target: the tests reuse its compiled dependencies
# (a plain `cargo test` would build everything again against this machine's glibc).
stage_rust() {
  ensure_cross_build_tools "$host_arch" # cargo-zigbuild on PATH
  phase "Rust tests (real control planes), on $(zig_target "$host_arch")"
  cargo-zigbuild test --release --locked --target "$(zig_target "$host_arch")" -- --test-threads="${RUST_TEST_THREADS:-2}"
}

# The broken builds that the Rust tests and a plane test catch, each in a scratch
# copy (scripts/mutants.sh; make mutants runs them all, the JVM's too): proves
# that those tests can still fail.
stage_mutants() {
  phase "mutants, quick (scripts/mutants.sh --quick: each broken build must fail the tests it names)"
  scripts/mutants.sh --quick --table "$root/target/mutants/table-quick.md"
}

# One reactor build (java/pom.xml): spark-k8s-native_2.13 (the full suite),
# spark-k8s-native_2.12, then line-tests/spark-{3.5,4.0,4.1}. `deploy` runs
# every test of `verify`, then writes the two artifacts to a local Maven
# repository, from which the node tests install them by --packages (not to
# ~/.m2: Spark's Ivy would find them there first).
stage_jvm() {
  needs_shipped_libraries
  phase "JVM tests (Maven, the shipped .so, a real control plane, -Xcheck:jni): both artifacts; the full suite on Spark 4.2, the every-line tests on 3.5, 4.0 and 4.1; both deployed to a local Maven repository"
  jvm_tests deploy -Dmaven.install.skip=true -DaltDeploymentRepository="local::file://$maven_repository"
  deployed=1
  phase "the artifacts: sources, javadoc, flattened POMs, licences, a library for each of ${native_platforms[*]} at glibc <= $glibc_floor"
  scripts/check-artifacts.sh "$maven_repository"
}

# One line's tests: 4.2 is the artifact's full suite; an older line builds the
# artifact it takes without running that suite, then runs its every-line tests.
stage_jvm_line() {
  local line=$1
  needs_shipped_libraries
  phase "JVM tests on Spark $line (the shipped .so, a real control plane, -Xcheck:jni)"
  case "$line" in
    4.2) jvm_tests verify -pl "$spark_artifact" ;;
    3.5 | 4.0 | 4.1) jvm_tests verify -pl "line-tests/spark-$line" -am -Dtest.skipArtifactSuite=true ;;
    *) echo "no Spark line '$line': give 4.2, 4.1, 4.0 or 3.5" >&2; exit 2 ;;
  esac
}

# Maven in java/ with the JVM tests' settings, against the JVM tests' plane
# (started once; start_plane stops it on exit, keeping its logs in
# target/failed-plane-logs/ if a test failed).
jvm_tests() {
  needs_jvm_plane
  [[ "$1" != deploy ]] || rm -rf "$maven_repository"
  (cd java && mvn -B -ntp "$@" \
    -Dnative.dir="$native_dir" \
    -Dtest.plane.env="$jvm_plane/plane.env" \
    -Dtest.jvm.options="-Xcheck:jni")
}

needs_jvm_plane() {
  [[ " ${running_planes[*]} " == *" $jvm_plane "* ]] || start_plane "$LOCALPLANE_BIN" "$jvm_plane"
}

# The artifacts the node tests install by --packages, without the JVM tests,
# when this run did not deploy them.
needs_deployed_artifacts() {
  [[ -n "$deployed" ]] && return
  needs_shipped_libraries
  phase "the artifacts, deployed to target/maven-repository (no tests)"
  rm -rf "$maven_repository"
  (cd java && mvn -B -ntp -q deploy -DskipTests -Dtest.skipArtifactSuite=true -Dmaven.install.skip=true \
    -DaltDeploymentRepository="local::file://$maven_repository" -Dnative.dir="$native_dir")
  deployed=1
}

stage_aarch64() {
  needs_shipped_libraries
  [[ -f "$(shipped_jar "$spark_artifact")" ]] || needs_deployed_artifacts
  phase "aarch64 under qemu-user: the Rust unit tests, and the jar's library in an aarch64 JVM against the plane"
  needs_jvm_plane
  scripts/native-smoke.sh aarch64 "$jvm_plane"
}

# Maven runs inside the node's namespace, offline (nothing leaves it; the
# JVM stage, or the deploy above, resolved every plugin and dependency).
stage_node() {
  needs_deployed_artifacts
  phase "real node: sealed cluster, node smoke tests, real Spark jobs (JVM tests tagged node), node benchmark quick"
  start_sealed_cluster "$LOCALPLANE_BIN" "$node_plane"
  echo "sealed run $(plane_var "$node_plane" LOCALPLANE_RUN_PREFIX): apiserver $(plane_var "$node_plane" LOCALPLANE_APISERVER)"
  (cd java && in_sealed_cluster "$LOCALPLANE_BIN" "$node_plane" mvn -o -B -pl "$spark_artifact" test \
    -Dtest.groups=node -Dtest.excludedGroups=none \
    -Dnative.dir="$native_dir" \
    -Dtest.maven.repository="file://$maven_repository" \
    -Dtest.plane.env="$node_plane/plane.env" \
    -Dtest.jvm.options="-Xcheck:jni")
  # The real-node benchmark in quick mode, on the same cluster: proves the
  # harness runs end to end (both modes, the report); asserts nothing about speed.
  run_node_benchmark "$LOCALPLANE_BIN" "$node_plane" quick "$root/target/bench-node-quick/BENCHMARKS.md"
  stop_sealed_cluster_and_check "$LOCALPLANE_BIN" "$node_plane"

  phase "sealed cluster: two runs side by side, and what a crashed run leaves is cleaned"
  check_sealed_runs_coexist_and_crashes_are_cleaned "$LOCALPLANE_BIN" "$root/target/sealed-runs" \
    "$root/target/$(basename "$node_plane")-images.json" # written by start_sealed_cluster
}

stage_bench() {
  # The benchmark harness in quick mode: proves it runs end to end (all four
  # runs, the report, the chart); asserts nothing about speed.
  phase "benchmark harness, quick mode (scripts/bench.sh sources quick)"
  scripts/bench.sh sources quick target/bench-sources-quick

  # The fleet benchmark in quick mode (2 small fleets, every contender once):
  # fails if any figure of its report is missing; asserts nothing about speed.
  phase "fleet benchmark harness, quick mode (scripts/bench.sh fleet quick)"
  scripts/bench.sh fleet quick target/bench-fleet-quick

  # Figures reach the repository's files only by publishing: into a copy of them,
  # each quick run's sections must land whole, and nothing outside them change.
  # The node benchmark's quick report is the node stage's (an earlier run's when
  # this stage runs alone).
  phase "benchmark figures published into a copy of BENCHMARKS.md and README.md"
  local quick_runs=(target/bench-sources-quick target/bench-fleet-quick)
  [[ -f target/bench-node-quick/BENCHMARKS.md ]] && quick_runs+=(target/bench-node-quick)
  check_bench_publish "$root/target/bench-publish-check" "${quick_runs[@]}"
}

stages=("$@")
((${#stages[@]})) || stages=("${all_stages[@]}")
for stage in "${stages[@]}"; do
  case "$stage" in
    go | native | lint | rust | mutants | jvm | aarch64 | node | bench | jvm-4.2 | jvm-4.1 | jvm-4.0 | jvm-3.5) ;;
    *) echo "no stage '$stage': give any of ${all_stages[*]} jvm-4.2 jvm-4.1 jvm-4.0 jvm-3.5" >&2; exit 2 ;;
  esac
done

phase "tools"
ensure_tools

phase "local control plane binaries"
LOCALPLANE_BIN=$(scripts/localplane-build.sh)
export LOCALPLANE_BIN
echo "$LOCALPLANE_BIN"

for stage in "${stages[@]}"; do
  case "$stage" in
    jvm-*) stage_jvm_line "${stage#jvm-}" ;;
    aarch64)
      stage_aarch64
      stop_plane_now "$LOCALPLANE_BIN" "$jvm_plane" ;;
    *) "stage_$stage" ;;
  esac
done

[[ -z "$cross_build_pid" ]] || needs_shipped_libraries # when no stage after the native one did
phase_summary
echo "stages passed: ${stages[*]}"
[[ "${stages[*]}" != "${all_stages[*]}" ]] || echo "all tests passed"
