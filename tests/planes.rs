//! The tests against real local control planes, in one binary: each of these
//! files compiled alone linked its own copy of the support code and of the
//! client it drives, and ran alone, so a run took the sum of its slowest
//! tests. One binary builds that once and runs every test two at a time
//! (`--test-threads`), each on the shared plane or a plane of its own.
//!
//! One file alone: `cargo test --release --test planes informer::`.

mod support;

mod ha_control_plane;
mod informer;
mod lister_after_outage;
mod localplane_smoke;
mod services;
