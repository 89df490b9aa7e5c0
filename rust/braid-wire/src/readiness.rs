//! The cluster default network's readiness (NPWG spec section 6.1.2): with
//! `readinessindicatorfile` set, pod network attachment and detachment block until the file
//! exists. The bound and the pace of that wait, and the error when the file does not appear,
//! are braid's one rule for it: the engine (Python, through `braid._native`) and the shim's DEL
//! (`braid-full`) both wait this way.

use alloc::format;
use core::time::Duration;

use crate::error::{codes, CniError};

/// How long a call waits for the readiness indicator file before it fails with code 11
/// (Multus waits as long).
pub const READINESS_TIMEOUT: Duration = Duration::from_secs(45);

/// How often the file is looked for during the wait.
pub const READINESS_POLL: Duration = Duration::from_secs(1);

/// Code 11 for a readiness indicator file `path` that still did not exist after `waited`;
/// `operation` ("attaching", "detaching") says what the wait held back.
pub fn not_ready(path: &str, waited: Duration, operation: &str) -> CniError {
    CniError::new(
        codes::TRY_AGAIN_LATER,
        format!("the cluster default network is not ready: {path} does not exist"),
    )
    .with_details(format!(
        "braid waited {} s for the readiness indicator file (readinessindicatorfile) before \
         {operation} the pod's networks; try again later",
        waited.as_secs_f64()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_ready_is_code_11_naming_the_file_the_wait_and_the_operation() {
        let err = not_ready("/run/ready", READINESS_TIMEOUT, "detaching");
        assert_eq!(err.code, codes::TRY_AGAIN_LATER);
        assert_eq!(
            err.msg,
            "the cluster default network is not ready: /run/ready does not exist"
        );
        assert_eq!(
            err.details,
            "braid waited 45 s for the readiness indicator file (readinessindicatorfile) \
             before detaching the pod's networks; try again later"
        );
        let short = not_ready("/r", Duration::from_millis(250), "attaching");
        assert!(short.details.contains("waited 0.25 s"), "{}", short.details);
    }
}
