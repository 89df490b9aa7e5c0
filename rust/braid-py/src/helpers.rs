//! braid's helper threads: a few native threads, started as jobs need them and kept, that run
//! work the engine's thread hands over so that it can go on meanwhile (the plan's durable write,
//! a plugin started early). They never touch Python: no GIL to wait for on either side, so the
//! work starts as soon as a CPU is free. A helper is started only when a job finds none idle,
//! so a process that makes one call (`braid-thin`) starts only those its jobs run on.

use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread;

/// A job's work; what it returns tells its waiter, once the helper counts itself idle again
/// (so a waiter that hands over its next job at once finds that helper free).
type Job = Box<dyn FnOnce() -> Done + Send + 'static>;
type Done = Box<dyn FnOnce() + Send + 'static>;

/// How many jobs may run at once (one per helper thread); more wait their turn.
const HELPERS: usize = 4;

/// The helpers and the jobs handed to them.
struct Pool {
    sender: mpsc::Sender<Job>,
    receiver: Mutex<mpsc::Receiver<Job>>,
    counts: Mutex<Counts>,
}

/// Helpers started, helpers waiting for a job, jobs handed over and not taken yet.
#[derive(Default)]
struct Counts {
    started: usize,
    idle: usize,
    queued: usize,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let (sender, receiver) = mpsc::channel::<Job>();
        Pool {
            sender,
            receiver: Mutex::new(receiver),
            counts: Mutex::new(Counts::default()),
        }
    })
}

/// Hands `job` over, starting a helper for it when the jobs waiting outnumber the helpers idle
/// (at most `HELPERS` in all); `None` when it cannot be handed over.
fn hand_over(job: Job) -> Option<()> {
    let pool = pool();
    {
        let mut counts = pool.counts.lock().ok()?;
        counts.queued += 1;
        if counts.queued > counts.idle && counts.started < HELPERS {
            let index = counts.started;
            let spawned = thread::Builder::new()
                .name(format!("braid-helper-{index}"))
                .spawn(helper);
            if spawned.is_ok() {
                counts.started += 1;
            } else if counts.started == 0 {
                counts.queued -= 1; // no helper would ever take it
                return None;
            }
        }
    }
    pool.sender.send(job).ok()
}

/// A helper's life (`serve`), over once the pool's lock is poisoned or its sender gone.
fn helper() {
    let _ = serve(pool());
}

/// The next job, its work, idle again, its waiter told; again.
fn serve(pool: &Pool) -> Option<()> {
    change(|counts| counts.idle += 1)?;
    loop {
        let job = pool.receiver.lock().ok()?.recv().ok();
        change(|counts| {
            counts.idle -= 1;
            if job.is_some() {
                counts.queued -= 1;
            }
        })?;
        let done = job?();
        let idle = change(|counts| counts.idle += 1);
        done(); // told even when the count failed: no waiter is left hanging
        idle?;
    }
}

fn change(how: impl FnOnce(&mut Counts)) -> Option<()> {
    how(&mut *pool().counts.lock().ok()?);
    Some(())
}

/// A value being made on a helper thread.
#[derive(Debug)]
pub struct Pending<T> {
    slot: Arc<Slot<T>>,
}

#[derive(Debug)]
struct Slot<T> {
    value: Mutex<Option<T>>,
    ready: Condvar,
    done: Mutex<bool>,
}

impl<T: Send + 'static> Pending<T> {
    /// Hands `make` to a helper thread; `None` when the helpers are gone (a panic in one).
    pub fn start(make: impl FnOnce() -> T + Send + 'static) -> Option<Self> {
        let slot = Arc::new(Slot {
            value: Mutex::new(None),
            ready: Condvar::new(),
            done: Mutex::new(false),
        });
        let filled = Arc::clone(&slot);
        let job: Job = Box::new(move || {
            // A panic leaves the value out (the waiter gets `None`), never a waiter hanging
            // nor a helper gone.
            let value = std::panic::catch_unwind(std::panic::AssertUnwindSafe(make)).ok();
            Box::new(move || {
                if let Ok(mut slot) = filled.value.lock() {
                    *slot = value;
                }
                if let Ok(mut done) = filled.done.lock() {
                    *done = true;
                }
                filled.ready.notify_all();
            })
        });
        hand_over(job)?;
        Some(Self { slot })
    }

    /// Waits until the value is made; then the guard holds it (`None` once taken, or when
    /// making it panicked). `None` when the slot's lock was poisoned.
    pub fn wait(&self) -> Option<MutexGuard<'_, Option<T>>> {
        let mut done = self.slot.done.lock().ok()?;
        while !*done {
            done = self.slot.ready.wait(done).ok()?;
        }
        drop(done);
        self.slot.value.lock().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::{pool, Pending, HELPERS};
    use std::sync::{Arc, Barrier};

    #[test]
    fn a_value_made_on_a_helper_is_waited_for() {
        let pending = Pending::start(|| 6 * 7).unwrap();
        assert_eq!(*pending.wait().unwrap(), Some(42));
    }

    #[test]
    fn a_panic_on_a_helper_is_no_value_and_the_helpers_go_on() {
        let prior = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {})); // the panic is the point: not printed
        let panicked = Pending::<u8>::start(|| panic!("on purpose")).unwrap();
        assert_eq!(*panicked.wait().unwrap(), None);
        std::panic::set_hook(prior);
        let many: Vec<_> = (0..32u32)
            .map(|n| Pending::start(move || n).unwrap())
            .collect();
        for (n, pending) in (0..32u32).zip(&many) {
            assert_eq!(*pending.wait().unwrap(), Some(n));
        }
    }

    #[test]
    fn helpers_start_as_jobs_need_them_and_run_them_at_once() {
        // HELPERS jobs that can only finish together: none waits for another's helper.
        let barrier = Arc::new(Barrier::new(HELPERS));
        let together: Vec<_> = (0..HELPERS)
            .map(|n| {
                let barrier = Arc::clone(&barrier);
                Pending::start(move || {
                    barrier.wait();
                    n
                })
                .unwrap()
            })
            .collect();
        for (n, pending) in together.iter().enumerate() {
            assert_eq!(*pending.wait().unwrap(), Some(n));
        }
        assert_eq!(pool().counts.lock().unwrap().started, HELPERS);
    }
}
