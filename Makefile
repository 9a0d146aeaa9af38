# The two commands a fresh machine needs: `make demo` and `make test`.
.PHONY: demo test native native-smoke licenses plane-up plane-down node-up node-down lint format bench bench-fleet bench-node bench-informer bump-kubernetes

demo:
	scripts/demo.sh

test:
	scripts/test.sh

# One stage of `make test` alone, building what it needs first (scripts/test.sh
# lists them): make test-lint, test-rust, test-jvm, test-jvm-3.5, test-node, test-bench...
test-%:
	scripts/test.sh $*

# The shipped libraries, x86_64 and aarch64, linked against glibc 2.17 and
# stripped, their symbols beside them (docs/platforms.md; `make test` runs it).
native:
	scripts/native-build.sh

# The aarch64 unit tests, and the jar's aarch64 library in an aarch64 JVM, under
# qemu-user against a local plane (docs/platforms.md; `make test` runs it).
native-smoke: native
	cd java && mvn -B -ntp -q -pl spark-k8s-native_2.13 package -DskipTests -Dtest.skipArtifactSuite=true -Dnative.dir=$(CURDIR)/target/native
	scripts/native-smoke.sh aarch64

# THIRD-PARTY-LICENSES (each jar's META-INF/), from Cargo.lock by cargo-about:
# after a change to Cargo.lock (make test checks that it still matches).
licenses:
	scripts/licenses.sh generate

plane-up:
	scripts/plane.sh up

plane-down:
	scripts/plane.sh down

# The sealed cluster by hand (root): a node whose pods are processes, in a
# network namespace of its own; `scripts/plane.sh exec -- CMD` runs inside it.
node-up:
	scripts/plane.sh node-up

node-down:
	scripts/plane.sh node-down

# One node test against this tree, on the cluster of `make node-up` (root):
# make node-test TEST=DynamicAllocationTest [NATIVE_FIRST=true|false]
# Builds the x86_64 library and puts the artifacts where the node tests'
# --packages install them from, as `make test` does, without its tests.
.PHONY: node-test
node-test:
	scripts/native-build.sh $$(uname -m)
	cd java && mvn -B -ntp -q deploy -DskipTests -Dtest.skipArtifactSuite=true -Dmaven.install.skip=true \
	  -DaltDeploymentRepository=local::file://$(CURDIR)/target/maven-repository -Dnative.dir=$(CURDIR)/target/native
	cd java && ../scripts/plane.sh exec -- mvn -o -B -pl spark-k8s-native_2.13 test -Dtest=$(TEST) \
	  -Dtest.groups=node -Dtest.excludedGroups=none -Dnative.dir=$(CURDIR)/target/native \
	  -Dtest.maven.repository=file://$(CURDIR)/target/maven-repository \
	  -Dtest.plane.env=$(CURDIR)/target/localplane-node/plane.env -Dtest.jvm.options=-Xcheck:jni \
	  $(if $(NATIVE_FIRST),-Dnode.nativeFirst=$(NATIVE_FIRST))

# Broken builds kept in the repository (mutants/): each patch breaks one promise
# and names the tests that must catch it; fails if any survives, and prints the
# table (mutant, tests, verdict, time) for docs/reliability.md. `make test` runs
# the quick ones; this runs them all (the JVM's on a plane of their own).
#   make mutants [MUTANTS="name ..."]
.PHONY: mutants
mutants:
	scripts/mutants.sh --table target/mutants/table.md $(MUTANTS)

# The same lint as CI (scripts/test.sh runs it); JAVA_FORMAT_CHECK=0 skips the Java check.
lint:
	scripts/lint.sh

# Formats the Rust and Java sources, so that `make lint` passes.
format:
	cargo fmt --all
	cd java && mvn -B -ntp -q -N spotless:apply

# Every benchmark writes its sections of BENCHMARKS.md and README.md, and its
# chart, under target/bench/; `make bench-publish` copies them into the
# repository's files (each section names the commit it measured).

# Legacy Spark sources, a fabric8 informer and the native sources side by side,
# each in its own JVM (the JVM section, docs/benchmark.png and the README's
# headline table; about 36 min).
bench:
	scripts/bench.sh sources

# A fleet of drivers on one apiserver: the apiserver's time serving the
# drivers (attributed by their own API Priority and Fairness flow), its CPU,
# memory, requests by verb and etcd requests, and another client's latency
# (drivers pinned apart from the control plane), for no drivers, legacy, fabric8,
# native and native with long watches, at 10/30/100 drivers, 5 repetitions in
# shuffled order (the fleet section, docs/fleet.png and the README's fleet
# table; about 75 minutes).
bench-fleet:
	scripts/bench.sh fleet

# Spark on the real node, native sources against Spark's own, 5 rounds
# (the "real node" section; ~10 min).
bench-node:
	scripts/bench-node.sh full

# Informer figures next to a raw LIST and a raw watch (the informer section).
bench-informer:
	LOCALPLANE_BIN=$$(scripts/localplane-build.sh) cargo bench --bench informer

# What the full benchmarks wrote under target/bench/, into BENCHMARKS.md,
# README.md and docs/.
.PHONY: bench-publish
bench-publish:
	scripts/bench.sh publish

# The chaos run alone, full size (`make test` runs it with 2 faults of each kind
# and 30 s): the full set of faults of each kind, then random ones until 60 s.
# Replayed or longer: make chaos CHAOS_SEED=<seed a run printed> CHAOS_SECONDS=600
CHAOS_SECONDS ?= 60
CHAOS_EACH ?= 0
.PHONY: chaos
chaos:
	scripts/native-build.sh $$(uname -m)
	cd java && mvn -B -ntp -pl spark-k8s-native_2.13 test -Dtest=ChaosRunTest -Dsurefire.failIfNoSpecifiedTests=false \
	  -Dnative.dir=$(CURDIR)/target/native \
	  $(if $(CHAOS_SEED),-Dchaos.seed=$(CHAOS_SEED)) -Dchaos.seconds=$(CHAOS_SECONDS) -Dchaos.each=$(CHAOS_EACH)

# Moves the local control plane to another Kubernetes release: go.mod's
# k8s.io/kubernetes require and its replace block (tests/localplane/gen-replaces.sh),
# then go mod tidy. The next build of the plane takes the ~7 minutes of a first one.
#   make bump-kubernetes K8S_VERSION=v1.36.4
bump-kubernetes:
	@test -n "$(K8S_VERSION)" || { echo "usage: make bump-kubernetes K8S_VERSION=v1.36.4" >&2; exit 2; }
	tests/localplane/gen-replaces.sh -w $(K8S_VERSION)
	cd tests/localplane && GOTOOLCHAIN=$${GOTOOLCHAIN:-auto} go mod tidy
