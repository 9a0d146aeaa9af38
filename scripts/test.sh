#!/usr/bin/env bash
# Runs every test: builds the control plane (cached), the native library and
# the jar, checks formatting and lints, then runs the Rust tests and the JVM
# tests against real local control planes. `make test` calls this; so does CI.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"

phase "tools"
ensure_tools

phase "local control plane binaries"
LOCALPLANE_BIN=$(scripts/localplane-build.sh)
export LOCALPLANE_BIN
echo "$LOCALPLANE_BIN"

phase "plane launcher and node agent unit tests (go test: what the sealed cluster cannot show in minutes)"
# With the flags scripts/localplane-build.sh built them with (-trimpath is part
# of Go's cache key): the test builds reuse their compiled dependencies (etcd,
# client-go, virtual-kubelet) instead of compiling them a second time. The
# launcher's: its fault proxy and its HA load balancer, against stand-ins.
for module in tests/localplane tests/localnode/agent; do
  (cd "$module" && GOFLAGS="${GOFLAGS:-} -trimpath" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" go test ./...)
done

phase "native libraries: ${native_platforms[*]} linked at glibc $glibc_floor, stripped (scripts/native-build.sh)"
scripts/native-build.sh
ensure_cross_build_tools "$host_arch" # cargo-zigbuild on PATH, for the Rust tests

phase "lint (scripts/lint.sh: cargo fmt --check, cargo clippy -D warnings, Java format)"
scripts/lint.sh

# On the shipped library's target: the tests reuse its compiled dependencies
# (a plain `cargo test` would build everything again against this machine's glibc).
phase "Rust tests (real control planes), on $(zig_target "$host_arch")"
cargo-zigbuild test --release --locked --target "$(zig_target "$host_arch")" -- --test-threads="${RUST_TEST_THREADS:-2}"

phase "JVM tests (Maven, the shipped .so, a real control plane, -Xcheck:jni): both artifacts; the full suite on Spark 4.2, the every-line tests on 3.5, 4.0 and 4.1; both deployed to a local Maven repository"
# start_plane stops it on exit, keeping its logs in target/failed-plane-logs/
# if a test failed. One reactor build (java/pom.xml): spark-k8s-native_2.13 (the
# full suite), spark-k8s-native_2.12, then line-tests/spark-{3.5,4.0,4.1}.
jvm_plane="$root/target/localplane-jvm-tests"
maven_repository="$root/target/maven-repository"
start_plane "$LOCALPLANE_BIN" "$jvm_plane"
# `deploy` runs every test of `verify`, then writes the two artifacts to a local
# Maven repository, from which the node tests install them by --packages.
rm -rf "$maven_repository"
# Not installed to ~/.m2 (Spark's Ivy would find the artifacts there first).
(cd java && mvn -B -ntp deploy -Dmaven.install.skip=true \
  -DaltDeploymentRepository="local::file://$maven_repository" \
  -Dnative.dir="$native_dir" \
  -Dtest.plane.env="$jvm_plane/plane.env" \
  -Dtest.jvm.options="-Xcheck:jni")

phase "the artifacts: sources, javadoc, flattened POMs, licences, a library for each of ${native_platforms[*]} at glibc <= $glibc_floor"
scripts/check-artifacts.sh "$maven_repository"

phase "aarch64 under qemu-user: the Rust unit tests, and the jar's library in an aarch64 JVM against the plane"
scripts/native-smoke.sh aarch64 "$jvm_plane"
stop_plane_now "$LOCALPLANE_BIN" "$jvm_plane"

phase "real node: sealed cluster, node smoke tests, real Spark jobs (JVM tests tagged node), node benchmark quick"
# Maven runs inside the node's namespace, offline (nothing leaves it; the
# verify run above resolved every plugin and dependency).
node_plane="$root/target/localplane-node-tests"
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
phase "benchmark figures published into a copy of BENCHMARKS.md and README.md"
check_bench_publish "$root/target/bench-publish-check" \
  target/bench-sources-quick target/bench-fleet-quick target/bench-node-quick

phase_summary
echo "all tests passed"
