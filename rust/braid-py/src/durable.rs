//! The durable plan (`start_durable_write`, `docs/attachment-record.md`): the record written
//! over a spare file and `fdatasync`ed, then renamed to the record's name; without a spare, a
//! temporary file renamed over the record and fsynced through the same descriptor. It runs on
//! one of a few long-lived writer threads while the engine goes on (it starts the first
//! delegate meanwhile); a new thread per write cost as much as the flush it overlapped. A
//! failure is the `OSError` of the step that failed.

use std::collections::VecDeque;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;

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

/// Where a record goes: over a spare, or through a new temporary file.
#[derive(Debug)]
enum Route {
    Spare(String),
    Fresh(String),
}

/// One durable write handed to the writers, and where its outcome goes.
#[derive(Debug)]
struct Job {
    data: Vec<u8>,
    target: String,
    route: Route,
    done: Arc<Outcome>,
}

/// A write's outcome, set once by its writer.
#[derive(Debug, Default)]
struct Outcome {
    result: Mutex<Option<io::Result<()>>>,
    ready: Condvar,
}

/// The writer threads: started on demand (one more whenever a job finds none idle), then kept
/// for the life of the process, waiting for the next job. A thread's start costs about 0.1 ms
/// on a 2-vCPU VM, as much as the flush it would overlap; waking one that waits costs a
/// fraction of that.
#[derive(Debug, Default)]
struct Writers {
    queue: Mutex<VecDeque<Job>>,
    wake: Condvar,
    idle: AtomicUsize,
}

static WRITERS: OnceLock<Arc<Writers>> = OnceLock::new();

impl Writers {
    fn submit(self: &Arc<Self>, job: Job) -> io::Result<()> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.push_back(job);
        if self.idle.load(Ordering::SeqCst) >= queue.len() {
            drop(queue);
            self.wake.notify_one();
            return Ok(());
        }
        drop(queue);
        let writers = Arc::clone(self);
        std::thread::Builder::new()
            .name("braid-record".to_owned())
            .spawn(move || writers.work())
            .map(|_| ())
    }

    fn work(&self) {
        loop {
            let job = {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    if let Some(job) = queue.pop_front() {
                        break job;
                    }
                    self.idle.fetch_add(1, Ordering::SeqCst);
                    queue = self
                        .wake
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                    self.idle.fetch_sub(1, Ordering::SeqCst);
                }
            };
            let result = match &job.route {
                Route::Spare(spare) => over_spare(spare, &job.data, &job.target),
                Route::Fresh(tmp) => through_new_file(tmp, &job.data, &job.target),
            };
            let mut slot = job
                .done
                .result
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *slot = Some(result);
            drop(slot);
            job.done.ready.notify_all();
        }
    }
}

/// A durable record write under way (`start_durable_write`).
#[pyclass(module = "braid._native")]
#[derive(Debug)]
pub struct PendingWrite {
    done: Arc<Outcome>,
    failure: Option<(i32, String)>,
    finished: bool,
}

#[pymethods]
impl PendingWrite {
    /// Waits (the GIL released) for the write; raises its `OSError` (again at every call) when
    /// it failed.
    fn wait(&mut self, py: Python<'_>) -> PyResult<()> {
        if !self.finished {
            let done = Arc::clone(&self.done);
            let result = py.detach(move || {
                let mut slot = done.result.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    if let Some(result) = slot.take() {
                        return result;
                    }
                    slot = done
                        .ready
                        .wait(slot)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            });
            self.finished = true;
            self.failure = result
                .err()
                .map(|err| (err.raw_os_error().unwrap_or(0), err.to_string()));
        }
        match &self.failure {
            None => Ok(()),
            Some((0, msg)) => Err(PyOSError::new_err(msg.clone())),
            Some((errno, msg)) => Err(PyOSError::new_err((*errno, msg.clone()))),
        }
    }
}

/// Starts writing `data` durably to `target` on one of the writer threads: over `spare` when
/// given (then `fdatasync`), else through the temporary file `tmp` (then `fsync`). The caller
/// goes on meanwhile and calls `wait()` on the result before anything may depend on it.
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
    let done = Arc::new(Outcome::default());
    let job = Job {
        data,
        target,
        route,
        done: Arc::clone(&done),
    };
    WRITERS
        .get_or_init(Arc::default)
        .submit(job)
        .map_err(PyErr::from)?;
    Ok(PendingWrite {
        done,
        failure: None,
        finished: false,
    })
}

/// Adds this module's functions to `_native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PendingWrite>()?;
    m.add_function(wrap_pyfunction!(start_durable_write, m)?)?;
    Ok(())
}
