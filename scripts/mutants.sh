#!/usr/bin/env bash
# Broken builds kept in the repository: each file of mutants/ is a small patch
# to the product that breaks one promise, and names the tests that must catch
# it. For each mutant this applies the patch to a scratch copy of the tree,
# builds, runs each named test and expects it to fail; a mutant that any named
# test lets pass has survived, and the run fails. So a test that stops checking
# what it exists for is found on the next run, not years later.
#
#   scripts/mutants.sh [--quick] [--table FILE] [MUTANT...]
#     --quick   only the mutants marked `quick: yes` (make test runs these)
#     --table   also write the table (markdown) to FILE
#     MUTANT    a mutant's name (its file under mutants/ without .patch)
#
# A mutant's header, before its diff (mutants/README.md):
#   # promise: what it breaks, in the words the docs use
#   # catch: rust-lib FILTER            the crate's unit tests matching FILTER (exact)
#   # catch: rust TARGET FILTER         an integration test target (planes: real planes), exact name
#   # catch: jvm CLASS[#METHOD]         a JVM test of the Spark 4.2 artifact, on a plane
#   # quick: yes                        run by make test
# A mutant that no longer applies, or no longer builds, fails the run too: it
# must be mended with the code it breaks.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$root"

quick="" table_out="" wanted=()
while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --table) table_out=$2; shift ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) wanted+=("$1") ;;
  esac
  shift
done

mutants=()
if ((${#wanted[@]})); then
  for name in "${wanted[@]}"; do
    [[ -f "mutants/$name.patch" ]] || { echo "no mutant '$name' in mutants/" >&2; exit 2; }
    mutants+=("mutants/$name.patch")
  done
else
  for file in mutants/*.patch; do
    [[ -z "$quick" ]] || grep -qx '# quick: yes' "$file" || continue
    mutants+=("$file")
  done
fi
((${#mutants[@]})) || { echo "no mutant to run" >&2; exit 2; }

# The scratch copy keeps its own cargo target between runs, so only the crate
# is rebuilt per mutant. The first run seeds it from this tree's target (the
# release dependencies the Rust tests compiled), when there is one: cargo
# reuses registry crates built elsewhere, as their fingerprints name no path.
scratch="$root/target/mutants"
# Incremental: a mutant changes a line or two, so most of the crate's code is reused.
export CARGO_INCREMENTAL=1
tree="$scratch/tree"
mkdir -p "$tree/target"
triple="$host_arch-unknown-linux-gnu"
for dir in "$triple" release; do
  if [[ -d "target/$dir" && ! -d "$tree/target/$dir" ]]; then
    echo "seeding the mutants' cargo target from target/$dir"
    cp -a --reflink=auto "target/$dir" "$tree/target/$dir"
  fi
done
ensure_cross_build_tools "$host_arch"
jvm_plane="$scratch/plane"

# Lays the scratch copy anew from this tree's files (tracked and untracked,
# as git sees them, so a developer's uncommitted change is what is mutated).
lay_tree() {
  find "$tree" -mindepth 1 -maxdepth 1 ! -name target -exec rm -rf {} +
  git ls-files -z --cached --others --exclude-standard | grep -zv '^mutants/' |
    xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' |
    tar --null -T - -cf - | tar -xf - -C "$tree"
}

# git apply in the scratch copy as outside any repository (the copy lies
# inside this one, whose git would take the patch's paths as its own).
patch_tree() { (cd "$tree" && GIT_CEILING_DIRECTORIES="$scratch" git apply -p1 "$@"); }

header() { sed -n "s/^# $2: //p" "$1"; }

# run_catch KIND ARGS...: runs one named test in the scratch copy; its exit status.
run_catch() {
  local kind=$1
  shift
  case "$kind" in
    rust-lib)
      (cd "$tree" && cargo-zigbuild test --release --locked --target "$(zig_target "$host_arch")" --lib \
        -- --exact "$1" --test-threads=1) ;;
    rust)
      (cd "$tree" && cargo-zigbuild test --release --locked --target "$(zig_target "$host_arch")" \
        --test "$1" -- --exact "$2" --test-threads=1) ;;
    jvm)
      [[ " ${running_planes[*]} " == *" $jvm_plane "* ]] || start_plane "$LOCALPLANE_BIN" "$jvm_plane"
      (cd "$tree" && scripts/native-build.sh "$host_arch" >/dev/null &&
        cd java && mvn -B -ntp -q -pl "$spark_artifact" test -Dtest="$1" -Dsurefire.failIfNoSpecifiedTests=false \
          -Dnative.dir="$tree/target/native" -Dtest.plane.env="$jvm_plane/plane.env") ;;
    *) echo "unknown test kind '$kind'" >&2; return 2 ;;
  esac
}

# builds KIND ARGS...: compiles what run_catch runs, without running it.
build_catch() {
  local kind=$1
  shift
  case "$kind" in
    rust-lib) (cd "$tree" && cargo-zigbuild test --release --locked --target "$(zig_target "$host_arch")" --lib --no-run) ;;
    rust) (cd "$tree" && cargo-zigbuild test --release --locked --target "$(zig_target "$host_arch")" --test "$1" --no-run) ;;
    jvm) (cd "$tree" && scripts/native-build.sh "$host_arch") ;;
  esac
}

if grep -qh '^# catch: \(rust\|jvm\) ' "${mutants[@]}"; then
  LOCALPLANE_BIN=$(scripts/localplane-build.sh)
  export LOCALPLANE_BIN
fi

rows=() survivors=0 began=$SECONDS
for file in "${mutants[@]}"; do
  name=$(basename "$file" .patch)
  mapfile -t catches < <(header "$file" catch)
  phase "mutant $name: $(header "$file" promise)"
  started=$SECONDS
  lay_tree
  if ((${#catches[@]} == 0)); then
    verdict="names no test"
  elif ! patch_tree --check "$root/$file"; then
    verdict="no longer applies"
  else
    patch_tree "$root/$file"
    verdict="caught"
    survived_by=()
    for catch in "${catches[@]}"; do
      read -r -a words <<<"$catch"
      if ! build_catch "${words[@]}" >"$scratch/$name.build.log" 2>&1; then
        tail -30 "$scratch/$name.build.log"
        verdict="does not build"
        break
      fi
      echo "  $catch: must fail"
      if run_catch "${words[@]}" >"$scratch/$name.test.log" 2>&1; then
        survived_by+=("${words[*]: -1}")
      else
        echo "  $catch: failed, as it must"
      fi
    done
    if [[ "$verdict" == caught && ${#survived_by[@]} -gt 0 ]]; then
      verdict="survived ${survived_by[*]}"
    fi
  fi
  [[ "$verdict" == caught ]] || survivors=$((survivors + 1))
  echo "  $name: $verdict"
  tests=$(printf '%s<br>' "${catches[@]##* }")
  rows+=("| $name | ${tests%<br>} | $verdict | $((SECONDS - started)) s |")
done
phase_end

table=$(
  echo "Mutants of $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src java || echo ' (with uncommitted changes)'), $(date -u +%F), $((SECONDS - began)) s:"
  echo
  echo "| mutant | tests that must catch it | verdict | time |"
  echo "| --- | --- | --- | ---: |"
  printf '%s\n' "${rows[@]}"
)
printf '\n%s\n' "$table"
[[ -z "$table_out" ]] || printf '%s\n' "$table" >"$table_out"
if ((survivors)); then
  echo "mutants: $survivors of ${#mutants[@]} not caught" >&2
  exit 1
fi
echo "mutants: all ${#mutants[@]} caught"
