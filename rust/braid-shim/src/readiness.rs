//! A DEL waits for the cluster default network, as the engine does (NPWG spec section 6.1.2,
//! `braid_wire::readiness`): with `readinessindicatorfile` set, the shim neither asks the
//! daemon nor replays the record before the file exists, and answers code 11 having torn
//! nothing down when it does not appear in time.

use std::path::Path;
use std::time::{Duration, Instant};

use braid_cni::CniError;
use braid_wire::readiness::not_ready;

/// Returns once `path` exists (at once when `path` is empty), looking every `poll`; code 11
/// when it still does not after `bound`.
pub fn wait_ready(path: &str, bound: Duration, poll: Duration) -> Result<(), CniError> {
    if path.is_empty() {
        return Ok(());
    }
    let file = Path::new(path);
    let start = Instant::now();
    while !file.exists() {
        let left = bound.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Err(not_ready(path, bound, "detaching"));
        }
        std::thread::sleep(poll.min(left));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_cni::codes;

    const BOUND: Duration = Duration::from_millis(300);
    const POLL: Duration = Duration::from_millis(20);

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("braid-ready-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn no_file_set_means_no_wait() {
        let start = Instant::now();
        wait_ready("", Duration::from_secs(60), POLL).unwrap();
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_file_that_never_appears_is_code_11_after_the_bound() {
        let dir = scratch("never");
        let path = dir.join("ready");
        let start = Instant::now();
        let err = wait_ready(path.to_str().unwrap(), BOUND, POLL).unwrap_err();
        let took = start.elapsed();
        assert_eq!(err.code, codes::TRY_AGAIN_LATER);
        assert!(err.msg.contains(path.to_str().unwrap()), "{}", err.msg);
        assert!(err.details.contains("waited 0.3 s"), "{}", err.details);
        assert!(err.details.contains("detaching"), "{}", err.details);
        assert!(took >= BOUND, "gave up after {took:?}");
        assert!(took < BOUND + Duration::from_secs(2), "took {took:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_that_appears_ends_the_wait() {
        let dir = scratch("appears");
        let path = dir.join("ready");
        let later = path.clone();
        let maker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::write(later, b"").unwrap();
        });
        let start = Instant::now();
        wait_ready(path.to_str().unwrap(), Duration::from_secs(30), POLL).unwrap();
        let took = start.elapsed();
        maker.join().unwrap();
        assert!(
            took >= Duration::from_millis(100),
            "returned after {took:?}"
        );
        assert!(took < Duration::from_secs(5), "took {took:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_existing_file_is_no_wait() {
        let dir = scratch("exists");
        let path = dir.join("ready");
        std::fs::write(&path, b"").unwrap();
        let start = Instant::now();
        wait_ready(path.to_str().unwrap(), Duration::from_secs(60), POLL).unwrap();
        assert!(start.elapsed() < Duration::from_secs(1));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
