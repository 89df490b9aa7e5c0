//! Shared by the golden-fixture tests: where `tests/fixtures/cni/` is and which cases it holds.
use std::fs;
use std::path::{Path, PathBuf};

/// `tests/fixtures/cni/<name>` of the repository.
pub fn fixtures(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/cni")
        .join(name)
}

/// The `*.json` case files of `dir`, sorted (sub-directories such as `inputs/` are not cases).
pub fn json_cases(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .expect("fixture directory")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths
}
