//! braid's helper threads: a few native threads, started on first use and kept, that run work
//! the engine's thread hands over so that it can go on meanwhile (the plan's durable write, a
//! plugin started early). They never touch Python: no GIL to wait for on either side, so the
//! work starts as soon as a CPU is free.

use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// How many jobs may run at once (one per helper thread); more wait their turn.
const HELPERS: usize = 4;

fn queue() -> &'static Mutex<mpsc::Sender<Job>> {
    static SENDER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    SENDER.get_or_init(|| {
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        for index in 0..HELPERS {
            let receiver = Arc::clone(&receiver);
            let _ = thread::Builder::new()
                .name(format!("braid-helper-{index}"))
                .spawn(move || loop {
                    let next = receiver.lock().map(|rx| rx.recv());
                    let Ok(Ok(job)) = next else { return };
                    job();
                });
        }
        Mutex::new(sender)
    })
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
            if let Ok(mut slot) = filled.value.lock() {
                *slot = value;
            }
            if let Ok(mut done) = filled.done.lock() {
                *done = true;
            }
            filled.ready.notify_all();
        });
        queue().lock().ok()?.send(job).ok()?;
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
    use super::Pending;

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
}
