//! DEL without the daemon: the container's attachment record (`docs/attachment-record.md`)
//! replayed as the runtime `braid.cni` would run it. The source routing of routed attachments
//! is removed first ([`unroute`]); then every attachment in reverse plan order
//! (`braid_delegate::teardown::order`, the engine's rule too); within one, its plugins in
//! reverse (stopping at the first failure, as libcni does), then on to the next attachment. Success removes the result cache entries, the record and the
//! device-information files braid wrote for the container (`docs/devices.md`); any failure
//! keeps the record and reports every failure in one error.

use std::fs;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use braid_cni::names;
use braid_cni::record;
use braid_cni::wire::CniEnv;
use braid_cni::{codes, CniError};
use braid_delegate::cache;
use braid_delegate::delegates::Delegates;
use braid_delegate::devinfo;
use braid_delegate::lock::{self, Held};
use braid_delegate::spares;
use braid_delegate::teardown::{self, Teardown};
use braid_wire::answer::answer_wait;

use crate::settings::Settings;
use crate::unroute;

/// Tears down what the record of `env.container_id` describes.
pub fn delete(env: &CniEnv, settings: &Settings) -> Result<(), CniError> {
    names::check_container_id("DEL", &env.container_id)?;
    if names::names_no_record(&env.container_id) {
        return Ok(()); // no record can bear this id's name: nothing was ever attached
    }
    let cni_dir = Path::new(&settings.cni_dir);
    let path = cni_dir
        .join("records")
        .join(format!("{}.json", env.container_id));
    // No record: nothing was ever attached (the engine writes it before any delegate).
    let _lock = lock_container(cni_dir, &env.container_id, answer_wait(settings))?;
    // A plan whose rename a power failure lost is still in a spare file, and newer than any
    // record under the container's name (`docs/attachment-record.md`, "Spare files").
    let spare = spares::find(&cni_dir.join("spares"), &env.container_id);
    let data = match &spare {
        Some((_, data)) => data.clone(),
        None => match read_record(&path)? {
            Some(data) => data,
            None => return Ok(()),
        },
    };
    let (entries, damaged) = match record::decode(&data, &env.container_id) {
        Ok(decoded) => (decoded.attachments, None),
        Err(damaged) => (damaged.salvaged.clone(), Some(damaged)),
    };
    let dirs = braid_delegate::lookup::search_dirs(&settings.bin_dir, &env.path);
    let mut teardown = Teardown {
        env,
        cache_dir: cni_dir,
        delegates: Delegates::new(dirs, settings.plugin_timeout).refusing(own_files()),
    };
    let order = teardown::in_order(&entries);
    // The routing goes first, as the daemon does it: rules never outlive a failed DEL.
    let mut failures = unroute::clear(&order, &env.netns);
    let failed: Vec<CniError> = teardown
        .attachments(&order)
        .into_iter()
        .filter_map(Result::err)
        .collect();
    let torn_down = entries.len() - failed.len();
    failures.extend(failed);
    let shown = spare
        .as_ref()
        .map_or(path.as_path(), |(spare, _)| spare.as_path());
    // A damaged record stays unless it was read whole and something was torn down from it.
    if let Some(damaged) = damaged
        .as_ref()
        .filter(|d| !d.complete || entries.is_empty())
    {
        return Err(kept(
            &damaged.error,
            (torn_down, entries.len()),
            &failures,
            shown,
        ));
    }
    if !failures.is_empty() {
        return Err(summary(&failures, shown));
    }
    for done in std::iter::once(&path).chain(spare.as_ref().map(|(spare, _)| spare)) {
        cache::remove(done).map_err(|err| {
            CniError::new(
                codes::IO_FAILURE,
                format!("cannot remove the attachment record {}", done.display()),
            )
            .with_details(err.to_string())
        })?;
    }
    remove_device_info(&entries, &env.container_id);
    damaged.map_or(Ok(()), |damaged| {
        Err(torn_down_anyway(damaged.error, entries.len()))
    })
}

/// (device, inode) of braid's shim executables: this one and, beside it, `braid` and
/// `braid-full`. A delegate that is one of them under another name is refused.
fn own_files() -> Vec<(u64, u64)> {
    let Ok(exe) = fs::read_link("/proc/self/exe") else {
        return Vec::new();
    };
    let beside = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    [exe, beside.join("braid"), beside.join("braid-full")]
        .iter()
        .filter_map(|path| fs::metadata(path).ok())
        .map(|meta| (meta.dev(), meta.ino()))
        .collect()
}

/// Removes the container's device-information directory the torn-down `entries` name. A
/// failure is logged: it cannot undo a teardown that succeeded.
fn remove_device_info(entries: &[record::Entry], container_id: &str) {
    for dir in devinfo::directories(entries, container_id) {
        if let Err(err) = devinfo::remove_directory(&dir) {
            eprintln!(
                "braid: container {container_id}: device-information files in {} not removed: \
                 {err}",
                dir.display()
            );
        }
    }
}

/// The container's lock (`lock`), waited for up to `wait`: code 11 when another braid process
/// (the daemon, stopped or frozen, `braid-thin`, another DEL) holds it longer.
fn lock_container(cni_dir: &Path, container_id: &str, wait: Duration) -> Result<Held, CniError> {
    let lock_dir = cni_dir.join("engine").join("locks");
    lock::container(&lock_dir, container_id, Some(wait)).map_err(|err| {
        if err.kind() == io::ErrorKind::TimedOut {
            return CniError::new(
                codes::TRY_AGAIN_LATER,
                format!(
                    "container {container_id} stayed locked under {} for {} s by another braid \
                     process (the daemon, stopped or busy with it, braid-thin or another DEL); \
                     try again",
                    lock_dir.display(),
                    wait.as_secs_f64()
                ),
            );
        }
        CniError::new(
            codes::IO_FAILURE,
            format!(
                "cannot lock container {container_id} under {}",
                cni_dir.display()
            ),
        )
        .with_details(err.to_string())
    })
}

/// The record, opened as `openat(2)` would: the records directory without following a link
/// (`O_DIRECTORY | O_NOFOLLOW`), the record inside it through that descriptor, again without
/// following one; it must be a regular file owned by root. `None` when there is none.
fn read_record(path: &Path) -> Result<Option<Vec<u8>>, CniError> {
    let failed = |why: String| {
        CniError::new(
            codes::IO_FAILURE,
            format!("cannot read the attachment record {}", path.display()),
        )
        .with_details(why)
    };
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(failed("no directory and file name".into()));
    };
    let records = match open_no_follow(dir, libc::O_DIRECTORY) {
        Ok(records) => records,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(refused_link(dir, &err).unwrap_or_else(|| failed(err.to_string()))),
    };
    // The directory's descriptor stands for it: nothing renamed or linked above it afterwards
    // changes which directory the record is read from.
    let inside = Path::new("/proc/self/fd")
        .join(records.as_raw_fd().to_string())
        .join(name);
    let file = match open_no_follow(&inside, 0) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(refused_link(path, &err).unwrap_or_else(|| failed(err.to_string()))),
    };
    let meta = file.metadata().map_err(|err| failed(err.to_string()))?;
    if !meta.is_file() || meta.uid() != 0 {
        return Err(CniError::config(format!(
            "the attachment record {} is not a regular file owned by root; refused",
            path.display()
        )));
    }
    let mut data = Vec::new();
    (&file)
        .read_to_end(&mut data)
        .map_err(|err| failed(err.to_string()))?;
    Ok(Some(data))
}

fn open_no_follow(path: &Path, flags: i32) -> io::Result<fs::File> {
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
}

/// Code 7 when `err` says `path` is a symbolic link (`ELOOP` under `O_NOFOLLOW`, `ENOTDIR`
/// for a directory opened with `O_DIRECTORY`).
fn refused_link(path: &Path, err: &io::Error) -> Option<CniError> {
    matches!(err.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)).then(|| {
        CniError::config(format!(
            "{} is a symbolic link or not a directory; braid never follows a link to an \
             attachment record; refused",
            path.display()
        ))
    })
}

/// A damaged record is reported even when what it still describes was torn down.
fn torn_down_anyway(error: CniError, count: usize) -> CniError {
    CniError::new(
        error.code,
        format!(
            "{}; without the braid daemon, the shim tore down the {count} attachment(s) it \
             still describes",
            error.msg
        ),
    )
    .with_details(error.details)
}

/// Code 11 for a damaged record that may not describe every attachment (cut short, an entry
/// that does not decode, a format this shim does not read) or from which nothing could be torn
/// down (it lists no attachment): what was torn down (`torn_down` of `count`), and why the
/// record stays. Only the
/// daemon, which resolves the pod's networks, can complete the DEL.
fn kept(
    error: &CniError,
    (torn_down, count): (usize, usize),
    failures: &[CniError],
    record: &Path,
) -> CniError {
    let details: Vec<String> = std::iter::once(error.details.clone())
        .chain(failures.iter().map(ToString::to_string))
        .collect();
    CniError::new(
        codes::TRY_AGAIN_LATER,
        format!(
            "{} and may not describe every attachment; without the braid daemon, the shim tore \
             down {} of the {count} attachment(s) it still describes and keeps the record {}: \
             the daemon, which can resolve the pod's networks, completes this DEL (try again \
             once it serves)",
            error.msg,
            torn_down,
            record.display()
        ),
    )
    .with_details(details.join("; "))
}

/// One error listing every failed attachment (the first failure's code).
fn summary(failures: &[CniError], record: &Path) -> CniError {
    let details: Vec<String> = failures.iter().map(ToString::to_string).collect();
    CniError::new(
        failures[0].code,
        format!(
            "{} teardown step(s) failed; without the braid daemon, the shim replayed the \
             attachment record {}, which is kept for the retry",
            failures.len(),
            record.display()
        ),
    )
    .with_details(details.join("; "))
}

#[cfg(test)]
mod tests {
    use super::{codes, delete, CniEnv};

    #[test]
    fn an_id_too_long_for_a_record_has_nothing_to_delete() {
        // No settings file, socket or lock is looked at: the DEL is over before them.
        let env = CniEnv {
            command: "DEL".into(),
            container_id: "a".repeat(300),
            ..CniEnv::default()
        };
        let settings = crate::settings::parse(
            br#"{"type": "braid", "cniDir": "/nonexistent/braid-replay-test"}"#,
        )
        .unwrap();
        assert_eq!(delete(&env, &settings), Ok(()));
        assert!(!std::path::Path::new("/nonexistent/braid-replay-test").exists());
    }

    #[test]
    fn a_record_or_records_directory_that_is_a_link_is_refused_with_code_7() {
        let dir = std::env::temp_dir().join(format!("braid-replay-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let real = dir.join("real");
        std::fs::create_dir_all(&real).unwrap();
        let data = br#"{"kind": "braidAttachmentRecord"}"#;
        std::fs::write(real.join("ctr1.json"), data).unwrap();
        std::fs::create_dir(dir.join("records")).unwrap();
        std::os::unix::fs::symlink(real.join("ctr1.json"), dir.join("records/ctr1.json")).unwrap();
        std::os::unix::fs::symlink(&real, dir.join("linked")).unwrap();
        for path in [dir.join("records/ctr1.json"), dir.join("linked/ctr1.json")] {
            let err = super::read_record(&path).unwrap_err();
            assert_eq!(err.code, codes::INVALID_CONFIG, "{err}");
            assert!(err.msg.contains("symbolic link"), "{err}");
        }
        assert_eq!(super::read_record(&dir.join("records/none.json")), Ok(None));
        assert_eq!(super::read_record(&dir.join("absent/none.json")), Ok(None));
        let owner = std::fs::metadata(&real).map(|m| std::os::unix::fs::MetadataExt::uid(&m));
        if owner.ok() == Some(0) {
            let found = super::read_record(&real.join("ctr1.json")).unwrap();
            assert_eq!(found.as_deref(), Some(data.as_slice()));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_record_nothing_was_torn_down_from_is_kept_with_code_11() {
        // Read whole (its `attachments` array ends) yet damaged (no `containerId`, no
        // `netns`), it lists nothing to tear down: it stays, and the DEL is to be retried.
        let dir = std::env::temp_dir().join(format!("braid-replay-empty-{}", std::process::id()));
        let record = dir.join("records").join("ctr1.json");
        std::fs::create_dir_all(record.parent().unwrap()).unwrap();
        let data = br#"{"kind": "braidAttachmentRecord", "version": 2, "attachments": []}"#;
        std::fs::write(&record, data).unwrap();
        let env = CniEnv {
            command: "DEL".into(),
            container_id: "ctr1".into(),
            ..CniEnv::default()
        };
        let conf = format!(r#"{{"type": "braid", "cniDir": "{}"}}"#, dir.display());
        let settings = crate::settings::parse(conf.as_bytes()).unwrap();
        for _ in 0..2 {
            let err = delete(&env, &settings).unwrap_err();
            assert_eq!(err.code, codes::TRY_AGAIN_LATER, "{err}");
            assert!(err.msg.contains("keeps the record"), "{err}");
            assert_eq!(
                std::fs::read(&record).unwrap(),
                data,
                "the record stays as it was"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
