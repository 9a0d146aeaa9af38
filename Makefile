# The two commands a fresh machine needs: `make demo` and `make test`.
.PHONY: demo test plane-up plane-down lint

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
