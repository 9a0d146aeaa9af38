//! Records what the library was built for, so that `version()` (and the Java
//! loader's error messages) can say which platform a `.so` belongs to.
fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=SPARK_K8S_NATIVE_TARGET={target}");
    println!("cargo:rustc-env=SPARK_K8S_NATIVE_PROFILE={profile}");
    println!("cargo:rerun-if-changed=build.rs");
}
