# Shared by the scripts: phase timing and the tool checks.
# shellcheck shell=bash

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
phase_began=$SECONDS
phase_name=""
phase_report=()

phase() {
  phase_end
  phase_name=$1
  phase_began=$SECONDS
  printf '\n==> %s\n' "$phase_name"
}

phase_end() {
  if [[ -n "$phase_name" ]]; then
    local took=$((SECONDS - phase_began))
    phase_report+=("$(printf '%5ds  %s' "$took" "$phase_name")")
    printf '<== %s: %ds\n' "$phase_name" "$took"
    phase_name=""
  fi
}

phase_summary() {
  phase_end
  printf '\nPhases:\n'
  printf '  %s\n' "${phase_report[@]}"
  printf '  %5ds  total\n' "$SECONDS"
}

apt_install() {
  echo "installing from Debian's packages: $*"
  if [[ -z "${apt_updated:-}" ]]; then
    apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# Installs what a fresh machine lacks; says what it cannot install.
ensure_tools() {
  if ! command -v go >/dev/null; then
    # Debian's Go is older than go.mod asks for; GOTOOLCHAIN=auto then fetches
    # the right toolchain from the Go module proxy.
    apt_install golang-go
  fi
  if ! command -v cargo >/dev/null; then
    if [[ -x "$HOME/.cargo/bin/cargo" ]]; then
      export PATH="$HOME/.cargo/bin:$PATH"
    else
      echo "cargo not found: install Rust >= 1.89 with rustup (Debian's rustc is too old)" >&2
      exit 1
    fi
  fi
  if ! command -v javac >/dev/null || ! javac -version 2>&1 | grep -qE 'javac (1[7-9]|2[0-9])'; then
    apt_install openjdk-17-jdk-headless
  fi
  if ! command -v mvn >/dev/null; then
    apt_install maven
  fi
  echo "go: $(go version | cut -d' ' -f3) | $(cargo --version) | $(javac -version 2>&1) | $(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g')"
}

# Builds the native library and the Java classes (main and test), and writes
# the test classpath (Spark and its dependencies) to java/target/$1.
build_native_and_classes() {
  cargo build --release --locked
  (cd "$root/java" && mvn -B -ntp -q test-compile dependency:build-classpath \
    -Dmdep.outputFile="target/$1" -Dmdep.includeScope=test -Dnative.lib.dir="$root/target/release")
}

# Starts a fresh local control plane from the binaries in $1, in directory $2
# (stopped when the calling script exits); its settings are in $2/plane.env.
start_plane() {
  local bin=$1 dir=$2
  "$bin/localplane" stop --dir "$dir" 2>/dev/null || true
  rm -rf "$dir"
  "$bin/localplane" start --dir "$dir" >/dev/null
  # shellcheck disable=SC2064 # expand now: the trap must stop this plane ($? at exit)
  trap "stop_plane \$? '$bin' '$dir'" EXIT
}

# Stops the plane in $3 (binaries in $2). Stopping removes its directory, so
# when the script fails ($1, its exit status, not 0) the plane's logs are
# first copied to target/failed-plane-logs/NAME: the launcher's, the
# apiserver's and controller-manager's, and the audit log (LOCALPLANE_AUDIT_LOG).
stop_plane() {
  local status=$1 bin=$2 dir=$3 kept
  kept="$root/target/failed-plane-logs/$(basename "$dir")"
  rm -rf "$kept" # what an earlier failed run kept
  if ((status != 0)) && [[ -d "$dir" ]]; then
    mkdir -p "$kept"
    local files=("$dir"/*.log "$dir/plane.env") audit file
    audit=$(sed -n 's/^LOCALPLANE_AUDIT_LOG=//p' "$dir/plane.env" 2>/dev/null || true)
    if [[ -n "$audit" && "$audit" != "$dir"/* ]]; then files+=("$audit"); fi
    for file in "${files[@]}"; do
      if [[ -f "$file" ]]; then cp -p "$file" "$kept/" || true; fi
    done
    echo "failed (exit $status): the plane's logs are kept in $kept" >&2
  fi
  "$bin/localplane" stop --dir "$dir" || true
  return "$status"
}

# Runs a Java main the way a Spark driver runs: Spark's JVM options (the java
# @argument file java/jvm.options, which Maven's tests read too), the native
# library, the plane in $1. Rest: classpath, main, args.
spark_java() {
  local plane_env=$1
  shift
  java -Xmx1g @"$root/java/jvm.options" \
    -Djava.library.path="$root/target/release" \
    -Dspark.k8s.native.test.planeEnv="$plane_env" \
    -Dlog4j2.level=WARN \
    -cp "$@"
}
