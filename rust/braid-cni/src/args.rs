//! `CNI_ARGS`: libcni's builder (`pkg/invoke/args.go`: no escaping) and a parser that splits
//! exactly as Go's `types.LoadArgs` does (`pkg/types/args.go`).
use crate::error::{codes, CniError, Result};

/// Joins pairs as `K1=V1;K2=V2`, without escaping (as libcni does).
pub fn build(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// Splits `CNI_ARGS` into pairs the way Go's `types.LoadArgs` does: the empty string is no
/// pairs; otherwise every `;`-separated piece must hold exactly one `=`, else code 4
/// `ARGS: invalid pair "<piece>"` (so `FOO=a=b` and a trailing `;` are refused).
pub fn parse(value: &str) -> Result<Vec<(String, String)>> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    value.split(';').map(parse_pair).collect()
}

fn parse_pair(piece: &str) -> Result<(String, String)> {
    let mut parts = piece.split('=');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(key), Some(value), None) => Ok((key.to_owned(), value.to_owned())),
        _ => Err(CniError::new(
            codes::INVALID_ENVIRONMENT,
            format!("ARGS: invalid pair {piece:?}"),
        )),
    }
}
