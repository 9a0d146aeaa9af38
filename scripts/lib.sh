# Shared by the scripts: phase timing and the tool checks.
# shellcheck shell=bash

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The Maven module of the Spark 4.x artifact (java/pom.xml lists every module): the
# demo, the benchmarks and the real node run on its Spark line; its build directory
# is java/target.
spark_artifact=spark-k8s-native_2.13
phase_began=$SECONDS
phase_name=""
phase_report=()
# Where full benchmark runs write their sections of BENCHMARKS.md and README.md,
# and their charts: the repository's copies change only by `scripts/bench.sh publish`.
bench_results="$root/target/bench"

# The names of the sections (<!-- NAME:start --> ... <!-- NAME:end -->) of a
# markdown file, as the benchmarks write them.
markdown_section_names() {
  sed -n 's/^<!-- \([A-Za-z0-9_-]*\):start -->$/\1/p' "$1"
}

# Rewrites markdown file $2 with every section of $1 in place of its namesake
# (appended when $2 has none); the rest of $2 stays as it is.
merge_markdown_sections() {
  local from=$1 to=$2 merged
  merged=$(mktemp)
  awk '
    function section_name(line) {
      if (line !~ /^<!-- [A-Za-z0-9_-]+:start -->$/) return ""
      sub(/^<!-- /, "", line); sub(/:start -->$/, "", line)
      return line
    }
    FNR == NR {
      name = section_name($0)
      if (name != "") { open_section = name; order[++count] = name; body[name] = $0; next }
      if (open_section != "") {
        body[open_section] = body[open_section] "\n" $0
        if ($0 == "<!-- " open_section ":end -->") open_section = ""
      }
      next
    }
    skipping != "" { if ($0 == "<!-- " skipping ":end -->") skipping = ""; next }
    {
      name = section_name($0)
      if (name in body) { print body[name]; written[name] = 1; skipping = name; next }
      print
    }
    END { for (i = 1; i <= count; i++) if (!(order[i] in written)) printf "\n%s\n", body[order[i]] }
  ' "$from" "$to" > "$merged"
  mv "$merged" "$to"
}

# Publishes the sections of each results directory ($2...) into copies of the
# repository's BENCHMARKS.md and README.md under $1, and fails unless every
# section arrived as written and the text around the sections is unchanged.
check_bench_publish() {
  local scratch=$1 from file name
  shift
  rm -rf "$scratch" && mkdir -p "$scratch"
  cp "$root/BENCHMARKS.md" "$root/README.md" "$scratch/"
  for from in "$@"; do
    "$root/scripts/bench.sh" publish "$from" "$scratch" > /dev/null
  done
  for file in BENCHMARKS.md README.md; do
    if ! diff <(markdown_outside_sections "$root/$file") <(markdown_outside_sections "$scratch/$file") > /dev/null; then
      echo "publishing changed $file outside its sections" >&2 && return 1
    fi
  done
  for from in "$@"; do
    for file in BENCHMARKS.md README.md; do
      [[ -f "$from/$file" ]] || continue
      for name in $(markdown_section_names "$from/$file"); do
        if ! diff <(markdown_section "$name" "$from/$file") <(markdown_section "$name" "$scratch/$file") > /dev/null; then
          echo "section $name of $from/$file was not published whole into $file" >&2 && return 1
        fi
        echo "published $name ($from/$file) into a copy of $file"
      done
    done
  done
}

# Section NAME of a markdown file, its markers included.
markdown_section() {
  sed -n "/^<!-- $1:start -->\$/,/^<!-- $1:end -->\$/p" "$2"
}

# A markdown file without its sections.
markdown_outside_sections() {
  sed '/^<!-- [A-Za-z0-9_-]*:start -->$/,/^<!-- [A-Za-z0-9_-]*:end -->$/d' "$1"
}

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
  # The sealed cluster: kube-proxy's nftables mode runs nft; namespaces and
  # veths need iproute2, nsenter util-linux; python3 serves the smoke tests' pods.
  local tool pkg missing=()
  for tool in nft:nftables ip:iproute2 nsenter:util-linux python3:python3; do
    pkg=${tool#*:}
    command -v "${tool%%:*}" >/dev/null || missing+=("$pkg")
  done
  if ((${#missing[@]} > 0)); then apt_install "${missing[@]}"; fi
  echo "go: $(go version | cut -d' ' -f3) | $(cargo --version) | $(javac -version 2>&1) | $(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g')"
}

# The platforms every jar carries a library for (scripts/native-build.sh builds
# them, scripts/check-glibc-floor.sh checks that a jar has each), and this
# machine's: the Rust and JVM tests load the library built for it, the one a jar
# ships, not a second build against this machine's glibc.
native_platforms=(x86_64 aarch64)
host_arch=$(uname -m)
# Where cargo builds for ARCH: this machine's platform in target/, the others in a
# build directory of their own (cargo locks one per build), so that
# scripts/test.sh can build them while the Rust tests use target/.
cargo_target_dir() {
  if [[ "$1" == "$host_arch" ]]; then echo "$root/target"; else echo "$root/target/cross"; fi
}
# Where scripts/native-build.sh puts what the jars carry (linux-<arch>/), and the
# host's library, which Maven's tests and the scripts' JVMs load.
native_dir="$root/target/native"
native_lib_dir="$native_dir/linux-$host_arch"
# The newest glibc the shipped libraries may need (the manylinux2014 floor, and
# Rust's own minimum for *-linux-gnu): zig links against it, the check reads it.
glibc_floor=2.17
# The cargo target of a platform, linked against the floor (cargo-zigbuild reads
# the glibc version after the dot; cargo sees <arch>-unknown-linux-gnu).
zig_target() {
  echo "$1-unknown-linux-gnu.$glibc_floor"
}

# The project's version, as java/pom.xml (the parent of every artifact) says it.
project_version() {
  sed -n 's:^  <version>\(.*\)</version>:\1:p' "$root/java/pom.xml" | head -1
}

# The jar Maven built for an artifact ($1: spark-k8s-native_2.13 or _2.12); the
# Spark 4.x artifact builds into java/target (its pom says why).
shipped_jar() {
  local dir=$root/java/$1/target
  [[ "$1" == "$spark_artifact" ]] && dir=$root/java/target
  echo "$dir/$1-$(project_version).jar"
}

# zig and cargo-zigbuild (wheels from PyPI, in a virtualenv under the project's
# cache, put on PATH; cargo-zigbuild finds zig as `python3 -m ziglang` there),
# the Rust standard library of each architecture in "$@", and
# llvm-objcopy/llvm-readobj, which read every architecture (Debian's x86
# binutils do not read aarch64): ensure_llvm_tools.
ziglang_version=0.17.1
cargo_zigbuild_version=0.24.1
ensure_cross_build_tools() {
  local cache venv arch
  cache=${SPARK_K8S_NATIVE_CACHE:-$HOME/.cache/spark-k8s-native}
  venv="$cache/zig-$ziglang_version-cargo-zigbuild-$cargo_zigbuild_version"
  if [[ ! -x "$venv/bin/cargo-zigbuild" ]]; then
    echo "installing zig $ziglang_version and cargo-zigbuild $cargo_zigbuild_version from PyPI into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check \
      "ziglang==$ziglang_version" "cargo-zigbuild==$cargo_zigbuild_version"
  fi
  export PATH="$venv/bin:$PATH"
  for arch in "$@"; do
    case " ${native_platforms[*]} " in
      *" $arch "*) ;;
      *) echo "unknown platform '$arch': give one of ${native_platforms[*]}" >&2; exit 2 ;;
    esac
    if ! rustup target list --installed | grep -qx "$arch-unknown-linux-gnu"; then
      echo "adding the Rust standard library for $arch-unknown-linux-gnu (rustup)"
      rustup target add "$arch-unknown-linux-gnu"
    fi
  done
  ensure_llvm_tools
}

# Sets llvm_tools to the directory of rustup's llvm-objcopy and llvm-readobj,
# adding the component when it is missing.
ensure_llvm_tools() {
  llvm_tools="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
  if [[ ! -x "$llvm_tools/llvm-objcopy" ]]; then
    echo "adding llvm-objcopy and llvm-readobj (rustup component llvm-tools)" >&2
    rustup component add llvm-tools >&2
  fi
}

# Builds this machine's native library (scripts/native-build.sh: the one a jar
# ships for this platform) and the Java classes (main and test), and writes
# the test classpath (Spark and its dependencies) to java/target/$1.
build_native_and_classes() {
  "$root/scripts/native-build.sh" "$host_arch"
  (cd "$root/java" && mvn -B -ntp -q -pl "$spark_artifact" test-compile dependency:build-classpath \
    -Dmdep.outputFile="$root/java/target/$1" -Dmdep.includeScope=test -Dnative.dir="$native_dir")
}

# Starts a fresh local control plane from the binaries in $1, in directory $2
# (stopped when the calling script exits, or by stop_plane_now); its settings
# are in $2/plane.env. More arguments go to the launcher (e.g. --node --images F
# for the sealed cluster).
running_planes=() planes_stopped_at_exit=""
start_plane() {
  local bin=$1 dir=$2
  shift 2
  "$bin/localplane" stop --dir "$dir" 2>/dev/null || true
  rm -rf "$dir"
  "$bin/localplane" start --dir "$dir" "$@" >/dev/null
  running_planes+=("$dir")
  if [[ -z "$planes_stopped_at_exit" ]]; then
    planes_stopped_at_exit=1
    at_exit "stop_running_planes \"\$status\" '$bin'"
  fi
}

# at_exit COMMAND: runs COMMAND (bash, with the script's exit status in
# $status) when the calling script exits, before the commands added earlier.
exit_hooks=()
at_exit() {
  exit_hooks=("$1" "${exit_hooks[@]}")
  trap 'run_exit_hooks $?' EXIT
}

run_exit_hooks() {
  local status=$1 hook
  for hook in "${exit_hooks[@]}"; do eval "$hook" || true; done
  return "$status"
}

stop_running_planes() {
  local status=$1 bin=$2 dir
  for dir in "${running_planes[@]}"; do
    stop_plane "$status" "$bin" "$dir" || true
  done
  return "$status"
}

# Stops the plane in $2 (binaries in $1) now, as a passed run would at exit.
stop_plane_now() {
  local bin=$1 dir=$2 kept=() d
  stop_plane 0 "$bin" "$dir"
  for d in "${running_planes[@]}"; do [[ "$d" == "$dir" ]] || kept+=("$d"); done
  running_planes=("${kept[@]}")
}

# Stops the plane in $3 (binaries in $2). Stopping removes its directory, so
# when the script fails ($1, its exit status, not 0) the plane's logs are
# first copied to target/failed-plane-logs/NAME: the launcher's, each
# component's (apiserver, controller-manager, and on the sealed cluster the
# scheduler, node agent, kube-proxy, CoreDNS, and the pods' logs), and the
# audit log (LOCALPLANE_AUDIT_LOG).
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
    if [[ -d "$dir/node" ]]; then
      (cd "$dir/node" && find . -name '*.log' -exec cp --parents -p {} "$kept/" \;) 2>/dev/null || true
    fi
    echo "failed (exit $status): the plane's logs are kept in $kept" >&2
  fi
  "$bin/localplane" stop --dir "$dir" || true
  return "$status"
}

# Writes the node agent's image table to $1: the Spark image of the Spark version
# the Spark 4.x artifact is built against runs tests/localnode/images/spark-entrypoint.sh, with this
# machine's Java and the Spark jars of the classpath file $2 (what an image
# would carry); a second one also has the jar Maven built in its jars/ (as a
# user bakes it into an image; ClusterModeTest); and, once Maven has written
# Spark 3.5's classpath (java/line-tests/spark-3.5/target/spark.classpath), a
# Spark 3.5 image. Images not in the table fail to start, naming it.
node_images() {
  local file=$1 classpath_file=$2 spark_version java_home spark35_classpath spark35_version
  spark_version=$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' "$root/java/$spark_artifact/pom.xml")
  java_home=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
  echo "$(<"$classpath_file"):$(shipped_jar "$spark_artifact")" >"$classpath_file.with-the-jar"
  spark35_classpath="$root/java/line-tests/spark-3.5/target/spark.classpath"
  # The home of an image's user: not this machine's (whose ~/.m2 Spark's Ivy would search).
  mkdir -p "$root/target/spark-image-home"
  spark_image() {
    cat <<JSON
    "spark-k8s-native/$1": {
      "entrypoint": ["$root/tests/localnode/images/spark-entrypoint.sh"],
      "env": {
        "PATH": "$java_home/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "JAVA_HOME": "$java_home",
        "HOME": "$root/target/spark-image-home",
        "SPARK_CLASSPATH_FILE": "$2",
        "SPARK_JVM_OPTIONS_FILE": "$root/java/jvm.options"
      }
    }
JSON
  }
  {
    echo '{'
    echo '  "images": {'
    spark_image "spark:$spark_version" "$classpath_file"
    echo ','
    spark_image "spark-with-the-jar:$spark_version" "$classpath_file.with-the-jar"
    if [[ -f "$spark35_classpath" ]]; then
      spark35_version=$(tr ':' '\n' <"$spark35_classpath" | sed -n 's:.*/spark-core_2.12-\(.*\)\.jar$:\1:p')
      echo ','
      spark_image "spark:$spark35_version" "$spark35_classpath"
    fi
    echo '  }'
    echo '}'
  } >"$file"
}

# The value of KEY ($2) in the plane.env of the plane in $1.
plane_var() {
  sed -n "s/^$2=//p" "$1/plane.env"
}

# For a sealed cluster in $1: resolves the Spark jars the executors run
# (java/target/spark-node.classpath), writes the image table next to the
# plane's directory, and prints its path.
sealed_cluster_images() {
  local images
  images="$root/target/$(basename "$1")-images.json"
  (cd "$root/java" && mvn -B -ntp -q -pl "$spark_artifact" dependency:build-classpath \
    -Dmdep.outputFile="$root/java/target/spark-node.classpath" -Dmdep.includeScope=test) >&2
  node_images "$images" "$root/java/target/spark-node.classpath"
  echo "$images"
}

# Starts the sealed cluster (a node whose pods are processes) in $2 with the
# binaries in $1, for the Spark version the Spark 4.x artifact is built against.
start_sealed_cluster() {
  local bin=$1 dir=$2 images
  images=$(sealed_cluster_images "$dir")
  start_plane "$bin" "$dir" --node --images "$images"
}

# Runs a command inside the sealed cluster in $2 (binaries in $1), as a
# process of its node namespace (cluster DNS, pod IPs and ClusterIPs reachable).
in_sealed_cluster() {
  local bin=$1 dir=$2
  shift 2
  "$bin/localplane" exec --dir "$dir" -- "$@"
}

# Stops the sealed cluster in $2 (binaries in $1) and fails if anything of
# its run is left on the machine (localplane leftovers lists what it checks).
stop_sealed_cluster_and_check() {
  local bin=$1 dir=$2 prefix inode
  prefix=$(plane_var "$dir" LOCALPLANE_RUN_PREFIX)
  inode=$(plane_var "$dir" LOCALPLANE_NETNS_INODE)
  stop_plane_now "$bin" "$dir"
  "$bin/localplane" leftovers --prefix "$prefix" --dir "$dir" --netns-inode "$inode"
}

# Runs a Java main the way a Spark driver runs: Spark's JVM options (the java
# @argument file java/jvm.options, which Maven's tests read too), the native
# library, the plane in $1. Rest: classpath, main, args. With the array
# java_runner set (e.g. to `localplane exec --dir D --`), java runs through it.
java_runner=()
spark_java() {
  local plane_env=$1
  shift
  "${java_runner[@]}" java -Xmx1g @"$root/java/jvm.options" \
    -Djava.library.path="$native_lib_dir" \
    -Dspark.k8s.native.test.planeEnv="$plane_env" \
    -Dlog4j2.level=WARN \
    -cp "$@"
}

# Runs the real-node benchmark (RealNodeBenchmark: native against Spark's own
# sources, executors as processes) in the sealed cluster in $2 (binaries in
# $1), on the classes Maven built and the classpath start_sealed_cluster
# resolved; $3 is full or quick, $4 the markdown file whose "node" section it
# writes.
run_node_benchmark() {
  local bin=$1 dir=$2 mode=$3 markdown=$4
  local java_runner=("$bin/localplane" exec --dir "$dir" --)
  spark_java "$dir/plane.env" \
    "$root/java/target/test-classes:$root/java/target/classes:$(cat "$root/java/target/spark-node.classpath")" \
    org.sparkk8snative.node.RealNodeBenchmark "$mode" "$markdown"
}

# Proves two claims of the sealed cluster that no JVM test can: two runs
# coexist, and a run that crashed (every process of it SIGKILLed, so nothing
# of it could clean up) is removed by the next run to start. Directories
# under $2; binaries in $1; image table $3.
check_sealed_runs_coexist_and_crashes_are_cleaned() {
  local bin=$1 base=$2 images=$3 crashed=$2-crashed other=$2-other next=$2-next
  local prefix inode pids
  for d in "$crashed" "$other"; do
    "$bin/localplane" start --dir "$d" --node --images "$images" >/dev/null
  done
  prefix=$(plane_var "$crashed" LOCALPLANE_RUN_PREFIX)
  inode=$(plane_var "$crashed" LOCALPLANE_NETNS_INODE)
  echo "two sealed runs side by side: $prefix, $(plane_var "$other" LOCALPLANE_RUN_PREFIX)"
  # A pod in the run that will crash, so that it has a pod namespace and cgroups to leave.
  "$bin/localplane" exec --dir "$crashed" -- "$bin/kubectl" --kubeconfig "$crashed/kubeconfig" \
    run sleeper --image=local/host --restart=Never --command -- sleep 600 >/dev/null
  "$bin/localplane" exec --dir "$crashed" -- "$bin/kubectl" --kubeconfig "$crashed/kubeconfig" \
    wait --for=condition=Ready pod/sleeper --timeout=60s >/dev/null
  pids=$(pgrep -f -- "$crashed" || true)
  # shellcheck disable=SC2086 # one pid per word
  kill -KILL $pids
  sleep 1
  if "$bin/localplane" leftovers --prefix "$prefix" --dir "$crashed" --netns-inode "$inode" >/dev/null; then
    echo "the crash left nothing behind: it did not crash" >&2
    return 1
  fi
  echo "after SIGKILL to every process of $prefix, it left: $("$bin/localplane" leftovers --prefix "$prefix" --dir "$crashed" --netns-inode "$inode" | grep -c LEFT) things"
  "$bin/localplane" start --dir "$next" --node --images "$images" >/dev/null
  grep 'cleaning up run' "$next/localplane.log"
  # Namespace inodes are reused: the new run's may be the crashed one's.
  if [[ "$(plane_var "$next" LOCALPLANE_NETNS_INODE)" == "$inode" ]]; then inode=0; fi
  "$bin/localplane" leftovers --prefix "$prefix" --dir "$crashed" --netns-inode "$inode"
  # The other run was not touched: its node is still Ready.
  "$bin/localplane" exec --dir "$other" -- "$bin/kubectl" --kubeconfig "$other/kubeconfig" \
    wait --for=condition=Ready node/process-node --timeout=10s
  for d in "$other" "$next"; do
    stop_sealed_cluster_and_check "$bin" "$d"
  done
  rm -rf "$crashed"
}
