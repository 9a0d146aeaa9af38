#!/usr/bin/env bash
# The lint, one definition for `make lint` and scripts/test.sh (CI): Rust
# formatting, clippy with warnings as errors, the crates' licences the jars carry
# against Cargo.lock, and the Java formatting check.
#   JAVA_FORMAT_CHECK=0 scripts/lint.sh   skips the Java check
#   make format                           formats Rust and Java sources
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

cargo fmt --all -- --check
cargo clippy --release --locked --all-targets -- -D warnings
# The crates' licences the jars carry still match Cargo.lock.
scripts/licenses.sh check
if [[ "${JAVA_FORMAT_CHECK:-1}" == 1 ]]; then
  # google-java-format through Spotless (java/pom.xml); `spotless:apply` fixes.
  (cd java && mvn -B -ntp -q -N spotless:check)
fi
