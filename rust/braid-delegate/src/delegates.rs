//! Delegate plugins run as processes (`braid-exec`): found with [`lookup`](crate::lookup),
//! asked their VERSION once per binary, given the six CNI variables (CNI spec, "Parameters")
//! over this process's environment, and judged with [`judge`](crate::judge). Each plugin's
//! stderr is copied to ours.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use braid_exec::sequence::StepLimits;
use braid_exec::{Failure, Limits, Output, RunFailure};

use braid_cni::CniError;

use crate::judge::{judge_exit, no_output_error, supported_versions, NoOutput, VERSION_STDIN};
use crate::{lookup, EXIT_GRACE, MAX_STDOUT_BYTES};

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

    /// The plugin `plugin_type` ([`lookup::find`]).
    pub fn find(&self, plugin_type: &str) -> Result<PathBuf, CniError> {
        lookup::find(plugin_type, &self.dirs, None).map(|found| found.path)
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
        let output = self.execute(path, &env, VERSION_STDIN)?;
        let supported =
            supported_versions(output.code, &output.stdout, &output.stderr, plugin_type)?;
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
        let output = self.execute_with(path, &self.env(call), stdin)?;
        judge_exit(output.code, &output.stdout, &output.stderr, plugin_type)
            .map_err(|failure| failure.error)?;
        Ok(output.stdout)
    }

    /// The whole environment of a plugin run for `call`: this process's, with the six CNI
    /// variables over it (libcni's rule).
    pub fn env(&self, call: Call<'_>) -> Vec<(String, String)> {
        let cni_path = self.dirs.join(":");
        full_env(&[
            ("CNI_COMMAND", call.command),
            ("CNI_CONTAINERID", call.container_id),
            ("CNI_NETNS", call.netns),
            ("CNI_ARGS", call.args),
            ("CNI_IFNAME", call.ifname),
            ("CNI_PATH", cni_path.as_str()),
        ])
    }

    /// The bounds of each step of a sequence of these plugins.
    pub fn step_limits(&self) -> StepLimits {
        StepLimits {
            timeout: Some(self.timeout),
            exit_grace: EXIT_GRACE,
            max_stdout: MAX_STDOUT_BYTES,
        }
    }

    /// The error of a run that produced no output ([`no_output_error`]).
    pub fn run_error(&self, path: &Path, failure: &RunFailure) -> CniError {
        let why = match failure {
            RunFailure::Run(Failure::TimedOut) => NoOutput::TimedOut(Some(self.timeout)),
            RunFailure::Run(Failure::StdoutTooLarge) => NoOutput::StdoutTooLarge(MAX_STDOUT_BYTES),
            RunFailure::Run(Failure::Io(err)) => NoOutput::Exchange(err),
            RunFailure::Spawn(err) => NoOutput::Start(err),
        };
        no_output_error(path, &why)
    }

    fn execute(&self, path: &Path, env: &[(&str, &str)], stdin: &[u8]) -> Result<Output, CniError> {
        self.execute_with(path, &full_env(env), stdin)
    }

    fn execute_with(
        &self,
        path: &Path,
        env: &[(String, String)],
        stdin: &[u8],
    ) -> Result<Output, CniError> {
        let limits = Limits {
            deadline: Some(Instant::now() + self.timeout),
            exit_grace: EXIT_GRACE,
            max_stdout: MAX_STDOUT_BYTES,
        };
        let output = braid_exec::run(path, env, stdin, limits)
            .map_err(|failure| self.run_error(path, &failure))?;
        copy_stderr(&output.stderr);
        Ok(output)
    }
}

/// This process's environment with `set` over it.
fn full_env(set: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut full: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| !set.iter().any(|(key, _)| key == name))
        .collect();
    full.extend(set.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    full
}

/// A plugin's stderr copied to ours (never to stdout).
pub fn copy_stderr(stderr: &[u8]) {
    if !stderr.is_empty() {
        eprint!("{}", String::from_utf8_lossy(stderr));
    }
}
