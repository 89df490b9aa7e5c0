//! The durable write of an attachment record (`docs/attachment-record.md`): the record written
//! over a spare file (`crate::spares`) and `fdatasync`ed, then renamed to the record's name
//! (the spare's own name was made durable with its directory when the spare was made, and a
//! rename lost to a power failure is put back from there); without a spare, a temporary file
//! renamed over the record, fsynced through the same descriptor, then the records directory
//! fsynced (and, when it had to be created, its parent). A failure is the `io::Error` of the
//! step that failed. The engine reaches it through `braid._native` (`write_durable`,
//! `start_durable_write`, which runs it on one of braid's helper threads).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::Path;

/// The flushes a durable write makes: `fsync(2)`/`fdatasync(2)` of the file written, and
/// `fsync(2)` of a directory whose entries changed.
trait Flush {
    fn file(&mut self, file: &File, data_only: bool) -> io::Result<()>;
    fn directory(&mut self, path: &Path) -> io::Result<()>;
}

/// The real flushes.
struct Disk;

impl Flush for Disk {
    fn file(&mut self, file: &File, data_only: bool) -> io::Result<()> {
        if data_only {
            file.sync_data()
        } else {
            file.sync_all()
        }
    }

    fn directory(&mut self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }
}

/// Creates `dir` and its missing parents (0700); returns the directories whose entries
/// changed, so each can be flushed: the parent of every directory created.
fn make_dirs(dir: &Path) -> io::Result<Vec<&Path>> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(path) = at {
        if path.as_os_str().is_empty() || path.is_dir() {
            break;
        }
        missing.push(path);
        at = path.parent();
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    Ok(missing.iter().filter_map(|p| p.parent()).collect())
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

fn over_spare(spare: &str, data: &[u8], target: &str, flush: &mut impl Flush) -> io::Result<()> {
    let written = (|| {
        let file = OpenOptions::new().write(true).open(spare)?;
        file.write_all_at(data, 0)?;
        flush.file(&file, true)?;
        drop(file);
        rename_into(spare, target)
    })();
    if written.is_err() {
        let _ = fs::remove_file(spare); // a spare that failed is never used again
    }
    written
}

/// Writes `data` to the new file `tmp`, renames it to `target`, fsyncs it, then fsyncs the
/// directory holding both (the rename is an entry of that directory: without its flush, a
/// power failure may lose the record even though its data is on disk), and the parents of
/// directories it had to create. On ext4, xfs and btrfs the file's fsync commits the rename
/// with it, so the directory's finds nothing left to write. `tmp` is created here or not at
/// all (`O_CREAT|O_EXCL`, which never follows a symbolic link in its place, POSIX `open`),
/// 0600, and is removed again when anything before the rename fails (a full disk), so no
/// failure leaves it behind.
fn through_new_file(
    tmp: &str,
    data: &[u8],
    target: &str,
    flush: &mut impl Flush,
) -> io::Result<()> {
    let open = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(tmp)
    };
    let directory = Path::new(target).parent().unwrap_or(Path::new("."));
    let mut created = Vec::new();
    let mut file = match open() {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = Path::new(tmp).parent() {
                created = make_dirs(parent)?;
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
    flush.file(&file, false)?;
    flush.directory(directory)?;
    for parent in created {
        flush.directory(parent)?;
    }
    Ok(())
}

/// Where a durable write goes: over a spare (then `fdatasync`), or through a new temporary
/// file (then `fsync`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Over this spare file (`crate::spares`).
    Spare(String),
    /// Through this new temporary file.
    Fresh(String),
}

impl Route {
    /// Writes `data` durably to `target` by this route; the error of the step that failed.
    pub fn write(&self, data: &[u8], target: &str) -> io::Result<()> {
        match self {
            Self::Spare(spare) => over_spare(spare, data, target, &mut Disk),
            Self::Fresh(tmp) => through_new_file(tmp, data, target, &mut Disk),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::io;
    use std::path::{Path, PathBuf};

    use super::{through_new_file, Flush};

    /// Records the flushes, each with whether the record was in place by then; fails the
    /// directory flushes when asked.
    #[derive(Default)]
    struct Recorder {
        target: PathBuf,
        flushed: Vec<(String, bool)>,
        fail_directories: bool,
    }

    impl Flush for Recorder {
        fn file(&mut self, _file: &File, data_only: bool) -> io::Result<()> {
            let what = if data_only { "fdatasync" } else { "fsync" };
            self.flushed.push((what.to_owned(), self.target.exists()));
            Ok(())
        }

        fn directory(&mut self, path: &Path) -> io::Result<()> {
            self.flushed
                .push((format!("dir {}", path.display()), self.target.exists()));
            if self.fail_directories {
                return Err(io::Error::other("directory flush refused"));
            }
            Ok(())
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("braid-durable-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut found: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        found.sort();
        found
    }

    #[test]
    fn a_new_record_flushes_its_file_then_its_directory() {
        let root = scratch("dir");
        let records = root.join("records");
        std::fs::create_dir_all(&records).unwrap();
        let target = records.join("c1.json");
        let tmp = records.join(".tmp-1");
        let mut flush = Recorder {
            target: target.clone(),
            ..Recorder::default()
        };

        through_new_file(
            tmp.to_str().unwrap(),
            b"{}",
            target.to_str().unwrap(),
            &mut flush,
        )
        .unwrap();

        let records_dir = format!("dir {}", records.display());
        assert_eq!(
            flush.flushed,
            vec![("fsync".to_owned(), true), (records_dir, true)]
        );
        assert_eq!(names(&records), vec!["c1.json"]);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_records_directory_made_for_it_is_flushed_in_its_parent_too() {
        let root = scratch("parent");
        std::fs::create_dir_all(&root).unwrap();
        let records = root.join("records");
        let target = records.join("c1.json");
        let mut flush = Recorder {
            target: target.clone(),
            ..Recorder::default()
        };

        through_new_file(
            records.join(".tmp-1").to_str().unwrap(),
            b"{}",
            target.to_str().unwrap(),
            &mut flush,
        )
        .unwrap();

        let dirs: Vec<&str> = flush.flushed.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(
            dirs,
            vec![
                "fsync".to_owned(),
                format!("dir {}", records.display()),
                format!("dir {}", root.display()),
            ]
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_failed_directory_flush_is_the_write_s_error_and_leaves_no_temporary_file() {
        let root = scratch("fail");
        std::fs::create_dir_all(&root).unwrap();
        let target = root.join("c1.json");
        let mut flush = Recorder {
            target: target.clone(),
            fail_directories: true,
            ..Recorder::default()
        };

        let written = through_new_file(
            root.join(".tmp-1").to_str().unwrap(),
            b"{}",
            target.to_str().unwrap(),
            &mut flush,
        );

        assert_eq!(written.unwrap_err().to_string(), "directory flush refused");
        assert_eq!(names(&root), vec!["c1.json"]);
        std::fs::remove_dir_all(root).unwrap();
    }
}
