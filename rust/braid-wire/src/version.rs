//! The CNI spec versions braid speaks (the rest of the version logic is in `braid-cni`), and
//! braid's own version: the package's and the build's, which the shim reports in its VERSION
//! answer and to `--version`.

/// Every CNI version braid speaks, oldest first.
pub const ALL: [&str; 7] = [
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// The newest version braid speaks (libcni's `version.Current()`).
pub const CURRENT: &str = "1.1.0";

/// braid's version: the workspace's, which is the Python package's (`braid.__version__`).
pub const PACKAGE: &str = env!("CARGO_PKG_VERSION");

/// The build: `BRAID_BUILD` when the crate was compiled (`packaging/build-shim.sh` and the
/// Makefile pass the source's git commit: the same source gives the same bytes), else
/// [`UNKNOWN_BUILD`].
pub const BUILD: &str = match option_env!("BRAID_BUILD") {
    Some(build) if !build.is_empty() => build,
    _ => UNKNOWN_BUILD,
};

/// The build of a binary compiled without `BRAID_BUILD`.
pub const UNKNOWN_BUILD: &str = "unknown";

/// The key of the VERSION answer that carries [`PACKAGE`] (CNI clients ignore keys they do not
/// know: libcni decodes only `cniVersion` and `supportedVersions`).
pub const VERSION_KEY: &str = "braidVersion";

/// The key of the VERSION answer that carries [`BUILD`].
pub const BUILD_KEY: &str = "braidBuild";

/// The argument that asks an executable for its version instead of a CNI call.
pub const VERSION_ARG: &str = "--version";

/// The shim's answer to VERSION, with its trailing newline: the spec's two fields (CNI spec,
/// "VERSION": `cniVersion`, `supportedVersions`) followed by braid's own two.
pub fn version_output() -> alloc::vec::Vec<u8> {
    let obj = serde_json::json!({
        "cniVersion": CURRENT,
        "supportedVersions": ALL,
        VERSION_KEY: PACKAGE,
        BUILD_KEY: BUILD,
    });
    let mut out = serde_json::to_vec(&obj).unwrap_or_default();
    out.push(b'\n');
    out
}

/// What `name --version` prints: one line, `<name> <package version> (build <build>)`.
pub fn version_line(name: &str) -> alloc::string::String {
    alloc::format!("{name} {PACKAGE} (build {BUILD})\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_output_keeps_the_spec_fields_first_and_adds_braids() {
        let out = version_output();
        assert_eq!(out.last(), Some(&b'\n'));
        let value: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
        let keys: alloc::vec::Vec<&str> = value
            .as_object()
            .expect("object")
            .keys()
            .map(alloc::string::String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["cniVersion", "supportedVersions", VERSION_KEY, BUILD_KEY]
        );
        assert_eq!(value["cniVersion"], CURRENT);
        assert_eq!(value["supportedVersions"], serde_json::json!(ALL));
        assert_eq!(value[VERSION_KEY], PACKAGE);
        assert_eq!(value[BUILD_KEY], BUILD);
    }

    #[test]
    fn version_line_is_one_line_with_the_package_and_the_build() {
        let line = version_line("braid");
        assert_eq!(line, alloc::format!("braid {PACKAGE} (build {BUILD})\n"));
        assert_eq!(line.matches('\n').count(), 1);
        assert!(!BUILD.is_empty());
    }
}
