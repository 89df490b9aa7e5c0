//! What the shim reads of braid's configuration on stdin: a conf with `"type": "braid"`, or a
//! conflist holding exactly one such plugin (then the list's `name` and `cniVersion` apply).
//! Only the keys the shim needs are read; the daemon reads the rest.

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use serde_json::{Map, Value};

use crate::error::CniError;

/// The largest stdin accepted; more is refused with code 6.
pub const MAX_STDIN_BYTES: usize = 1 << 20;
/// The longest wait or deadline braid keeps (a billion seconds, about 31 years): a longer
/// one, up to infinity, is held at this, which is no deadline in practice, and a deadline that
/// far away can still be added to the clock.
pub const LONGEST_WAIT_SECONDS: f64 = 1e9;
const BRAID_TYPES: [&str; 2] = ["braid", "braid-thin"];

/// The shim's view of braid's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// braid's `cniVersion` (what errors are rendered with).
    pub cni_version: String,
    /// `daemonSocketDir` (the socket is `braid.sock` inside).
    pub socket_dir: String,
    /// `cniDir`: records under `records/`, the result cache under `results/`.
    pub cni_dir: String,
    /// `binDir`: searched for delegates before `CNI_PATH`.
    pub bin_dir: String,
    /// `daemonWaitSeconds`: how long ADD, CHECK, GC and STATUS wait for the daemon.
    pub daemon_wait: Duration,
    /// `pluginTimeout`: the deadline of each delegate execution.
    pub plugin_timeout: Duration,
    /// `readinessindicatorfile`: the file whose existence means the cluster default network
    /// is ready (a DEL waits for it, [`crate::readiness`]); empty when not set.
    pub readiness_file: String,
}

/// Code 6 for a stdin over [`MAX_STDIN_BYTES`].
pub fn stdin_too_large() -> CniError {
    CniError::decode(format!(
        "stdin is larger than {MAX_STDIN_BYTES} bytes; refused"
    ))
}

/// Parses braid's configuration from stdin.
pub fn parse(stdin: &[u8]) -> Result<Settings, CniError> {
    let top = match serde_json::from_slice::<Value>(stdin) {
        Ok(Value::Object(top)) => top,
        Ok(_) => return Err(CniError::decode("stdin is not a JSON object")),
        Err(err) => {
            return Err(
                CniError::decode("stdin is not a JSON network configuration")
                    .with_details(format!("{err}")),
            )
        }
    };
    let (plugin, list_version) = braid_plugin(&top)?;
    let text = |key: &str, default: &str| string_key(plugin, key, default);
    let cni_version = match list_version {
        Some(version) => string_value(version, "cniVersion", "")?,
        None => text("cniVersion", "")?,
    };
    let path = |key: &str, default: &str| {
        let value = text(key, default)?;
        if value.contains('\0') {
            return Err(CniError::config(format!(
                "braid configuration: key `{key}` must be a path without NUL bytes"
            )));
        }
        Ok(value)
    };
    Ok(Settings {
        cni_version,
        socket_dir: path("daemonSocketDir", "/run/braid")?,
        cni_dir: path("cniDir", "/var/lib/cni/braid")?,
        bin_dir: path("binDir", "/opt/cni/bin")?,
        daemon_wait: seconds_key(plugin, "daemonWaitSeconds", 30.0, true)?,
        plugin_timeout: seconds_key(plugin, "pluginTimeout", 60.0, false)?,
        readiness_file: path("readinessindicatorfile", "")?,
    })
}
type PluginView<'a> = (&'a Map<String, Value>, Option<&'a Value>);

/// The plugin object to read, and the list's `cniVersion` when a list wraps it (it applies).
fn braid_plugin(top: &Map<String, Value>) -> Result<PluginView<'_>, CniError> {
    let Some(plugins) = top.get("plugins") else {
        return Ok((top, None));
    };
    let plugins = plugins.as_array().ok_or_else(|| {
        CniError::config("braid configuration: key `plugins` must be a list of objects")
    })?;
    let found: Vec<&Map<String, Value>> = plugins
        .iter()
        .filter_map(Value::as_object)
        .filter(|p| {
            p.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| BRAID_TYPES.contains(&t))
        })
        .collect();
    match found.as_slice() {
        [plugin] => Ok((plugin, top.get("cniVersion"))),
        _ => Err(CniError::config(format!(
            "braid configuration list holds {} plugins of type braid; exactly one is needed",
            found.len()
        ))),
    }
}

/// A string key; absent, null or empty means `default`.
fn string_key(plugin: &Map<String, Value>, key: &str, default: &str) -> Result<String, CniError> {
    match plugin.get(key) {
        None => Ok(default.to_owned()),
        Some(value) => string_value(value, key, default),
    }
}

fn string_value(value: &Value, key: &str, default: &str) -> Result<String, CniError> {
    match value {
        Value::Null => Ok(default.to_owned()),
        Value::String(text) if text.is_empty() => Ok(default.to_owned()),
        Value::String(text) => Ok(text.clone()),
        _ => Err(CniError::config(format!(
            "braid configuration: key `{key}` must be a string"
        ))),
    }
}

/// A number of seconds as a wait or a deadline's distance: held at [`LONGEST_WAIT_SECONDS`]
/// when longer (infinity included), zero when not above zero (`NaN` included). Every timeout
/// braid gives a plugin or waits for goes through here, so none can overflow the clock.
pub fn wait_duration(seconds: f64) -> Duration {
    if seconds.is_nan() || seconds <= 0.0 {
        Duration::ZERO
    } else {
        Duration::from_secs_f64(seconds.min(LONGEST_WAIT_SECONDS))
    }
}

fn seconds_key(
    plugin: &Map<String, Value>,
    key: &str,
    default: f64,
    zero_allowed: bool,
) -> Result<Duration, CniError> {
    let seconds = match plugin.get(key) {
        None | Some(Value::Null) => default,
        Some(value) => value.as_f64().ok_or_else(|| {
            CniError::config(format!("braid configuration: key `{key}` must be a number"))
        })?,
    };
    let valid = seconds > 0.0 || (zero_allowed && seconds == 0.0);
    if !valid {
        return Err(CniError::config(format!(
            "braid configuration: key `{key}` must be a positive number of seconds, not {seconds}"
        )));
    }
    Ok(wait_duration(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;

    #[test]
    fn defaults_apply_to_a_bare_conf() {
        let settings = parse(br#"{"cniVersion": "1.0.0", "name": "b", "type": "braid"}"#).unwrap();
        assert_eq!(settings.cni_version, "1.0.0");
        assert_eq!(settings.socket_dir, "/run/braid");
        assert_eq!(settings.cni_dir, "/var/lib/cni/braid");
        assert_eq!(settings.bin_dir, "/opt/cni/bin");
        assert_eq!(settings.daemon_wait, Duration::from_secs(30));
        assert_eq!(settings.plugin_timeout, Duration::from_secs(60));
        assert_eq!(settings.readiness_file, "");
    }

    #[test]
    fn the_readiness_file_is_read_as_a_path() {
        let conf = br#"{"type": "braid", "readinessindicatorfile": "/run/ready"}"#;
        assert_eq!(parse(conf).unwrap().readiness_file, "/run/ready");
        for unset in ["null", "\"\""] {
            let conf = format!(r#"{{"type": "braid", "readinessindicatorfile": {unset}}}"#);
            assert_eq!(
                parse(conf.as_bytes()).unwrap().readiness_file,
                "",
                "{unset}"
            );
        }
    }

    #[test]
    fn a_list_lends_its_version_to_the_braid_plugin() {
        let list = br#"{"cniVersion": "0.4.0", "name": "k", "plugins": [
            {"type": "portmap"},
            {"type": "braid-thin", "cniVersion": "1.1.0", "daemonWaitSeconds": 0.25,
             "pluginTimeout": 5, "cniDir": "/tmp/x"}]}"#;
        let settings = parse(list).unwrap();
        assert_eq!(settings.cni_version, "0.4.0");
        assert_eq!(settings.daemon_wait, Duration::from_millis(250));
        assert_eq!(settings.plugin_timeout, Duration::from_secs(5));
        assert_eq!(settings.cni_dir, "/tmp/x");
    }

    #[test]
    fn wrong_kinds_are_code_7_naming_the_key() {
        for conf in [
            br#"{"type": "braid", "cniDir": 3}"#.as_slice(),
            br#"{"type": "braid", "daemonWaitSeconds": -1}"#,
            br#"{"type": "braid", "pluginTimeout": "1"}"#,
            br#"{"plugins": [{"type": "braid"}, {"type": "braid"}]}"#,
            br#"{"type": "braid", "daemonSocketDir": "/run/braid\u0000/x"}"#,
            br#"{"type": "braid", "cniDir": "/var\u0000"}"#,
            br#"{"type": "braid", "readinessindicatorfile": "/run/ready\u0000x"}"#,
            br#"{"type": "braid", "readinessindicatorfile": 1}"#,
        ] {
            assert_eq!(parse(conf).unwrap_err().code, codes::INVALID_CONFIG);
        }
    }

    #[test]
    fn huge_waits_are_held_at_the_longest_one() {
        let longest = Duration::from_secs(1_000_000_000);
        for huge in ["1e9", "1e10", "1e19", "1e30", "1e308"] {
            let conf = format!(
                r#"{{"type": "braid", "pluginTimeout": {huge}, "daemonWaitSeconds": {huge}}}"#
            );
            let settings = parse(conf.as_bytes()).unwrap();
            assert_eq!(settings.plugin_timeout, longest, "{huge}");
            assert_eq!(settings.daemon_wait, longest, "{huge}");
        }
    }

    #[test]
    fn wait_durations_never_overflow() {
        assert_eq!(
            wait_duration(f64::INFINITY),
            Duration::from_secs(1_000_000_000)
        );
        assert_eq!(wait_duration(f64::MAX), Duration::from_secs(1_000_000_000));
        assert_eq!(wait_duration(1.5), Duration::from_millis(1500));
        for nothing in [0.0, -0.0, -1.0, f64::NEG_INFINITY, f64::NAN] {
            assert_eq!(wait_duration(nothing), Duration::ZERO, "{nothing}");
        }
    }

    #[test]
    fn not_an_object_is_code_6() {
        for stdin in [b"[]".as_slice(), b"{", b""] {
            assert_eq!(parse(stdin).unwrap_err().code, codes::DECODE_FAILURE);
        }
    }
}
