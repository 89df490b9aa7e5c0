//! `CNI_ARGS`: libcni's builder (no escaping) and a parser compatible with Go's `LoadArgs`.
// STUB: to be implemented.
use crate::error::{CniError, Result};

/// Joins pairs as `K1=V1;K2=V2`.
pub fn build(pairs: &[(String, String)]) -> String {
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";")
}

/// Splits `CNI_ARGS` into pairs the way Go's `types.LoadArgs` does.
pub fn parse(value: &str) -> Result<Vec<(String, String)>> {
    let _ = value;
    Err(CniError::new(crate::codes::INTERNAL, "not implemented"))
}
