# The two commands a fresh machine needs: `make demo` and `make test`.
.PHONY: demo test plane-up plane-down lint bench bench-informer

demo:
	scripts/demo.sh

test:
	scripts/test.sh

plane-up:
	scripts/plane.sh up

plane-down:
	scripts/plane.sh down

lint:
	cargo fmt --all -- --check
	cargo clippy --release --all-targets -- -D warnings

# Legacy Spark sources, a fabric8 informer and the native sources side by side,
# each in its own JVM (writes BENCHMARKS.md and docs/benchmark.png; ~15 min).
bench:
	scripts/bench.sh full

# Informer figures next to a raw LIST and a raw watch (writes BENCHMARKS.md).
bench-informer:
	LOCALPLANE_BIN=$$(scripts/localplane-build.sh) cargo bench --bench informer

# The chaos run alone (it also runs in `make test`), replayed or longer:
# make chaos SEED=<seed a run printed> SECONDS=600
.PHONY: chaos
chaos:
	cargo build --release --locked
	cd java && mvn -B -ntp test -Dtest=ChaosRunTest -Dsurefire.failIfNoSpecifiedTests=false \
	  -Dnative.lib.dir=$(CURDIR)/target/release $(if $(SEED),-Dchaos.seed=$(SEED)) $(if $(SECONDS),-Dchaos.seconds=$(SECONDS))
