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

/// The CNI variables of a VERSION call: libcni sends `dummy` for the netns, ifname and path.
pub const VERSION_ENV: [(&str, &str); 6] = [
    ("CNI_COMMAND", "VERSION"),
    ("CNI_CONTAINERID", ""),
    ("CNI_NETNS", "dummy"),
    ("CNI_ARGS", ""),
    ("CNI_IFNAME", "dummy"),
    ("CNI_PATH", "dummy"),
];

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
    /// (device, inode) of files never run, whatever name finds them (braid's own shim).
    refused: Vec<(u64, u64)>,
}

impl Delegates {
    /// Delegates found in `dirs` (empty and repeated entries dropped), each run within `timeout`.
    pub fn new(dirs: impl IntoIterator<Item = String>, timeout: Duration) -> Self {
        Self {
            dirs: unique_dirs(dirs),
            timeout,
            versions: HashMap::new(),
            refused: Vec::new(),
        }
    }

    /// These delegates, refusing (code 7) a plugin that is one of the files `refused` names
    /// (device, inode), whatever name or link leads to it: braid's own shim executables.
    #[must_use]
    pub fn refusing(mut self, refused: Vec<(u64, u64)>) -> Self {
        self.refused = refused;
        self
    }

    /// The plugin `plugin_type` ([`lookup::find`]).
    pub fn find(&self, plugin_type: &str) -> Result<PathBuf, CniError> {
        let found = lookup::find(plugin_type, &self.dirs, None)?;
        let (dev, ino, _, _) = found.identity;
        if self.refused.contains(&(dev, ino)) {
            return Err(CniError::config(format!(
                "plugin {} is braid's own shim under another name, which is never a delegate; \
                 refused",
                found.path.display()
            )));
        }
        Ok(found.path)
    }

    /// The plugin's `supportedVersions` (asked once per binary).
    pub fn versions(&mut self, path: &Path, plugin_type: &str) -> Result<Vec<String>, CniError> {
        if let Some(known) = self.versions.get(path) {
            return Ok(known.clone());
        }
        let output = self.execute(path, &VERSION_ENV, VERSION_STDIN)?;
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
        let cni_path = cni_path(&self.dirs);
        full_env(&call_variables(call, &cni_path))
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

/// The six CNI variables of `call` (CNI spec, "Parameters"), `CNI_PATH` being `cni_path`
/// ([`cni_path`]). A VERSION call's are [`VERSION_ENV`].
pub fn call_variables<'a>(call: Call<'a>, cni_path: &'a str) -> [(&'static str, &'a str); 6] {
    [
        ("CNI_COMMAND", call.command),
        ("CNI_CONTAINERID", call.container_id),
        ("CNI_NETNS", call.netns),
        ("CNI_ARGS", call.args),
        ("CNI_IFNAME", call.ifname),
        ("CNI_PATH", cni_path),
    ]
}

/// `CNI_PATH` for the plugin directories `dirs` ([`unique_dirs`] joined with `:`).
pub fn cni_path<S: AsRef<str>>(dirs: impl IntoIterator<Item = S>) -> String {
    unique_dirs(dirs).join(":")
}

/// The plugin directories `dirs` in order, empty and repeated entries dropped (the first of
/// each is kept).
pub fn unique_dirs<S: AsRef<str>>(dirs: impl IntoIterator<Item = S>) -> Vec<String> {
    let mut unique: Vec<String> = Vec::new();
    for dir in dirs {
        let dir = dir.as_ref();
        if !dir.is_empty() && !unique.iter().any(|kept| kept == dir) {
            unique.push(dir.to_owned());
        }
    }
    unique
}

/// This process's environment with `set` over it ([`plugin_env`]).
fn full_env(set: &[(&str, &str)]) -> Vec<(String, String)> {
    let inherited = std::env::vars_os()
        .map(|(name, value)| (name.into_string().ok(), value.into_string().ok()));
    plugin_env(inherited, set)
}

/// A plugin's whole environment (libcni's rule): the `inherited` variables, but for those
/// `set` gives, then `set` (the CNI variables). A variable whose name or value is not UTF-8
/// (`None`) is left out: no CNI variable is one, and no plugin reads one. The shim passes its
/// own environment; the runtime `braid.cni`, through `braid._native`, the one it built.
pub fn plugin_env(
    inherited: impl IntoIterator<Item = (Option<String>, Option<String>)>,
    set: &[(&str, &str)],
) -> Vec<(String, String)> {
    let mut full: Vec<(String, String)> = inherited
        .into_iter()
        .filter_map(|(name, value)| Some((name?, value?)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_file_is_not_run_whatever_its_name() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = std::env::temp_dir().join(format!("braid-refused-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let shim = dir.join("braid");
        std::fs::write(&shim, b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::hard_link(&shim, dir.join("bridge2")).unwrap();
        let meta = std::fs::metadata(&shim).unwrap();
        let dirs = [dir.display().to_string()];
        let plain = Delegates::new(dirs.clone(), Duration::from_secs(1));
        assert!(plain.find("bridge2").is_ok());
        let refusing = plain.refusing(vec![(meta.dev(), meta.ino())]);
        let err = refusing.find("bridge2").unwrap_err();
        assert_eq!(err.code, braid_cni::codes::INVALID_CONFIG);
        assert!(err.msg.contains("braid's own shim"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn some(name: &str, value: &str) -> (Option<String>, Option<String>) {
        (Some(name.to_owned()), Some(value.to_owned()))
    }

    #[test]
    fn the_cni_variables_replace_inherited_ones_and_non_utf8_ones_are_left_out() {
        let inherited = vec![
            some("PATH", "/usr/bin"),
            some("CNI_COMMAND", "ADD"),
            (Some("BAD".to_owned()), None),
            (None, Some("value".to_owned())),
            some("HOME", "/root"),
        ];
        let env = plugin_env(inherited, &[("CNI_COMMAND", "DEL"), ("CNI_PATH", "/opt")]);
        assert_eq!(
            env,
            [
                ("PATH", "/usr/bin"),
                ("HOME", "/root"),
                ("CNI_COMMAND", "DEL"),
                ("CNI_PATH", "/opt"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
    }

    #[test]
    fn the_variables_of_a_call_match_the_golden_file() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/delegate/environment.json"
        );
        let golden: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).expect("golden")).expect("json");
        let call = &golden["call"];
        let text = |key: &str| call[key].as_str().expect(key).to_owned();
        let (command, container_id, netns, ifname, args) = (
            text("command"),
            text("containerId"),
            text("netns"),
            text("ifname"),
            text("args"),
        );
        let dirs: Vec<String> = call["pluginDirs"]
            .as_array()
            .expect("dirs")
            .iter()
            .map(|dir| dir.as_str().expect("dir").to_owned())
            .collect();
        let delegates = Delegates::new(dirs, Duration::from_secs(1));
        let env = delegates.env(Call {
            command: &command,
            container_id: &container_id,
            netns: &netns,
            ifname: &ifname,
            args: &args,
        });
        let expected = golden["variables"].as_object().expect("variables");
        for (name, value) in expected {
            let found: Vec<&String> = env
                .iter()
                .filter(|(k, _)| k == name)
                .map(|e| &e.1)
                .collect();
            assert_eq!(found, [value.as_str().expect("value")], "{name}");
        }
        let version = golden["versionVariables"].as_object().expect("version");
        assert_eq!(version.len(), VERSION_ENV.len());
        for (name, value) in VERSION_ENV {
            assert_eq!(version[name], value, "{name}");
        }
    }
}
