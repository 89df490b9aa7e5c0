//! Delegate plugins as the runtime `braid.cni` runs them: lookup in `binDir` then `CNI_PATH`,
//! one VERSION per binary, the six CNI variables (CNI spec, "Parameters"), and a failed exit
//! judged with libcni's rules (`pkg/invoke`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use braid_exec::{Failure, Limits, Output, RunFailure};

use braid_cni::result::parse_error_object;
use braid_cni::version::parse_version_output;
use braid_cni::{codes, CniError};

const VERSION_STDIN: &[u8] = br#"{"cniVersion":"1.1.0"}"#;
const UNKNOWN_VERSION_COMMAND: &str = "unknown CNI_COMMAND: VERSION";
/// The most stdout accepted from a plugin.
const MAX_STDOUT_BYTES: usize = 1 << 20;
/// Silence allowed on a plugin's pipes once it has exited (a descendant may hold them).
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// The CNI variables of one call (`CNI_PATH` comes from [`Delegates`]).
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// `CNI_COMMAND`.
    pub command: &'a str,
    /// `CNI_CONTAINERID`.
    pub container_id: &'a str,
    /// `CNI_NETNS`.
    pub netns: &'a str,
    /// `CNI_IFNAME`.
    pub ifname: &'a str,
    /// `CNI_ARGS`.
    pub args: &'a str,
}

/// The plugin directories, the deadline, and each binary's VERSION answer.
#[derive(Debug)]
pub struct Delegates {
    dirs: Vec<String>,
    timeout: Duration,
    versions: HashMap<PathBuf, Vec<String>>,
}

impl Delegates {
    /// Delegates found in `dirs` (empty and repeated entries dropped), each run within `timeout`.
    pub fn new(dirs: impl IntoIterator<Item = String>, timeout: Duration) -> Self {
        let mut unique: Vec<String> = Vec::new();
        for dir in dirs {
            if !dir.is_empty() && !unique.contains(&dir) {
                unique.push(dir);
            }
        }
        Self {
            dirs: unique,
            timeout,
            versions: HashMap::new(),
        }
    }

    /// The first regular file named `plugin_type` in the directories.
    pub fn find(&self, plugin_type: &str) -> Result<PathBuf, CniError> {
        let plain = !plugin_type.is_empty()
            && plugin_type != "."
            && !plugin_type.contains(['/', '\0'])
            && !plugin_type.contains("..");
        if !plain {
            return Err(CniError::config(format!(
                "plugin type {plugin_type:?} is not a plain file name; a plugin type must name \
                 an executable inside CNI_PATH"
            )));
        }
        self.dirs
            .iter()
            .map(|dir| Path::new(dir).join(plugin_type))
            .find(|candidate| candidate.metadata().is_ok_and(|m| m.is_file()))
            .ok_or_else(|| {
                CniError::new(
                    codes::PLUGIN_NOT_FOUND,
                    format!(
                        "failed to find plugin {plugin_type:?} in path {:?}",
                        self.dirs
                    ),
                )
                .with_details("set CNI_PATH to the directories holding the CNI plugins")
            })
    }

    /// The plugin's `supportedVersions` (asked once per binary).
    pub fn versions(&mut self, path: &Path, plugin_type: &str) -> Result<Vec<String>, CniError> {
        if let Some(known) = self.versions.get(path) {
            return Ok(known.clone());
        }
        let env = [
            ("CNI_COMMAND", "VERSION"),
            ("CNI_CONTAINERID", ""),
            ("CNI_NETNS", "dummy"),
            ("CNI_ARGS", ""),
            ("CNI_IFNAME", "dummy"),
            ("CNI_PATH", "dummy"),
        ];
        let output = self.execute(path, plugin_type, &env, VERSION_STDIN)?;
        let supported = match judge(&output, plugin_type) {
            Ok(stdout) => parse_version_output(&stdout).map_err(|err| {
                CniError::new(
                    err.code,
                    format!("plugin {plugin_type:?} gave an invalid VERSION answer"),
                )
                .with_details(err.msg)
            })?,
            Err(failure) if failure.plugin_msg == UNKNOWN_VERSION_COMMAND => vec!["0.1.0".into()],
            Err(failure) => return Err(failure.error),
        };
        self.versions.insert(path.to_owned(), supported.clone());
        Ok(supported)
    }

    /// Runs the plugin for `call`; its stdout on success, its error otherwise.
    pub fn run(
        &self,
        path: &Path,
        plugin_type: &str,
        call: Call<'_>,
        stdin: &[u8],
    ) -> Result<Vec<u8>, CniError> {
        let cni_path = self.dirs.join(":");
        let env = [
            ("CNI_COMMAND", call.command),
            ("CNI_CONTAINERID", call.container_id),
            ("CNI_NETNS", call.netns),
            ("CNI_ARGS", call.args),
            ("CNI_IFNAME", call.ifname),
            ("CNI_PATH", cni_path.as_str()),
        ];
        let output = self.execute(path, plugin_type, &env, stdin)?;
        judge(&output, plugin_type).map_err(|failure| failure.error)
    }

    fn execute(
        &self,
        path: &Path,
        plugin_type: &str,
        env: &[(&str, &str)],
        stdin: &[u8],
    ) -> Result<Output, CniError> {
        // The shim's own environment with the call's variables over it (libcni's rule).
        let mut full: Vec<(String, String)> = std::env::vars()
            .filter(|(name, _)| !env.iter().any(|(set, _)| set == name))
            .collect();
        full.extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        let limits = Limits {
            deadline: Some(Instant::now() + self.timeout),
            exit_grace: EXIT_GRACE,
            max_stdout: MAX_STDOUT_BYTES,
        };
        match braid_exec::run(path, &full, stdin, limits) {
            Ok(output) => Ok(output),
            Err(RunFailure::Run(Failure::TimedOut)) => Err(CniError::new(
                codes::PLUGIN_TIMEOUT,
                format!(
                    "plugin {} did not finish within {} s; its process group was killed",
                    path.display(),
                    self.timeout.as_secs_f64()
                ),
            )),
            Err(RunFailure::Run(Failure::StdoutTooLarge)) => Err(CniError::new(
                codes::PLUGIN_FAILURE,
                format!(
                    "plugin {} wrote more than {MAX_STDOUT_BYTES} bytes to stdout",
                    path.display()
                ),
            )),
            Err(RunFailure::Spawn(err) | RunFailure::Run(Failure::Io(err))) => Err(CniError::new(
                codes::PLUGIN_FAILURE,
                format!(
                    "cannot run plugin {plugin_type:?} ({}): {err}",
                    path.display()
                ),
            )),
        }
    }
}

/// A failed exit: the error to report and the plugin's own message (unprefixed).
struct ExitFailure {
    error: CniError,
    plugin_msg: String,
}

/// Copies the plugin's stderr to ours; a failed exit becomes its error (libcni's rule: empty
/// stdout → the message is stderr; else stdout is the error object).
fn judge(output: &Output, plugin_type: &str) -> Result<Vec<u8>, ExitFailure> {
    if !output.stderr.is_empty() {
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
    }
    if output.code == 0 {
        return Ok(output.stdout.clone());
    }
    let status = if output.code > 0 {
        format!("exit status {}", output.code)
    } else {
        "a signal".to_owned()
    };
    if output.stdout.trim_ascii().is_empty() {
        return Err(silent_failure(&output.stderr, &status, plugin_type));
    }
    Err(reported_failure(&output.stdout, &status, plugin_type))
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
