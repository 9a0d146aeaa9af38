#!/usr/bin/env bash
# Runs every test: builds the control plane (cached), the native library and
# the jar, checks formatting and lints, then runs the Rust tests and the JVM
# tests against real local control planes. `make test` calls this; so does CI.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$root"

phase "tools"
ensure_tools

phase "local control plane binaries"
LOCALPLANE_BIN=$(scripts/localplane-build.sh)
export LOCALPLANE_BIN
echo "$LOCALPLANE_BIN"

phase "native library (cargo build --release)"
cargo build --release --locked

phase "lint (cargo fmt --check, cargo clippy -D warnings)"
cargo fmt --all -- --check
cargo clippy --release --locked --all-targets -- -D warnings

phase "Rust tests (real control planes)"
cargo test --release --locked -- --test-threads="${RUST_TEST_THREADS:-2}"

phase "JVM tests (Maven, real .so, a real control plane, -Xcheck:jni)"
jvm_plane="$root/target/localplane-jvm-tests"
"$LOCALPLANE_BIN/localplane" stop --dir "$jvm_plane" 2>/dev/null || true
"$LOCALPLANE_BIN/localplane" start --dir "$jvm_plane" >/dev/null
trap '"$LOCALPLANE_BIN/localplane" stop --dir "$jvm_plane"' EXIT
(cd java && mvn -B -ntp verify \
  -Dnative.lib.dir="$root/target/release" \
  -Dtest.plane.env="$jvm_plane/plane.env" \
  -Dtest.jvm.options="-Xcheck:jni")

# The benchmark harness in quick mode: proves it runs end to end (all four
# runs, the report, the chart); asserts nothing about speed.
phase "benchmark harness, quick mode (scripts/bench.sh quick)"
scripts/bench.sh quick target/bench-quick

phase_summary
echo "all tests passed"
