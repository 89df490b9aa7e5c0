//! The `braid` binary has its own entry point and no C library: link it without start files
//! and without libc, statically (packaging/build-shim.sh also passes `-C relocation-model=
//! static`, so nothing needs relocating at start).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_BIN").is_some() {
        for arg in ["-nostartfiles", "-nostdlib", "-static", "-Wl,--gc-sections"] {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
}
