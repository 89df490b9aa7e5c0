//! The durable plan written on a thread of its own (`start_durable_write`), so the engine can
//! prepare the first delegate while the disk flushes (`docs/attachment-record.md`). The
//! thread writes the record over a spare file and `fdatasync`s it, then renames it to the
//! record's name; without a spare it writes a temporary file, renames it over the record and
//! fsyncs it through the same descriptor. The GIL is released while waiting; a failure is the
//! `OSError` of the step that failed.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::Path;
use std::thread::JoinHandle;

use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;

/// Where the record goes: over a spare, or through a new temporary file.
enum Route {
    Spare(String),
    Fresh(String),
}

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

fn through_new_file(tmp: &str, data: &[u8], target: &str) -> io::Result<()> {
    let open = || {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
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
    file.write_all(data)?;
    fs::rename(tmp, target)?;
    file.sync_all()
}

/// A durable record write under way (`start_durable_write`).
#[pyclass(module = "braid._native")]
#[derive(Debug)]
pub struct PendingWrite {
    writing: Option<JoinHandle<io::Result<()>>>,
    outcome: Option<(i32, String)>,
}

#[pymethods]
impl PendingWrite {
    /// Waits for the write; raises its `OSError` (again at every call) when it failed.
    fn wait(&mut self, py: Python<'_>) -> PyResult<()> {
        if let Some(writing) = self.writing.take() {
            self.outcome = match py.detach(|| writing.join()) {
                Ok(Ok(())) => None,
                Ok(Err(err)) => Some((err.raw_os_error().unwrap_or(0), err.to_string())),
                Err(_) => Some((0, "the writing thread panicked".to_owned())),
            };
        }
        match &self.outcome {
            None => Ok(()),
            Some((0, msg)) => Err(PyRuntimeError::new_err(msg.clone())),
            Some((errno, msg)) => Err(PyOSError::new_err((*errno, msg.clone()))),
        }
    }
}

/// Starts writing `data` durably to `target` on another thread: over `spare` when given (then
/// `fdatasync`), else through the temporary file `tmp` (then `fsync`).
#[pyfunction]
#[pyo3(signature = (*, data, target, spare=None, tmp=None))]
fn start_durable_write(
    data: Vec<u8>,
    target: String,
    spare: Option<String>,
    tmp: Option<String>,
) -> PyResult<PendingWrite> {
    let route = match (spare, tmp) {
        (Some(spare), None) => Route::Spare(spare),
        (None, Some(tmp)) => Route::Fresh(tmp),
        _ => {
            return Err(PyRuntimeError::new_err(
                "start_durable_write takes exactly one of spare and tmp",
            ))
        }
    };
    let writing = std::thread::Builder::new()
        .name("braid-record".to_owned())
        .spawn(move || match route {
            Route::Spare(spare) => over_spare(&spare, &data, &target),
            Route::Fresh(tmp) => through_new_file(&tmp, &data, &target),
        })
        .map_err(PyErr::from)?;
    Ok(PendingWrite {
        writing: Some(writing),
        outcome: None,
    })
}

/// Adds this module's functions to `_native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PendingWrite>()?;
    m.add_function(wrap_pyfunction!(start_durable_write, m)?)?;
    Ok(())
}
