//! A plugin's exit judged with libcni's rules (`pkg/invoke/raw_exec.go`): exit 0 is success;
//! a failed exit with nothing on stdout has its stderr as the message; otherwise stdout is the
//! plugin's error object, whose code is kept. And the VERSION answer, with libcni's fallback
//! for plugins that predate VERSION (`pkg/version`: they answer `unknown CNI_COMMAND: VERSION`
//! and support 0.1.0 only).
//!
//! Pure: the caller copies the plugin's stderr where it belongs.

use std::io;
use std::path::Path;
use std::time::Duration;

use braid_cni::result::parse_error_object;
use braid_cni::version::parse_version_output;
use braid_cni::{codes, CniError};

/// The stdin libcni gives a plugin's VERSION.
pub const VERSION_STDIN: &[u8] = br#"{"cniVersion":"1.1.0"}"#;
/// What a plugin older than VERSION answers it.
pub const UNKNOWN_VERSION_COMMAND: &str = "unknown CNI_COMMAND: VERSION";

/// A failed exit: the error to report and the plugin's own message (unprefixed).
#[derive(Debug, Clone, PartialEq)]
pub struct ExitFailure {
    pub error: CniError,
    pub plugin_msg: String,
}

/// How a process ended, in words: `exit status N`, or `signal N` for minus `N`.
pub fn exit_status(code: i32) -> String {
    if code >= 0 {
        format!("exit status {code}")
    } else {
        format!("signal {}", code.unsigned_abs())
    }
}

/// `Ok` for exit 0; else the plugin's error (code 100 when it gave none that parses).
pub fn judge_exit(
    code: i32,
    stdout: &[u8],
    stderr: &[u8],
    plugin_type: &str,
) -> Result<(), ExitFailure> {
    if code == 0 {
        return Ok(());
    }
    let status = exit_status(code);
    if stdout.trim_ascii().is_empty() {
        return Err(silent_failure(stderr, &status, plugin_type));
    }
    Err(reported_failure(stdout, &status, plugin_type))
}

/// A failed exit with nothing on stdout: the message is stderr.
fn silent_failure(stderr: &[u8], status: &str, plugin_type: &str) -> ExitFailure {
    let stderr = String::from_utf8_lossy(stderr).trim().to_owned();
    let text = if stderr.is_empty() {
        format!("failed with {status} and no error message")
    } else {
        stderr
    };
    ExitFailure {
        error: CniError::new(
            codes::PLUGIN_FAILURE,
            format!("plugin {plugin_type:?} failed: {text}"),
        ),
        plugin_msg: text,
    }
}

/// A failed exit with stdout: the plugin's error object, kept with its code.
fn reported_failure(stdout: &[u8], status: &str, plugin_type: &str) -> ExitFailure {
    match parse_error_object(stdout) {
        Ok(plugin) => ExitFailure {
            error: CniError::new(
                plugin.code,
                format!("plugin {plugin_type:?} failed: {}", plugin.msg),
            )
            .with_details(plugin.details),
            plugin_msg: plugin.msg,
        },
        Err(err) => ExitFailure {
            error: CniError::new(
                codes::PLUGIN_FAILURE,
                format!(
                    "plugin {plugin_type:?} failed ({status}) and its error output could not be \
                     parsed"
                ),
            )
            .with_details(err.msg),
            plugin_msg: String::new(),
        },
    }
}

/// Why a plugin produced no output to judge.
#[derive(Debug)]
pub enum NoOutput<'a> {
    /// Its deadline (this long after its start) passed; its process group was killed.
    TimedOut(Option<Duration>),
    /// It wrote more than the stdout cap; its process group was killed.
    StdoutTooLarge(usize),
    /// Its pipes failed; its process group was killed.
    Exchange(&'a io::Error),
    /// It could not be started.
    Start(&'a io::Error),
}

/// The error of a plugin at `path` that produced no output, by its code: the binary cannot be
/// executed or is gone (103), a deadline (102), anything else (100).
pub fn no_output_error(path: &Path, why: &NoOutput<'_>) -> CniError {
    let path = path.display();
    match why {
        NoOutput::TimedOut(timeout) => {
            let within =
                timeout.map_or_else(String::new, |t| format!(" within {} s", t.as_secs_f64()));
            CniError::new(
                codes::PLUGIN_TIMEOUT,
                format!("plugin {path} did not finish{within}; its process group was killed"),
            )
        }
        NoOutput::StdoutTooLarge(cap) => CniError::new(
            codes::PLUGIN_FAILURE,
            format!("plugin {path} wrote more than {cap} bytes to stdout"),
        ),
        NoOutput::Exchange(err) => CniError::new(
            codes::PLUGIN_FAILURE,
            format!("cannot exchange data with plugin {path}; its process group was killed"),
        )
        .with_details(err.to_string()),
        NoOutput::Start(err) => match err.kind() {
            io::ErrorKind::PermissionDenied => CniError::new(
                codes::PLUGIN_NOT_FOUND,
                format!("plugin {path} is not executable"),
            ),
            io::ErrorKind::NotFound => CniError::new(
                codes::PLUGIN_NOT_FOUND,
                format!("plugin {path} disappeared"),
            ),
            _ => CniError::new(
                codes::PLUGIN_FAILURE,
                format!("cannot execute plugin {path}: {err}"),
            ),
        },
    }
}

/// The `supportedVersions` of a plugin's VERSION answer; 0.1.0 alone for a plugin that does
/// not know VERSION.
pub fn supported_versions(
    code: i32,
    stdout: &[u8],
    stderr: &[u8],
    plugin_type: &str,
) -> Result<Vec<String>, CniError> {
    match judge_exit(code, stdout, stderr, plugin_type) {
        Ok(()) => parse_version_output(stdout).map_err(|err| {
            CniError::new(
                err.code,
                format!("plugin {plugin_type:?} gave an invalid VERSION answer"),
            )
            .with_details(err.msg)
        }),
        Err(failure) if failure.plugin_msg == UNKNOWN_VERSION_COMMAND => Ok(vec!["0.1.0".into()]),
        Err(failure) => Err(failure.error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_is_named_as_one() {
        assert_eq!(exit_status(3), "exit status 3");
        assert_eq!(exit_status(-9), "signal 9");
        let failure = judge_exit(-9, b"", b"", "bridge").unwrap_err();
        assert_eq!(
            failure.plugin_msg,
            "failed with signal 9 and no error message"
        );
    }

    #[test]
    fn an_old_plugin_supports_0_1_0() {
        let stdout = br#"{"code": 4, "msg": "unknown CNI_COMMAND: VERSION"}"#;
        assert_eq!(
            supported_versions(1, stdout, b"", "old").unwrap(),
            vec!["0.1.0".to_owned()]
        );
        let err = supported_versions(0, b"{}", b"", "bad").unwrap_err();
        assert!(err.msg.contains("invalid VERSION answer"), "{err}");
    }
}
