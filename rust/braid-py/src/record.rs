//! The attachment record's decoder (`braid_cni::record`) for the engine: the fields as
//! builtins, keyed by the engine's attribute names; JSON members as their bytes.

use braid_cni::record::{self, capabilities, Entry, Record};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

fn json<'py>(py: Python<'py>, data: Option<&Vec<u8>>) -> Option<Bound<'py, PyBytes>> {
    data.map(|d| PyBytes::new(py, d))
}

/// An entry's fields; its `capability_args` are its own (`Whose::Own`) or whole, the record's
/// merged in (`Whose::Merged`).
fn entry<'py>(py: Python<'py>, entry: &Entry, whose: Whose) -> PyResult<Bound<'py, PyDict>> {
    let fields = PyDict::new(py);
    fields.set_item("name", &entry.name)?;
    fields.set_item("network_name", &entry.network_name)?;
    fields.set_item("ifname", &entry.ifname)?;
    fields.set_item("config", &entry.config)?;
    fields.set_item("position", entry.position)?;
    fields.set_item("is_list", entry.is_list)?;
    fields.set_item("is_default", entry.is_default)?;
    fields.set_item("label", &entry.label)?;
    fields.set_item("args_cni", json(py, entry.args_cni.as_ref()))?;
    let capability_args = match whose {
        Whose::Own => entry.own_capability_args.as_ref(),
        Whose::Merged => entry.capability_args.as_ref(),
    };
    fields.set_item("capability_args", json(py, capability_args))?;
    fields.set_item("ips", &entry.ips)?;
    fields.set_item("mac", &entry.mac)?;
    fields.set_item("default_route", &entry.default_route)?;
    fields.set_item("auxiliary_chain", entry.auxiliary_chain)?;
    fields.set_item("state", &entry.state)?;
    fields.set_item("result", json(py, entry.result.as_ref()))?;
    fields.set_item("error", &entry.error)?;
    Ok(fields)
}

#[derive(Debug, Clone, Copy)]
enum Whose {
    Own,
    Merged,
}

fn entries<'py>(
    py: Python<'py>,
    list: &[Entry],
    whose: Whose,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    list.iter().map(|e| entry(py, e, whose)).collect()
}

fn record<'py>(py: Python<'py>, record: &Record) -> PyResult<Bound<'py, PyDict>> {
    let fields = PyDict::new(py);
    fields.set_item("container_id", &record.container_id)?;
    fields.set_item("netns", &record.netns)?;
    fields.set_item("version", record.version)?;
    fields.set_item("cni_version", &record.cni_version)?;
    fields.set_item("cni_args", &record.cni_args)?;
    fields.set_item("plugin_dirs", &record.plugin_dirs)?;
    fields.set_item("capability_args", json(py, record.capability_args.as_ref()))?;
    fields.set_item("pod_namespace", &record.pod_namespace)?;
    fields.set_item("pod_name", &record.pod_name)?;
    fields.set_item("pod_uid", &record.pod_uid)?;
    fields.set_item("attachments", entries(py, &record.attachments, Whose::Own)?)?;
    fields.set_item("network_status", json(py, record.network_status.as_ref()))?;
    Ok(fields)
}

/// What `decode_record` answers: the record's fields, or the damage.
type Decoded<'py> = (Option<Bound<'py, PyDict>>, Option<Damage<'py>>);
/// `(code, msg, details, salvaged entries, complete)`.
type Damage<'py> = (u32, String, String, Vec<Bound<'py, PyDict>>, bool);

/// Decodes the record of `container_id` (`braid_cni::record::decode`): `(fields, None)`, or
/// `(None, (code, msg, details, salvaged, complete))` for a damaged one. Fields and entries are
/// dicts keyed by the engine's attribute names; JSON members (`args_cni`, `capability_args`,
/// `result`, `network_status`) are their bytes, `None` when absent or empty. A record's entries
/// hold their own capability arguments (`merge_capability_args` gives what their delegates
/// get); salvaged entries, which go into another record, hold them whole.
#[pyfunction]
#[pyo3(signature = (*, data, container_id))]
fn decode_record<'py>(py: Python<'py>, data: &[u8], container_id: &str) -> PyResult<Decoded<'py>> {
    match py.detach(|| record::decode(data, container_id)) {
        Ok(decoded) => Ok((Some(record(py, &decoded)?), None)),
        Err(damaged) => {
            let salvaged = entries(py, &damaged.salvaged, Whose::Merged)?;
            let error = damaged.error;
            let damage = (
                error.code,
                error.msg,
                error.details,
                salvaged,
                damaged.complete,
            );
            Ok((None, Some(damage)))
        }
    }
}

/// The `containerId` a record's bytes name (`braid_cni::record::container_of`): how a spare
/// file holding a record is told from a blank or torn one.
#[pyfunction]
#[pyo3(signature = (*, data))]
fn record_container(data: &[u8]) -> Option<String> {
    record::container_of(data)
}

/// An entry's capability arguments, the runtime's (`runtime`, the record's) with its `own`
/// over them (`braid_cni::record::capabilities::merged`).
#[pyfunction]
#[pyo3(signature = (*, runtime, own))]
fn merge_capability_args(py: Python<'_>, runtime: &[u8], own: &[u8]) -> PyResult<Py<PyBytes>> {
    capabilities::merged_json(runtime, own)
        .map(|data| PyBytes::new(py, &data).unbind())
        .map_err(|err| crate::to_py_err(py, err))
}

/// How a record holds the capability arguments of its entries (`entries`, each the runtime's
/// with the entry's requests over them): `(the record's, [each entry's own])`
/// (`braid_cni::record::capabilities::split`).
#[pyfunction]
#[pyo3(signature = (*, runtime, entries))]
fn split_capability_args(
    py: Python<'_>,
    runtime: &[u8],
    entries: Vec<Vec<u8>>,
) -> PyResult<(Py<PyBytes>, Vec<Py<PyBytes>>)> {
    let alls: Vec<&[u8]> = entries.iter().map(Vec::as_slice).collect();
    let (top, owns) =
        capabilities::split_json(runtime, &alls).map_err(|err| crate::to_py_err(py, err))?;
    let owns = owns
        .iter()
        .map(|own| PyBytes::new(py, own).unbind())
        .collect();
    Ok((PyBytes::new(py, &top).unbind(), owns))
}

/// Adds this module's functions to `_native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decode_record, m)?)?;
    m.add_function(wrap_pyfunction!(record_container, m)?)?;
    m.add_function(wrap_pyfunction!(merge_capability_args, m)?)?;
    m.add_function(wrap_pyfunction!(split_capability_args, m)?)?;
    m.add("RECORD_KIND", record::RECORD_KIND)?;
    m.add("RECORD_VERSION", record::RECORD_VERSION)?;
    Ok(())
}
