//! The durable plan (`write_durable`, `docs/attachment-record.md`): the record written over a
//! spare file and `fdatasync`ed, then renamed to the record's name; without a spare, a
//! temporary file renamed over the record and fsynced through the same descriptor. It runs on
//! the calling thread with the GIL released: handing it to a thread of its own cost more here
//! (the new thread's start and the caller's wake-up after it, about 0.1 ms each on a 2-vCPU
//! VM) than the flush it overlapped (0.1 ms). A failure is the `OSError` of the step that
//! failed.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};
use std::thread;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::exec::os_error;

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
    let written = match (spare, tmp) {
        (Some(spare), None) => py.detach(|| over_spare(spare, data, target)),
        (None, Some(tmp)) => py.detach(|| through_new_file(tmp, data, target)),
        _ => {
            return Err(PyRuntimeError::new_err(
                "write_durable takes exactly one of spare and tmp",
            ))
        }
    };
    written.map_err(|err| os_error(&err))
}

/// One write handed to the writer threads, and where its outcome goes.
struct Job {
    data: Vec<u8>,
    target: String,
    spare: Option<String>,
    tmp: Option<String>,
    outcome: Arc<Outcome>,
}

#[derive(Debug, Default)]
struct Outcome {
    result: Mutex<Option<io::Result<()>>>,
    ready: Condvar,
}

/// How many writes may be in flight at once (one per writer thread).
const WRITERS: usize = 4;

fn writers() -> &'static Mutex<mpsc::Sender<Job>> {
    static SENDER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    SENDER.get_or_init(|| {
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        for index in 0..WRITERS {
            let receiver = Arc::clone(&receiver);
            let _ = thread::Builder::new()
                .name(format!("braid-durable-{index}"))
                .spawn(move || loop {
                    let next = receiver.lock().map(|rx| rx.recv());
                    let Ok(Ok(job)) = next else { return };
                    let written = match (&job.spare, &job.tmp) {
                        (Some(spare), _) => over_spare(spare, &job.data, &job.target),
                        (None, Some(tmp)) => through_new_file(tmp, &job.data, &job.target),
                        (None, None) => Err(io::Error::other("nowhere to write")),
                    };
                    if let Ok(mut slot) = job.outcome.result.lock() {
                        *slot = Some(written);
                    }
                    job.outcome.ready.notify_all();
                });
        }
        Mutex::new(sender)
    })
}

/// A durable write under way on one of braid's writer threads (`start_durable_write`).
#[pyclass(module = "braid._native")]
#[derive(Debug)]
pub struct DurableWrite {
    outcome: Arc<Outcome>,
}

#[pymethods]
impl DurableWrite {
    /// Waits (the GIL released) for the write to end; raises its `OSError` if it failed.
    /// Every call after the first gives the same outcome.
    fn wait(&self, py: Python<'_>) -> PyResult<()> {
        let outcome = Arc::clone(&self.outcome);
        let result = py.detach(move || {
            let mut slot = outcome
                .result
                .lock()
                .map_err(|_| io::Error::other("a writer thread panicked"))?;
            while slot.is_none() {
                slot = outcome
                    .ready
                    .wait(slot)
                    .map_err(|_| io::Error::other("a writer thread panicked"))?;
            }
            match slot.as_ref() {
                Some(Ok(())) => Ok(()),
                Some(Err(err)) => Err(io::Error::new(err.kind(), err.to_string())),
                None => Err(io::Error::other("no outcome")),
            }
        });
        result.map_err(|err| os_error(&err))
    }
}

/// `write_durable` on one of braid's writer threads (started once, kept): returns at once
/// with the write under way; `DurableWrite.wait` gives its outcome.
#[pyfunction]
#[pyo3(signature = (*, data, target, spare=None, tmp=None))]
fn start_durable_write(
    data: &[u8],
    target: &str,
    spare: Option<&str>,
    tmp: Option<&str>,
) -> PyResult<DurableWrite> {
    if spare.is_some() == tmp.is_some() {
        return Err(PyRuntimeError::new_err(
            "start_durable_write takes exactly one of spare and tmp",
        ));
    }
    let outcome = Arc::new(Outcome::default());
    let job = Job {
        data: data.to_vec(),
        target: target.to_owned(),
        spare: spare.map(str::to_owned),
        tmp: tmp.map(str::to_owned),
        outcome: Arc::clone(&outcome),
    };
    let sent = writers()
        .lock()
        .map_err(|_| PyRuntimeError::new_err("the writer threads are gone"))?
        .send(job);
    sent.map_err(|_| PyRuntimeError::new_err("the writer threads are gone"))?;
    Ok(DurableWrite { outcome })
}

/// Adds this module's functions to `_native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(write_durable, m)?)?;
    m.add_function(wrap_pyfunction!(start_durable_write, m)?)?;
    m.add_class::<DurableWrite>()?;
    Ok(())
}
