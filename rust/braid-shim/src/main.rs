//! `braid`: the compiled CNI entrypoint. For now it answers VERSION itself; every other verb
//! is refused with a CNI error until the daemon protocol exists.
//!
//! Nothing but the one JSON result or error ever reaches stdout; a panic becomes a code-999
//! error JSON.

use std::io::Write;
use std::process::ExitCode;

use braid_cni::{codes, version, CniError};

fn version_json() -> Vec<u8> {
    let obj = serde_json::json!({
        "cniVersion": version::CURRENT,
        "supportedVersions": version::ALL,
    });
    let mut out = serde_json::to_vec(&obj).unwrap_or_default();
    out.push(b'\n');
    out
}

fn run() -> Result<Vec<u8>, CniError> {
    match std::env::var("CNI_COMMAND").unwrap_or_default().as_str() {
        "VERSION" => Ok(version_json()),
        "" => Err(CniError::new(
            codes::INVALID_ENVIRONMENT,
            "CNI_COMMAND is not set",
        )),
        "ADD" | "DEL" | "CHECK" | "GC" | "STATUS" => Err(CniError::new(
            codes::TRY_AGAIN_LATER,
            "the braid daemon is not available in this build; use braid-thin",
        )),
        other => Err(CniError::new(
            codes::INVALID_ENVIRONMENT,
            format!("unknown CNI_COMMAND: {other}"),
        )),
    }
}

fn emit(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    match std::panic::catch_unwind(run) {
        Ok(Ok(out)) => {
            emit(&out);
            ExitCode::SUCCESS
        }
        Ok(Err(err)) => {
            emit(&err.to_json(version::CURRENT));
            ExitCode::FAILURE
        }
        Err(_) => {
            emit(&CniError::new(codes::INTERNAL, "braid panicked").to_json(version::CURRENT));
            ExitCode::FAILURE
        }
    }
}
