//! spark-k8s-native: the native half of a Spark driver's view of its executor
//! pods on Kubernetes.
//!
//! The core (everything outside [`jni`]) is plain async Rust with no JVM types:
//! it can be used and tested without a JVM. The [`jni`] module is the only
//! place that touches the `jni` crate; it converts arguments and delegates.

#![warn(unreachable_pub)]

pub mod client;
pub mod driver;
pub mod informer;
pub mod jni;
pub mod labels;
mod memory;
pub mod pod;
mod runtime;
pub mod services;
pub mod settings;
pub mod wire;

// Counts the library's heap, so that a driver's native memory is measured (memory.rs).
#[global_allocator]
static ALLOCATOR: memory::CountingAllocator = memory::CountingAllocator;

/// The library's version, with the target and profile it was built for,
/// e.g. `spark-k8s-native 0.1.0 (x86_64-unknown-linux-gnu, release)`.
pub fn version() -> String {
    format!(
        "spark-k8s-native {} ({}, {})",
        env!("CARGO_PKG_VERSION"),
        env!("SPARK_K8S_NATIVE_TARGET"),
        env!("SPARK_K8S_NATIVE_PROFILE")
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_names_crate_target_and_profile() {
        let v = super::version();
        assert!(v.starts_with("spark-k8s-native 0."), "{v}");
        assert!(v.contains(env!("SPARK_K8S_NATIVE_TARGET")), "{v}");
    }
}
