//! The durable plan (`docs/attachment-record.md`): the record written over a spare file and
//! `fdatasync`ed, then renamed to the record's name; without a spare, a temporary file renamed
//! over the record and fsynced through the same descriptor. `write_durable` does it on the
//! calling thread with the GIL released; `start_durable_write` hands it to one of braid's
//! helper threads (`helpers`), so an ADD prepares its delegates while the disk flushes. A
//! failure is the `OSError` of the step that failed.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::Path;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::exec::os_error;
use crate::helpers::Pending;

fn rename_into(from: &str, target: &str) -> io::Result<()> {
    match fs::rename(from, target) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = Path::new(target).parent() {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(parent)?;
            }
            fs::rename(from, target)
        }
        other => other,
    }
}

fn over_spare(spare: &str, data: &[u8], target: &str) -> io::Result<()> {
    let written = (|| {
        let file = OpenOptions::new().write(true).open(spare)?;
        file.write_all_at(data, 0)?;
        file.sync_data()?;
        drop(file);
        rename_into(spare, target)
    })();
    if written.is_err() {
        let _ = fs::remove_file(spare); // a spare that failed is never used again
    }
    written
}

/// Writes `data` to the new file `tmp`, renames it to `target`, then fsyncs it. `tmp` is
/// created here or not at all (`O_CREAT|O_EXCL`, which never follows a symbolic link in its
/// place, POSIX `open`), 0600, and is removed again when anything before the rename fails (a
/// full disk), so no failure leaves it behind.
fn through_new_file(tmp: &str, data: &[u8], target: &str) -> io::Result<()> {
    let open = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(tmp)
    };
    let mut file = match open() {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = Path::new(tmp).parent() {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(parent)?;
            }
            open()?
        }
        other => other?,
    };
    let renamed = file.write_all(data).and_then(|()| fs::rename(tmp, target));
    if renamed.is_err() {
        let _ = fs::remove_file(tmp); // the error reported is the write's or the rename's
    }
    renamed?;
    file.sync_all()
}

/// Where a durable write goes: over a spare (then `fdatasync`), or through a new temporary
/// file (then `fsync`).
enum Route {
    Spare(String),
    Fresh(String),
}

impl Route {
    /// Exactly one of `spare` and `tmp`.
    fn of(spare: Option<&str>, tmp: Option<&str>) -> PyResult<Self> {
        match (spare, tmp) {
            (Some(spare), None) => Ok(Self::Spare(spare.to_owned())),
            (None, Some(tmp)) => Ok(Self::Fresh(tmp.to_owned())),
            _ => Err(PyRuntimeError::new_err(
                "a durable write takes exactly one of spare and tmp",
            )),
        }
    }

    fn write(&self, data: &[u8], target: &str) -> io::Result<()> {
        match self {
            Self::Spare(spare) => over_spare(spare, data, target),
            Self::Fresh(tmp) => through_new_file(tmp, data, target),
        }
    }
}

/// Writes `data` durably to `target` on the calling thread, the GIL released: over `spare`
/// when given (then `fdatasync`), else through the temporary file `tmp` (then `fsync`).
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
    let route = Route::of(spare, tmp)?;
    py.detach(|| route.write(data, target))
        .map_err(|err| os_error(&err))
}

/// A durable write under way on one of braid's helper threads (`start_durable_write`).
#[pyclass(module = "braid._native")]
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
    let route = Route::of(spare, tmp)?;
    let (data, target) = (data.to_vec(), target.to_owned());
    let pending = Pending::start(move || route.write(&data, &target))
        .ok_or_else(|| PyRuntimeError::new_err("braid's helper threads are gone"))?;
    Ok(DurableWrite { pending })
}

/// Adds this module's functions to `_native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(write_durable, m)?)?;
    m.add_function(wrap_pyfunction!(start_durable_write, m)?)?;
    m.add_class::<DurableWrite>()?;
    Ok(())
}
