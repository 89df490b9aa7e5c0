//! The properties braid's Rust fuzz targets check (docs/fuzzing.md). Each `check` takes the
//! fuzzer's bytes as hostile outside input and panics, which libFuzzer reports as a crash with
//! the input, when a property fails: an error without the code its parser documents, a round
//! trip that the CNI spec makes lossless but that changed something, a record that re-encodes
//! to something else, salvage that returns an entry the record did not hold.
#![forbid(unsafe_code)]

pub mod args;
pub mod config;
pub mod devinfo;
pub mod netlink;
pub mod record;
pub mod result;
pub mod wire;

use braid_cni::CniError;

/// Asserts that `err` carries one of `codes` (what the parser documents for bad input).
pub fn assert_code(err: &CniError, codes: &[u32], what: &str) {
    assert!(
        codes.contains(&err.code),
        "{what}: error code {} is not one of {codes:?}: {err}",
        err.code
    );
    assert!(!err.msg.is_empty(), "{what}: an error without a message");
    let rendered: serde_json::Value =
        serde_json::from_slice(&err.to_json("1.1.0")).expect("the CNI error JSON is JSON");
    assert_eq!(
        rendered["code"],
        serde_json::json!(err.code),
        "{what}: rendered code"
    );
}

/// `data` as JSON, for comparing documents by value rather than by text.
pub fn json(data: &[u8]) -> serde_json::Value {
    serde_json::from_slice(data).expect("braid produced JSON that does not parse")
}
