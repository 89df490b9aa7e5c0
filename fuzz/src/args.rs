//! `CNI_ARGS` (`braid_cni::args`): parsing is exactly Go's `types.LoadArgs` split, so whatever
//! parses rebuilds to the same text with libcni's builder, and a refusal is code 4.
use braid_cni::{args, codes};

use crate::assert_code;

/// Checks [`args::parse`] on `data` (as the environment variable's text).
pub fn check(data: &[u8]) {
    let Ok(value) = std::str::from_utf8(data) else {
        return;
    };
    match args::parse(value) {
        Ok(pairs) => {
            for (key, val) in &pairs {
                assert!(!key.contains(['=', ';']) && !val.contains(['=', ';']));
            }
            assert_eq!(
                args::build(&pairs),
                value,
                "CNI_ARGS does not rebuild verbatim"
            );
            assert_eq!(args::parse(&args::build(&pairs)).ok(), Some(pairs));
        }
        Err(err) => {
            assert_code(&err, &[codes::INVALID_ENVIRONMENT], "CNI_ARGS");
            assert!(
                !value.is_empty(),
                "the empty CNI_ARGS is no pairs, not an error"
            );
        }
    }
}
