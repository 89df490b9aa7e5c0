//! What the shim reads of braid's configuration on stdin (`braid_wire::settings`, shared with
//! the `braid` front), its trusted paths taken from the node (`braid_wire::trust`), and stdin
//! read whole.

use std::io::Read;

use braid_cni::{codes, CniError};
pub use braid_wire::settings::{parse, Settings};
use braid_wire::settings::{stdin_too_large, MAX_STDIN_BYTES};

/// `settings` with the trusted paths of the node file beside this executable, else stdin's
/// when every component of them is root's and closed (code 7 otherwise).
pub fn trusted(settings: Settings) -> Result<Settings, CniError> {
    match braid_delegate::trust::node_file_beside_executable() {
        Some(node_file) => braid_delegate::trust::trusted_settings(settings, &node_file),
        None => {
            braid_wire::trust::trusted(settings, Ok(None), "", braid_delegate::trust::stat_owner)
        }
    }
}

/// Reads stdin whole, refusing more than [`MAX_STDIN_BYTES`] (code 6).
pub fn read_stdin(mut input: impl Read) -> Result<Vec<u8>, CniError> {
    let mut data = Vec::new();
    let limit = u64::try_from(MAX_STDIN_BYTES).unwrap_or(u64::MAX) + 1;
    input
        .by_ref()
        .take(limit)
        .read_to_end(&mut data)
        .map_err(|err| CniError::new(codes::IO_FAILURE, format!("cannot read stdin: {err}")))?;
    if data.len() > MAX_STDIN_BYTES {
        return Err(stdin_too_large());
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_over_the_limit_is_code_6() {
        let data = vec![b' '; MAX_STDIN_BYTES + 1];
        assert_eq!(
            read_stdin(&data[..]).unwrap_err().code,
            codes::DECODE_FAILURE
        );
        assert_eq!(read_stdin(&data[1..]).unwrap().len(), MAX_STDIN_BYTES);
    }

    /// The settings of a golden case as the fixture writes them.
    fn as_json(settings: &Settings) -> serde_json::Value {
        serde_json::json!({
            "cniVersion": settings.cni_version,
            "daemonSocketDir": settings.socket_dir,
            "cniDir": settings.cni_dir,
            "binDir": settings.bin_dir,
            "daemonWaitSeconds": settings.daemon_wait.as_secs_f64(),
            "pluginTimeout": settings.plugin_timeout.as_secs_f64(),
            "readinessindicatorfile": settings.readiness_file,
        })
    }

    #[test]
    fn settings_match_the_golden_cases() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/settings/shim.json"
        );
        let golden: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).expect("golden")).expect("json");
        let cases = golden["cases"].as_array().expect("cases");
        assert!(cases.len() > 10);
        for case in cases {
            let name = &case["name"];
            let stdin = serde_json::to_vec(&case["config"]).expect("config");
            match parse(&stdin) {
                Ok(settings) => assert_eq!(as_json(&settings), case["settings"], "{name}"),
                Err(err) => {
                    assert_eq!(u64::from(err.code), case["error"]["code"], "{name}");
                    assert_eq!(err.msg, case["error"]["msg"], "{name}");
                }
            }
        }
    }
}
