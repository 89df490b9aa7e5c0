//! What the shim reads of braid's configuration on stdin (`braid_wire::settings`, shared with
//! the `braid` front), with paths as paths, and stdin read whole.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use braid_cni::{codes, CniError};
use braid_wire::settings::{stdin_too_large, MAX_STDIN_BYTES};

/// The shim's view of braid's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// braid's `cniVersion` (what errors are rendered with).
    pub cni_version: String,
    /// `daemonSocketDir` (the socket is `braid.sock` inside).
    pub socket_dir: PathBuf,
    /// `cniDir`: records under `records/`, the result cache under `results/`.
    pub cni_dir: PathBuf,
    /// `binDir`: searched for delegates before `CNI_PATH`.
    pub bin_dir: String,
    /// `daemonWaitSeconds`: how long ADD, CHECK, GC and STATUS wait for the daemon.
    pub daemon_wait: Duration,
    /// `pluginTimeout`: the deadline of each delegate execution.
    pub plugin_timeout: Duration,
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

/// Parses braid's configuration from stdin.
pub fn parse(stdin: &[u8]) -> Result<Settings, CniError> {
    let read = braid_wire::settings::parse(stdin)?;
    Ok(Settings {
        cni_version: read.cni_version,
        socket_dir: PathBuf::from(read.socket_dir),
        cni_dir: PathBuf::from(read.cni_dir),
        bin_dir: read.bin_dir,
        daemon_wait: read.daemon_wait,
        plugin_timeout: read.plugin_timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_paths() {
        let settings = parse(br#"{"type": "braid", "cniDir": "/tmp/x"}"#).unwrap();
        assert_eq!(settings.socket_dir, PathBuf::from("/run/braid"));
        assert_eq!(settings.cni_dir, PathBuf::from("/tmp/x"));
    }

    #[test]
    fn stdin_over_the_limit_is_code_6() {
        let data = vec![b' '; MAX_STDIN_BYTES + 1];
        assert_eq!(
            read_stdin(&data[..]).unwrap_err().code,
            codes::DECODE_FAILURE
        );
        assert_eq!(read_stdin(&data[1..]).unwrap().len(), MAX_STDIN_BYTES);
    }
}
