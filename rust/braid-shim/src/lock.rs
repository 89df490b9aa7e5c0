//! The engine's per-container lock, taken by the shim while it replays a record, so a daemon
//! (re)starting in the middle cannot run the same container at the same time.
//!
//! Same files and protocol as `python/braid/cni/locks.py` under `<cniDir>/engine`: `gc.lock`
//! held shared and `stripe-NN.lock` held exclusively, NN being FNV-1a 64 of the container id
//! modulo 64 (golden names in `tests/fixtures/locks/stripes.json`). `flock(2)` through std.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

const STRIPES: u64 = 64;
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// The stripe file name guarding `container_id` (never the id itself).
pub fn stripe_name(container_id: &str) -> String {
    let hash = container_id.bytes().fold(FNV_OFFSET, |acc, byte| {
        (acc ^ u64::from(byte)).wrapping_mul(FNV_PRIME)
    });
    format!("stripe-{:02}.lock", hash % STRIPES)
}

/// Both locks, released when dropped (closing the files releases `flock`).
#[derive(Debug)]
pub struct Held {
    _gc: File,
    _stripe: File,
}

fn open(dir: &Path, name: &str) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(dir.join(name))
}

/// Waits for and takes the container's lock under `<cni_dir>/engine/locks`.
pub fn container(cni_dir: &Path, container_id: &str) -> io::Result<Held> {
    let dir = cni_dir.join("engine").join("locks");
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    let gc = open(&dir, "gc.lock")?;
    gc.lock_shared()?;
    let stripe = open(&dir, &stripe_name(container_id))?;
    stripe.lock()?;
    Ok(Held {
        _gc: gc,
        _stripe: stripe,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripe_names_match_the_python_engine() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/locks/stripes.json"
        );
        let golden: serde_json::Value =
            serde_json::from_slice(&fs::read(path).expect("golden stripes")).expect("json");
        let names = golden["names"].as_object().expect("names");
        assert!(!names.is_empty());
        for (id, name) in names {
            assert_eq!(
                stripe_name(id),
                name.as_str().expect("name"),
                "container id {id}"
            );
        }
    }

    #[test]
    fn lock_excludes_a_second_holder() {
        let dir = std::env::temp_dir().join(format!("braid-lock-test-{}", std::process::id()));
        let held = container(&dir, "ctr1").expect("lock");
        let stripe = open(&dir.join("engine").join("locks"), &stripe_name("ctr1")).expect("open");
        assert!(stripe.try_lock().is_err(), "the stripe must be held");
        drop(held);
        assert!(stripe.try_lock().is_ok(), "released on drop");
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
