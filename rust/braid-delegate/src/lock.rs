//! The per-container lock (CNI spec, "Lifecycle & Ordering": one operation at a time per
//! container), as files under a lock directory: `gc.lock` held shared (a GC holds it
//! exclusively) and the container's own file `ctr-<FNV-1a 64 of the id, hex>.lock` held
//! exclusively, so that no lock file names a container (golden names in
//! `tests/fixtures/locks/names.json`, which `braid.cni.locks` reads too) and two containers
//! never wait for each other. A container's file exists only while its lock is held: the
//! holder removes it before releasing, and whoever opened it meanwhile finds, once it has the
//! lock, that the name no longer leads to its file and opens the name again. The runtime takes
//! the locks under `<cache dir>/locks`, braid's engine and the shim's DEL replay under
//! `<cniDir>/engine/locks`; both through this module (`braid.cni.locks` through
//! `braid._native`). `flock(2)` through std, one open file description per taking, so threads
//! of one process exclude each other too. Directories made here are 0700, lock files 0600, and
//! a lock file that is a symbolic link is refused. The wait is the caller's: until the lock is
//! free, or up to a bound (a process stopped or frozen while holding a lock never holds the
//! shim).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

/// The pause between two attempts to take a lock another process holds, when the wait is
/// bounded.
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// The lock a GC holds exclusively and every other verb shared.
pub const GC_LOCK_NAME: &str = "gc.lock";
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// The name of the lock file guarding `container_id` (a hash of the id, never the id itself).
pub fn container_lock_name(container_id: &str) -> String {
    let hash = container_id.bytes().fold(FNV_OFFSET, |acc, byte| {
        (acc ^ u64::from(byte)).wrapping_mul(FNV_PRIME)
    });
    format!("ctr-{hash:016x}.lock")
}

/// The locks taken, released when dropped (closing the files releases `flock`); the
/// container's file is removed first, while still held.
#[derive(Debug)]
pub struct Held {
    _gc: File,
    container: Option<(File, PathBuf)>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some((file, path)) = self.container.take() {
            // Best effort: a file left (a failed removal) is taken and removed by the next
            // holder of the same container.
            let _ = fs::remove_file(&path);
            drop(file);
        }
    }
}

/// Opens (or creates) the lock file `name` under `dir`, making `dir` and its missing parents
/// (0700) only when the file cannot be opened for their lack.
fn open(dir: &Path, name: &str) -> io::Result<File> {
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            // A lock file that is a symbolic link is refused: the lock directory is root's,
            // and a link there points somewhere it should not.
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(dir.join(name))
    };
    match open() {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            open()
        }
        opened => opened,
    }
}

/// Takes the container's lock under the lock directory `dir` for an ADD, DEL or CHECK: the GC
/// lock shared, then the container's file exclusively. `wait`: `None` waits until they are
/// free, `Some` up to that long in all (then `TimedOut`).
pub fn container(dir: &Path, container_id: &str, wait: Option<Duration>) -> io::Result<Held> {
    let deadline = wait.and_then(|wait| Instant::now().checked_add(wait));
    let gc = open(dir, GC_LOCK_NAME)?;
    take(&gc, Kind::Shared, deadline)?;
    let name = container_lock_name(container_id);
    let path = dir.join(&name);
    loop {
        let file = open(dir, &name)?;
        take(&file, Kind::Exclusive, deadline)?;
        if still_named(&file, &path)? {
            return Ok(Held {
                _gc: gc,
                container: Some((file, path)),
            });
        }
        // Its previous holder removed it after it was opened here: the lock is the file the
        // name leads to now.
    }
}

/// Whether `path` still leads to the open `file` (not removed, not replaced).
fn still_named(file: &File, path: &Path) -> io::Result<bool> {
    let held = file.metadata()?;
    match fs::symlink_metadata(path) {
        Ok(now) => Ok(now.dev() == held.dev() && now.ino() == held.ino()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err),
    }
}

/// Takes the GC lock under `dir` exclusively: it waits for every ADD, DEL and CHECK under way
/// and holds off new ones until dropped. `wait` as for [`container`].
pub fn gc(dir: &Path, wait: Option<Duration>) -> io::Result<Held> {
    let deadline = wait.and_then(|wait| Instant::now().checked_add(wait));
    let gc = open(dir, GC_LOCK_NAME)?;
    take(&gc, Kind::Exclusive, deadline)?;
    Ok(Held {
        _gc: gc,
        container: None,
    })
}

#[derive(Clone, Copy)]
enum Kind {
    Shared,
    Exclusive,
}

/// Takes a lock: retrying while another process holds it until `deadline`, or blocking in
/// `flock(2)` without one (no wait bound, or one too far to reckon).
fn take(file: &File, kind: Kind, deadline: Option<Instant>) -> io::Result<()> {
    let Some(deadline) = deadline else {
        loop {
            let taken = match kind {
                Kind::Shared => file.lock_shared(),
                Kind::Exclusive => file.lock(),
            };
            // A signal handled meanwhile (the Python runtime has some) is not a failure.
            match taken {
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                done => return done,
            }
        }
    };
    loop {
        let attempt = match kind {
            Kind::Shared => file.try_lock_shared(),
            Kind::Exclusive => file.try_lock(),
        };
        match attempt {
            Ok(()) => return Ok(()),
            Err(TryLockError::Error(err)) => return Err(err),
            Err(TryLockError::WouldBlock) => {}
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        thread::sleep(left.min(RETRY_PAUSE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn lock_names_match_the_golden_names() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/locks/names.json"
        );
        let golden: serde_json::Value =
            serde_json::from_slice(&fs::read(path).expect("golden names")).expect("json");
        let names = golden["names"].as_object().expect("names");
        assert!(!names.is_empty());
        for (id, name) in names {
            assert_eq!(
                container_lock_name(id),
                name.as_str().expect("name"),
                "container id {id}"
            );
        }
    }

    #[test]
    fn a_lock_file_that_is_a_link_is_refused() {
        let dir = std::env::temp_dir().join(format!("braid-lock-link-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        std::os::unix::fs::symlink(dir.join("elsewhere"), dir.join(GC_LOCK_NAME)).expect("link");
        assert!(container(&dir, "ctr1", Some(Duration::ZERO)).is_err());
        assert!(
            !dir.join("elsewhere").exists(),
            "nothing made through the link"
        );
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn lock_excludes_a_second_holder() {
        let dir = std::env::temp_dir().join(format!("braid-lock-test-{}", std::process::id()));
        let held = container(&dir, "ctr1", Some(Duration::ZERO)).expect("lock");
        let path = dir.join(container_lock_name("ctr1"));
        let file = open(&dir, &container_lock_name("ctr1")).expect("open");
        assert!(
            file.try_lock().is_err(),
            "the container's file must be held"
        );
        drop(held);
        assert!(!path.exists(), "removed on release");
        assert!(file.try_lock().is_ok(), "released on drop");
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_lock_held_elsewhere_is_waited_for_up_to_the_bound() {
        let dir = std::env::temp_dir().join(format!("braid-lock-wait-{}", std::process::id()));
        let held = container(&dir, "ctr1", Some(Duration::ZERO)).expect("lock");
        let start = Instant::now();
        let err = container(&dir, "ctr1", Some(Duration::from_millis(300))).unwrap_err();
        let waited = start.elapsed();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < Duration::from_secs(3), "{waited:?}");
        // Released meanwhile: taken as soon as it is free.
        let releaser = thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        assert!(container(&dir, "ctr1", None).is_ok());
        releaser.join().expect("releaser");
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn gc_excludes_every_container_and_is_excluded_by_one() {
        let dir = std::env::temp_dir().join(format!("braid-lock-gc-{}", std::process::id()));
        let held = container(&dir, "ctr1", None).expect("lock");
        let short = Some(Duration::from_millis(50));
        assert_eq!(gc(&dir, short).unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert!(
            container(&dir, "other", short).is_ok(),
            "another container is free"
        );
        drop(held);
        let collecting = gc(&dir, short).expect("gc");
        let err = container(&dir, "other", short).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(collecting);
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn containers_never_wait_for_each_other() {
        let dir = std::env::temp_dir().join(format!("braid-lock-many-{}", std::process::id()));
        let held: Vec<Held> = (0..500)
            .map(|i| container(&dir, &format!("container-{i}"), Some(Duration::ZERO)))
            .collect::<io::Result<_>>()
            .expect("every container's lock at once");
        drop(held);
        let left: Vec<_> = fs::read_dir(&dir)
            .expect("dir")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(left, [GC_LOCK_NAME], "only the GC lock stays");
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn removal_on_release_never_lets_two_holders_in() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::Arc;
        let dir = std::env::temp_dir().join(format!("braid-lock-race-{}", std::process::id()));
        let inside = Arc::new(AtomicBool::new(false));
        let turns = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (dir, inside, turns) = (dir.clone(), inside.clone(), turns.clone());
                thread::spawn(move || {
                    for _ in 0..300 {
                        let held = container(&dir, "ctr1", None).expect("lock");
                        assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                        turns.fetch_add(1, Ordering::SeqCst);
                        inside.store(false, Ordering::SeqCst);
                        drop(held);
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("worker");
        }
        assert_eq!(turns.load(Ordering::SeqCst), 1200);
        assert!(!dir.join(container_lock_name("ctr1")).exists());
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_file_left_behind_is_taken_and_removed() {
        let dir = std::env::temp_dir().join(format!("braid-lock-left-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        let path = dir.join(container_lock_name("ctr1"));
        fs::write(&path, b"").expect("left file");
        drop(container(&dir, "ctr1", Some(Duration::ZERO)).expect("lock"));
        assert!(!path.exists());
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_missing_lock_directory_is_made_private() {
        let top = std::env::temp_dir().join(format!("braid-lock-mkdir-{}", std::process::id()));
        let dir = top.join("a").join("locks");
        drop(container(&dir, "ctr1", None).expect("lock"));
        for made in [top.join("a"), dir.clone()] {
            let mode = fs::metadata(&made).expect("made").permissions().mode() & 0o777;
            assert_eq!(mode & 0o077, 0, "{} is {mode:o}", made.display());
        }
        fs::remove_dir_all(&top).expect("cleanup");
    }
}
