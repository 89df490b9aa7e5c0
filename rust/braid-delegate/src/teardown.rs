//! The DEL of a record's attachments (`docs/attachment-record.md`) and of network lists in
//! general: each list's plugins in reverse order, stopping at the list's first failure
//! (libcni's `DelNetworkList`), the next list running all the same. Each plugin is given the
//! list's configuration at the version negotiated with its plugins, the attachment's
//! interface, `CNI_ARGS`, capability arguments and `prevResult`; a `prevResult` that cannot be
//! given at that version is left out rather than failing the DEL ([`del_stdins`], which the
//! runtime `braid.cni` uses too). The plugins of every list run as one `braid-exec` sequence,
//! each started while the one before it runs.

use std::path::{Path, PathBuf};

use braid_cni::config::summarize;
use braid_cni::inject::{plugin_stdin, StdinRequest};
use braid_cni::record::Entry;
use braid_cni::version::negotiate;
use braid_cni::wire::CniEnv;
use braid_cni::{codes, CniError};
use braid_exec::sequence::{run_sequence, Step, StepResult};
use braid_exec::{RunFailure, Within};
use serde_json::Value;

use crate::cache;
use crate::delegates::{copy_stderr, Call, Delegates};
use crate::judge::judge_exit;
use crate::lookup;

/// What one network list's DEL stdins are built from.
#[derive(Debug, Clone, Copy)]
pub struct DelInputs<'a> {
    /// The network list (a conflist).
    pub network_list: &'a [u8],
    /// How many plugins it has.
    pub plugins: usize,
    /// The version it runs at.
    pub cni_version: &'a str,
    /// `runtimeConfig`'s source, as JSON.
    pub capability_args: Option<&'a [u8]>,
    /// `args.cni`, as JSON.
    pub args_cni: Option<&'a [u8]>,
    /// The attachment's result.
    pub prev_result: Option<&'a [u8]>,
}

/// A list's DEL stdins in the order they run (its last plugin first), and why the
/// `prevResult` was left out, if it was.
#[derive(Debug)]
pub struct DelStdins {
    pub stdins: Vec<Vec<u8>>,
    pub dropped: Option<CniError>,
}

/// Every plugin's DEL stdin, last plugin first. A `prevResult` that cannot be given (it does
/// not convert to the list's version) is left out of all of them.
pub fn del_stdins(inputs: &DelInputs<'_>) -> Result<DelStdins, CniError> {
    let build = |prev_result| {
        (0..inputs.plugins)
            .rev()
            .map(|index| {
                plugin_stdin(&StdinRequest {
                    network_list: inputs.network_list,
                    index,
                    command: "DEL",
                    cni_version: inputs.cni_version,
                    capability_args: inputs.capability_args,
                    prev_result,
                    valid_attachments: None,
                    args_cni: inputs.args_cni,
                })
            })
            .collect::<Result<Vec<_>, _>>()
    };
    match build(inputs.prev_result) {
        Err(err) if inputs.prev_result.is_some() => Ok(DelStdins {
            stdins: build(None)?,
            dropped: Some(err),
        }),
        other => other.map(|stdins| DelStdins {
            stdins,
            dropped: None,
        }),
    }
}

/// Tears down attachments of one container, sharing each binary's VERSION answer.
#[derive(Debug)]
pub struct Teardown<'a> {
    /// The DEL's CNI variables.
    pub env: &'a CniEnv,
    /// The directory whose `results/` holds the result cache.
    pub cache_dir: &'a Path,
    /// The plugins.
    pub delegates: Delegates,
}

/// An attachment ready to run: its plugins, their stdins (in running order), its environment.
struct Prepared {
    types: Vec<String>,
    paths: Vec<PathBuf>,
    stdins: Vec<Vec<u8>>,
    env: Vec<(String, String)>,
    cache_path: Option<PathBuf>,
}

/// Which of a record's entries (given by their `positions`) a DEL tears down, and in which
/// order, as indices: every one, whatever its state (a DEL of an attachment never made is
/// harmless; one skipped may leak what its delegates hold), the last in plan order first (ties:
/// the later entry first). The engine (`braid.engine.teardown`) and the shim's replay both
/// follow it.
pub fn order(positions: &[u64]) -> Vec<usize> {
    let mut indices: Vec<usize> = (0..positions.len()).rev().collect();
    indices.sort_by_key(|&index| std::cmp::Reverse(positions[index]));
    indices
}

/// `entries` in teardown order ([`order`]).
pub fn in_order(entries: &[Entry]) -> Vec<&Entry> {
    let positions: Vec<u64> = entries.iter().map(|entry| entry.position).collect();
    order(&positions).into_iter().map(|i| &entries[i]).collect()
}

/// The error of an attachment whose DEL failed with `err`: its code, the attachment named
/// (`name`: its label, else its network-status name), `err` whole in the details.
pub fn del_failed(name: &str, err: &CniError) -> CniError {
    CniError::new(err.code, format!("{name}: DEL failed")).with_details(err.to_string())
}

fn labelled(entry: &Entry, err: &CniError) -> CniError {
    del_failed(entry.display_name(), err)
}

impl Teardown<'_> {
    /// DELs `entries` in the order given: every one is prepared first (plugins found, VERSION
    /// asked once per binary, stdins built), then all their plugins run as one sequence. Each
    /// entry's outcome, in the same order; an entry's cache entry goes once every one of its
    /// plugins succeeded. An error names its attachment.
    pub fn attachments(&mut self, entries: &[&Entry]) -> Vec<Result<(), CniError>> {
        let prepared: Vec<Result<Prepared, CniError>> = entries
            .iter()
            .map(|entry| self.prepare(entry).map_err(|err| labelled(entry, &err)))
            .collect();
        let mut steps = Vec::new();
        let mut plugins = Vec::new(); // (entry, plugin index) of each step
        for (group, ready) in prepared.iter().enumerate() {
            let Ok(ready) = ready else { continue };
            let last = ready.paths.len().saturating_sub(1);
            for (order, stdin) in ready.stdins.iter().enumerate() {
                let index = last - order;
                steps.push(Step {
                    path: &ready.paths[index],
                    env: &ready.env,
                    stdin,
                    group,
                });
                plugins.push((group, index));
            }
        }
        let results = run_sequence(&steps, self.delegates.step_limits(), Within::HERE);
        let mut outcomes: Vec<Result<(), CniError>> = prepared
            .iter()
            .map(|ready| ready.as_ref().map(|_| ()).map_err(Clone::clone))
            .collect();
        for ((group, index), result) in plugins.into_iter().zip(results) {
            let Ok(ready) = &prepared[group] else {
                continue;
            };
            if let Some(err) = self.step_error(&ready.paths[index], &ready.types[index], result) {
                if outcomes[group].is_ok() {
                    outcomes[group] = Err(labelled(entries[group], &err));
                }
            }
        }
        for ((outcome, ready), entry) in outcomes.iter_mut().zip(&prepared).zip(entries) {
            if let (
                Ok(()),
                Ok(Prepared {
                    cache_path: Some(path),
                    ..
                }),
            ) = (&outcome, ready)
            {
                if let Err(err) = cache::remove(path) {
                    *outcome = Err(labelled(
                        entry,
                        &CniError::new(
                            codes::IO_FAILURE,
                            format!("cannot remove cached result {}: {err}", path.display()),
                        ),
                    ));
                }
            }
        }
        outcomes
    }

    /// A step's error, if it failed (its stderr copied to ours).
    fn step_error(&self, path: &Path, plugin_type: &str, result: StepResult) -> Option<CniError> {
        match result {
            StepResult::Exited { output, .. } => {
                copy_stderr(&output.stderr);
                judge_exit(output.code, &output.stdout, &output.stderr, plugin_type)
                    .err()
                    .map(|failure| failure.error)
            }
            StepResult::Failed { failure, .. } => {
                Some(self.delegates.run_error(path, &RunFailure::Run(failure)))
            }
            StepResult::NotStarted(err) => {
                Some(self.delegates.run_error(path, &RunFailure::Spawn(err)))
            }
            StepResult::Skipped => None,
        }
    }

    /// Finds every plugin, negotiates the version, builds every stdin.
    fn prepare(&mut self, entry: &Entry) -> Result<Prepared, CniError> {
        let list = entry.network_list()?;
        let summary: Value = serde_json::from_slice(&summarize(&list)?)
            .map_err(|err| CniError::decode(format!("network list summary: {err}")))?;
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        let strings = |value: &Value| -> Vec<String> {
            value
                .as_array()
                .map(|a| a.iter().map(text).collect())
                .unwrap_or_default()
        };
        let types: Vec<String> = summary["plugins"]
            .as_array()
            .map(|plugins| plugins.iter().map(|p| text(&p["type"])).collect())
            .unwrap_or_default();
        if let Some(meta) = types.iter().find(|t| lookup::is_meta_plugin(t)) {
            return Err(lookup::meta_plugin_refused(meta, "the attachment record"));
        }
        let paths = types
            .iter()
            .map(|t| self.delegates.find(t))
            .collect::<Result<Vec<_>, _>>()?;
        let supported = types
            .iter()
            .zip(&paths)
            .map(|(t, path)| self.delegates.versions(path, t))
            .collect::<Result<Vec<_>, _>>()?;
        let version = negotiate(
            &text(&summary["cniVersion"]),
            &strings(&summary["cniVersions"]),
            &supported,
        )?;
        let cache_path = cache::entry_path(
            self.cache_dir,
            &entry.network_name,
            &self.env.container_id,
            &entry.ifname,
        )
        .ok();
        let prev = cache_path
            .as_deref()
            .and_then(cache::read_result)
            .or_else(|| entry.result.clone());
        let built = del_stdins(&DelInputs {
            network_list: &list,
            plugins: types.len(),
            cni_version: &version,
            capability_args: entry.capability_args.as_deref(),
            args_cni: entry.args_cni.as_deref(),
            prev_result: prev.as_deref(),
        })?;
        if let Some(err) = built.dropped {
            eprintln!(
                "braid: DEL of {} proceeds without the unusable cached result: {err}",
                entry.display_name()
            );
        }
        let env = self.delegates.env(Call {
            command: "DEL",
            container_id: &self.env.container_id,
            netns: &self.env.netns,
            ifname: &entry.ifname,
            args: &self.env.args,
        });
        Ok(Prepared {
            types,
            paths,
            stdins: built.stdins,
            env,
            cache_path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &[u8] = br#"{"cniVersion": "1.0.0", "name": "net1",
        "plugins": [{"type": "bridge"}, {"type": "tuning"}]}"#;
    const RESULT: &[u8] = br#"{"cniVersion": "1.0.0", "ips": [{"address": "10.1.0.5/24"}]}"#;

    fn inputs(prev_result: Option<&[u8]>) -> DelInputs<'_> {
        DelInputs {
            network_list: LIST,
            plugins: 2,
            cni_version: "1.0.0",
            capability_args: None,
            args_cni: None,
            prev_result,
        }
    }

    fn stdin(data: &[u8]) -> Value {
        serde_json::from_slice(data).expect("stdin JSON")
    }

    #[test]
    fn every_entry_goes_the_last_in_plan_order_first() {
        assert_eq!(order(&[0, 1, 2]), [2, 1, 0]);
        assert_eq!(order(&[2, 0, 1]), [0, 2, 1]);
        assert_eq!(order(&[0, 1, 1]), [2, 1, 0], "ties: the later entry first");
        assert!(order(&[]).is_empty());
    }

    #[test]
    fn a_failure_names_its_attachment_and_keeps_the_error_whole() {
        let err = CniError::new(7, "bad").with_details("why");
        let failed = del_failed("net1", &err);
        assert_eq!(failed.code, 7);
        assert_eq!(failed.msg, "net1: DEL failed");
        assert_eq!(failed.details, "bad: why (code 7)");
    }

    #[test]
    fn the_last_plugin_runs_first_with_the_result() {
        let built = del_stdins(&inputs(Some(RESULT))).unwrap();
        assert!(built.dropped.is_none());
        let types: Vec<Value> = built
            .stdins
            .iter()
            .map(|s| stdin(s)["type"].clone())
            .collect();
        assert_eq!(types, ["tuning", "bridge"]);
        for data in &built.stdins {
            assert_eq!(
                stdin(data)["prevResult"]["ips"][0]["address"],
                "10.1.0.5/24"
            );
        }
    }

    #[test]
    fn a_result_that_cannot_be_given_is_left_out() {
        let unusable = br#"{"cniVersion": "9.9.9"}"#;
        let built = del_stdins(&inputs(Some(unusable))).unwrap();
        assert!(built.dropped.is_some());
        assert_eq!(built.stdins.len(), 2);
        for data in &built.stdins {
            assert!(stdin(data).get("prevResult").is_none());
        }
    }
}
