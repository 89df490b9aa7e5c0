//! The DEL of one attachment of a record (`docs/attachment-record.md`): its network list's
//! plugins in reverse order, stopping at the first failure (libcni's `DelNetworkList`), each
//! given the list's configuration at the version negotiated with its plugins, the
//! attachment's interface, `CNI_ARGS`, capability arguments and `prevResult` (the result cache
//! entry, else the result the record keeps). The cache entry goes once every plugin succeeded.

use std::path::{Path, PathBuf};

use braid_cni::config::summarize;
use braid_cni::inject::{plugin_stdin, StdinRequest};
use braid_cni::record::Entry;
use braid_cni::version::negotiate;
use braid_cni::wire::CniEnv;
use braid_cni::{codes, CniError};
use serde_json::Value;

use crate::cache;
use crate::delegates::{Call, Delegates};

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

/// A network list ready to run: each plugin's type and path, the negotiated version.
struct ListPlan {
    list: Vec<u8>,
    types: Vec<String>,
    paths: Vec<PathBuf>,
    version: String,
}

impl Teardown<'_> {
    /// DELs one attachment; its cache entry goes once every plugin succeeded. An error names
    /// the attachment.
    pub fn attachment(&mut self, entry: &Entry) -> Result<(), CniError> {
        let labelled = |err: CniError| {
            CniError::new(err.code, format!("{}: DEL failed", entry.display_name()))
                .with_details(err.to_string())
        };
        let plan = self.plan(entry).map_err(labelled)?;
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
        let call = Call {
            command: "DEL",
            container_id: &self.env.container_id,
            netns: &self.env.netns,
            ifname: &entry.ifname,
            args: &self.env.args,
        };
        for index in (0..plan.types.len()).rev() {
            let stdin = stdin_for(&plan, index, entry, prev.as_deref()).map_err(labelled)?;
            self.delegates
                .run(&plan.paths[index], &plan.types[index], call, &stdin)
                .map_err(labelled)?;
        }
        if let Some(path) = cache_path {
            cache::remove(&path).map_err(|err| {
                labelled(CniError::new(
                    codes::IO_FAILURE,
                    format!("cannot remove cached result {}: {err}", path.display()),
                ))
            })?;
        }
        Ok(())
    }

    /// Finds every plugin and negotiates the version (VERSION asked once per binary).
    fn plan(&mut self, entry: &Entry) -> Result<ListPlan, CniError> {
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
        Ok(ListPlan {
            list,
            types,
            paths,
            version,
        })
    }
}

/// One plugin's DEL stdin; a cached result that cannot be used is dropped (as `braid.cni`
/// does on DEL) rather than failing the teardown.
fn stdin_for(
    plan: &ListPlan,
    index: usize,
    entry: &Entry,
    prev: Option<&[u8]>,
) -> Result<Vec<u8>, CniError> {
    let request = |prev_result| StdinRequest {
        network_list: &plan.list,
        index,
        command: "DEL",
        cni_version: &plan.version,
        capability_args: entry.capability_args.as_deref(),
        prev_result,
        valid_attachments: None,
        args_cni: entry.args_cni.as_deref(),
    };
    match plugin_stdin(&request(prev)) {
        Err(err) if prev.is_some() => {
            eprintln!(
                "braid: DEL of {} proceeds without the unusable cached result: {err}",
                entry.display_name()
            );
            plugin_stdin(&request(None))
        }
        other => other,
    }
}
