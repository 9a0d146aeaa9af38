# The two commands a fresh machine needs: `make demo` and `make test`.
.PHONY: demo test plane-up plane-down lint bench-informer

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

# Informer figures next to a raw LIST and a raw watch (writes BENCHMARKS.md).
bench-informer:
	LOCALPLANE_BIN=$$(scripts/localplane-build.sh) cargo bench --bench informer
