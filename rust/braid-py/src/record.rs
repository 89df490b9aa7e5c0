//! The attachment record's decoder (`braid_cni::record`) for the engine: a record is given
//! back as JSON in one shape, which the engine decodes with its one record type.

use braid_cni::record::{self, capabilities};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// What `decode_record` answers: the record as JSON, or the damage.
type Decoded = (Option<Py<PyBytes>>, Option<Damage>);
/// `(code, msg, details, salvaged entries as a JSON array, complete)`.
type Damage = (u32, String, String, Py<PyBytes>, bool);

/// Decodes the record of `container_id` (`braid_cni::record::canonical`, the decoder the
/// shim's DEL replay uses): `(record, None)`, the record as JSON in one shape whatever its
/// format (every member kept; the runtime's capability arguments at the top, each entry's own
/// in it), or `(None, (code, msg, details, salvaged, complete))` for a damaged one, its
/// salvaged entries a JSON array, each with its capability arguments whole (they go into
/// another record). `braid.engine.record` decodes both with its record type.
#[pyfunction]
#[pyo3(signature = (*, data, container_id))]
fn decode_record(py: Python<'_>, data: &[u8], container_id: &str) -> Decoded {
    match py.detach(|| record::canonical(data, container_id)) {
        Ok(canonical) => (Some(PyBytes::new(py, &canonical).unbind()), None),
        Err((damaged, salvaged)) => {
            let error = damaged.error;
            let damage = (
                error.code,
                error.msg,
                error.details,
                PyBytes::new(py, &salvaged).unbind(),
                damaged.complete,
            );
            (None, Some(damage))
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

/// Adds this module's names to its submodule of `braid._native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decode_record, m)?)?;
    m.add_function(wrap_pyfunction!(record_container, m)?)?;
    m.add_function(wrap_pyfunction!(merge_capability_args, m)?)?;
    m.add_function(wrap_pyfunction!(split_capability_args, m)?)?;
    m.add("RECORD_KIND", record::RECORD_KIND)?;
    m.add("RECORD_VERSION", record::RECORD_VERSION)?;
    Ok(())
}
