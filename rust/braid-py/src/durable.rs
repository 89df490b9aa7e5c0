//! The durable write of an attachment record (`braid_delegate::durable`) for the engine:
//! `write_durable` does it on the calling thread with the GIL released; `start_durable_write`
//! hands it to one of braid's helper threads (`helpers`), so an ADD prepares its delegates
//! while the disk flushes. A failure is the `OSError` of the step that failed.

use std::io;

use braid_delegate::durable::Route;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::exec::os_error;
use crate::helpers::Pending;

/// Exactly one of `spare` and `tmp`: the route of a durable write.
fn route(spare: Option<&str>, tmp: Option<&str>) -> PyResult<Route> {
    match (spare, tmp) {
        (Some(spare), None) => Ok(Route::Spare(spare.to_owned())),
        (None, Some(tmp)) => Ok(Route::Fresh(tmp.to_owned())),
        _ => Err(PyRuntimeError::new_err(
            "a durable write takes exactly one of spare and tmp",
        )),
    }
}

/// Writes `data` durably to `target` on the calling thread, the GIL released: over `spare`
/// when given (then `fdatasync`), else through the temporary file `tmp` (then `fsync` of the
/// file and of its directory).
/// Raises the `OSError` of the step that failed.
#[pyfunction]
#[pyo3(signature = (*, data, target, spare=None, tmp=None))]
fn write_durable(
    py: Python<'_>,
    data: &[u8],
    target: &str,
    spare: Option<&str>,
    tmp: Option<&str>,
) -> PyResult<()> {
    let route = route(spare, tmp)?;
    py.detach(|| route.write(data, target))
        .map_err(|err| os_error(&err))
}

/// A durable write under way on one of braid's helper threads (`start_durable_write`).
#[pyclass(module = "braid._native.delegate")]
#[derive(Debug)]
pub struct DurableWrite {
    pending: Pending<io::Result<()>>,
}

#[pymethods]
impl DurableWrite {
    /// Waits (the GIL released) for the write to end; raises its `OSError` if it failed.
    /// Every call gives the same outcome.
    fn wait(&self, py: Python<'_>) -> PyResult<()> {
        let outcome = py.detach(|| match self.pending.wait().as_deref() {
            Some(Some(Ok(()))) => Ok(()),
            Some(Some(Err(err))) => Err(io::Error::new(err.kind(), err.to_string())),
            _ => Err(io::Error::other(
                "the helper thread writing the record failed",
            )),
        });
        outcome.map_err(|err| os_error(&err))
    }
}

/// `write_durable` on one of braid's helper threads (`helpers`): returns at once with the
/// write under way; `DurableWrite.wait` gives its outcome.
#[pyfunction]
#[pyo3(signature = (*, data, target, spare=None, tmp=None))]
fn start_durable_write(
    data: &[u8],
    target: &str,
    spare: Option<&str>,
    tmp: Option<&str>,
) -> PyResult<DurableWrite> {
    let route = route(spare, tmp)?;
    let (data, target) = (data.to_vec(), target.to_owned());
    let pending = Pending::start(move || route.write(&data, &target))
        .ok_or_else(|| PyRuntimeError::new_err("braid's helper threads are gone"))?;
    Ok(DurableWrite { pending })
}

/// Adds this module's names to its submodule of `braid._native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(write_durable, m)?)?;
    m.add_function(wrap_pyfunction!(start_durable_write, m)?)?;
    m.add_class::<DurableWrite>()?;
    Ok(())
}
