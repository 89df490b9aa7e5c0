//! A plugin dies with the process that started it (and with the thread that started it):
//! `PR_SET_PDEATHSIG` set in the child before `execve`.
//!
//! The process case runs this test binary again as the parent: it starts a plugin that
//! sleeps, writes the plugin's pid to a file and waits, until the test SIGKILLs it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use braid_exec::{spawn, Within};

/// Set in the re-executed test binary: the directory holding the plugin and the pid file.
const PARENT_ROLE: &str = "BRAID_EXEC_TEST_PARENT_DIR";
const PATIENCE: Duration = Duration::from_secs(10);

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("braid-exec-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A plugin that sleeps long past any test: only a signal ends it.
fn sleeper(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("sleeper");
    fs::write(&path, "#!/bin/sh\nexec sleep 300\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn env() -> Vec<(String, String)> {
    vec![("PATH".to_owned(), "/usr/bin:/bin".to_owned())]
}

/// Whether `pid` still runs (a zombie, or a pid gone, does not).
fn running(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis.
        Ok(stat) => !matches!(
            stat.rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next()),
            Some("Z" | "X")
        ),
        Err(_) => false,
    }
}

fn ends_soon(pid: i32) -> bool {
    let start = Instant::now();
    while running(pid) {
        if start.elapsed() > PATIENCE {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
    true
}

fn kill_group(pid: i32) {
    // SAFETY: killpg only sends a signal, to the test's own plugin's group.
    unsafe {
        libc::killpg(pid, libc::SIGKILL);
    }
}

#[test]
fn a_plugin_dies_with_the_process_that_started_it() {
    if let Ok(dir) = std::env::var(PARENT_ROLE) {
        // The parent's role: start the plugin, say which it is, wait to be killed.
        let dir = PathBuf::from(dir);
        let plugin = spawn(&sleeper(&dir), &env(), Within::HERE).unwrap();
        fs::write(dir.join("pid.tmp"), plugin.id().to_string()).unwrap();
        fs::rename(dir.join("pid.tmp"), dir.join("pid")).unwrap();
        thread::sleep(Duration::from_secs(300));
        return;
    }
    let dir = scratch("parent");
    let mut parent = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_plugin_dies_with_the_process_that_started_it",
            "--nocapture",
        ])
        .env(PARENT_ROLE, &dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !dir.join("pid").exists() {
        assert!(
            start.elapsed() < PATIENCE,
            "the parent never started its plugin"
        );
        thread::sleep(Duration::from_millis(10));
    }
    let pid: i32 = fs::read_to_string(dir.join("pid"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(running(pid));

    parent.kill().unwrap(); // SIGKILL: no handler, no destructor runs
    parent.wait().unwrap();

    let died = ends_soon(pid);
    if !died {
        kill_group(pid); // never leave it behind, even failing
    }
    fs::remove_dir_all(&dir).unwrap();
    assert!(died, "the plugin outlived the process that started it");
}

#[test]
fn a_plugin_dies_with_the_thread_that_started_it() {
    // The kernel's parent is the starting thread: why braid starts plugins only from threads
    // that outlive them.
    let dir = scratch("thread");
    let path = sleeper(&dir);
    let pid = thread::spawn(move || {
        let plugin = spawn(&path, &env(), Within::HERE).unwrap();
        let pid = i32::try_from(plugin.id()).unwrap();
        std::mem::forget(plugin); // its handle would kill it: only the thread's end may
        pid
    })
    .join()
    .unwrap();

    let died = ends_soon(pid);
    if !died {
        kill_group(pid);
    }
    let mut status = 0;
    // SAFETY: waitpid(2) on this process's own child, which it reaps here.
    unsafe { libc::waitpid(pid, &raw mut status, 0) };
    fs::remove_dir_all(&dir).unwrap();
    assert!(died, "the plugin outlived the thread that started it");
    assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL);
}
