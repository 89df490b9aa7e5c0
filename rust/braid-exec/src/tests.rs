use super::*;

fn limits(seconds: u64) -> Limits {
    Limits {
        deadline: Some(Instant::now() + Duration::from_secs(seconds)),
        exit_grace: Duration::from_millis(200),
        max_stdout: 1 << 20,
    }
}

pub(crate) fn env() -> Vec<(String, String)> {
    vec![
        ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
        ("ONLY".to_owned(), "this".to_owned()),
    ]
}

/// Waits (up to 10 s) for the file a plugin writes once it has read all of its stdin.
fn wait_for(done: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done.exists() {
        assert!(
            Instant::now() < deadline,
            "the plugin never saw the end of its stdin"
        );
        thread::sleep(Duration::from_millis(5));
    }
}

pub(crate) fn sh(script: &str) -> (std::path::PathBuf, tempdir::Dir) {
    let dir = tempdir::Dir::new();
    let path = dir.0.join("plugin");
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (path, dir)
}

pub(crate) mod tempdir {
    pub struct Dir(pub std::path::PathBuf);
    impl Dir {
        pub fn new() -> Self {
            use std::sync::atomic::{AtomicU32, Ordering};
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path =
                std::env::temp_dir().join(format!("braid-exec-test-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn stdin_in_stdout_and_stderr_out_exact_environment() {
    let (path, _dir) = sh("cat; echo \"env=$ONLY\" >&2; env | grep -c . >&2; exit 3");
    let out = run(&path, &env(), b"{\"a\":1}", limits(10)).unwrap();
    assert_eq!(out.code, 3);
    assert_eq!(out.stdout, b"{\"a\":1}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("env=this\n"), "{stderr}");
    // PATH, ONLY and PWD (which the shell adds itself): nothing of this process's environment.
    let count: usize = stderr.lines().nth(1).unwrap().parse().unwrap();
    assert!(count <= 3, "{stderr}");
}

#[test]
fn large_input_and_output_both_ways_without_deadlock() {
    // More than a pipe holds each way: the plugin writes before it has read everything.
    let (path, _dir) = sh("head -c 300000 /dev/zero; cat >/dev/null; echo done >&2");
    let input = vec![b'x'; 500_000];
    let out = run(&path, &env(), &input, limits(10)).unwrap();
    assert_eq!(out.code, 0);
    assert_eq!(out.stdout.len(), 300_000);
    assert_eq!(out.stderr, b"done\n");
}

#[test]
fn a_plugin_that_never_reads_its_stdin_still_gets_its_output_collected() {
    let (path, _dir) = sh("exec 0<&-; echo '{}'");
    let out = run(&path, &env(), &vec![b'y'; 1 << 20], limits(10)).unwrap();
    assert_eq!(out.code, 0);
    assert_eq!(out.stdout, b"{}\n");
}

#[test]
fn the_deadline_kills_the_whole_group() {
    let dir = tempdir::Dir::new();
    let marker = dir.0.join("child-pid");
    let (path, _d2) = sh(&format!("sleep 30 & echo $! > {}; wait", marker.display()));
    let started = Instant::now();
    let failure = run(
        &path,
        &env(),
        b"",
        Limits {
            deadline: Some(Instant::now() + Duration::from_millis(500)),
            ..limits(1)
        },
    )
    .unwrap_err();
    assert!(
        matches!(failure, RunFailure::Run(Failure::TimedOut)),
        "{failure:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let child: i32 = std::fs::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The backgrounded sleep was in the plugin's group: it is gone (or a zombie of init).
    thread::sleep(Duration::from_millis(100));
    let status = std::fs::read_to_string(format!("/proc/{child}/status")).unwrap_or_default();
    assert!(
        status.is_empty() || status.contains("State:\tZ"),
        "{status}"
    );
}

#[test]
fn a_descendant_holding_the_pipes_gets_the_grace_period_not_the_deadline() {
    let (path, _dir) = sh("(sleep 20 &) ; echo '{\"ok\":true}'");
    let started = Instant::now();
    let out = run(&path, &env(), b"", limits(30)).unwrap();
    assert_eq!(out.code, 0);
    assert_eq!(out.stdout, b"{\"ok\":true}\n");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn stdout_past_the_limit_is_refused() {
    let (path, _dir) = sh("head -c 2000000 /dev/zero");
    let failure = run(&path, &env(), b"", limits(10)).unwrap_err();
    assert!(
        matches!(failure, RunFailure::Run(Failure::StdoutTooLarge)),
        "{failure:?}"
    );
}

#[test]
fn a_signal_is_a_negative_code() {
    let (path, _dir) = sh("kill -TERM $$");
    let out = run(&path, &env(), b"", limits(10)).unwrap();
    assert_eq!(out.code, -libc::SIGTERM);
}

#[test]
fn a_missing_or_unexecutable_binary_is_a_spawn_error() {
    let failure = run(Path::new("/nonexistent/plugin"), &env(), b"", limits(1)).unwrap_err();
    let RunFailure::Spawn(err) = failure else {
        panic!("{failure:?}")
    };
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    let dir = tempdir::Dir::new();
    let path = dir.0.join("plain");
    std::fs::write(&path, "#!/bin/sh\n").unwrap();
    let failure = run(&path, &env(), b"", limits(1)).unwrap_err();
    let RunFailure::Spawn(err) = failure else {
        panic!("{failure:?}")
    };
    assert_eq!(err.raw_os_error(), Some(libc::EACCES));
}

#[test]
fn the_plugin_leads_its_own_process_group() {
    let (path, _dir) = sh("ps -o pgid= -p $$ | tr -d ' '; echo $$");
    let out = run(&path, &env(), b"", limits(10)).unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), lines.next(), "{text}");
}

#[test]
fn spawn_then_communicate_lets_the_caller_act_before_the_first_byte() {
    let (path, _dir) = sh("cat");
    let plugin = spawn(&path, &env(), Within::HERE).unwrap();
    assert!(plugin.id() > 0);
    thread::sleep(Duration::from_millis(20)); // the caller's work, e.g. a durable write
    let out = plugin.communicate(b"late", limits(10)).unwrap();
    assert_eq!(out.stdout, b"late");
}

#[test]
fn a_killed_plugin_is_reaped() {
    let (path, _dir) = sh("sleep 30");
    let mut plugin = spawn(&path, &env(), Within::HERE).unwrap();
    let pid = plugin.id();
    plugin.kill();
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn the_plugin_inherits_only_its_three_pipes() {
    // A descriptor without close-on-exec (F_DUPFD does not set it), as a process may inherit
    // one from its parent; numbered high so no descriptor of the listing can be it.
    let file = std::fs::File::open("/proc/self/status").unwrap();
    // SAFETY: duplicating a descriptor this test owns; the copy is closed below.
    #[allow(unsafe_code)]
    let fd = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD, 900) };
    assert!(fd >= 900);
    let (path, _dir) = sh("ls /proc/self/fd");
    let out = run(&path, &env(), b"", limits(10)).unwrap();
    let fds: Vec<i32> = String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(!fds.contains(&fd), "{fds:?} holds {fd}");
    assert_eq!(&fds[..3], &[0, 1, 2]);
    assert!(fds.len() <= 4, "{fds:?}"); // ls's own directory handle
                                        // SAFETY: closing the duplicate made above.
    #[allow(unsafe_code)]
    unsafe {
        libc::close(fd);
    }
}

#[test]
fn a_dropped_plugin_is_killed_and_reaped() {
    let (path, _dir) = sh("sleep 30");
    let plugin = spawn(&path, &env(), Within::HERE).unwrap();
    let pid = plugin.id();
    drop(plugin);
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn stderr_past_the_limit_is_cut_and_the_plugin_still_finishes() {
    let (path, _dir) = sh("head -c 3000000 /dev/zero >&2; echo '{}'");
    let out = run(&path, &env(), b"", limits(10)).unwrap();
    assert_eq!(out.code, 0);
    assert_eq!(out.stdout, b"{}\n");
    assert_eq!(out.stderr.len(), 1 << 20);
}

#[test]
fn fed_now_the_plugin_works_before_communicate_and_gets_all_its_input() {
    let dir = tempdir::Dir::new();
    let done = dir.0.join("done");
    let (path, _script) = sh(&format!(
        "cat > {}.tmp; mv {0}.tmp {0}; echo ok",
        done.display()
    ));
    let mut plugin = spawn(&path, &env(), Within::HERE).unwrap();
    assert_eq!(
        plugin.feed_now(b"small config").unwrap(),
        12,
        "it fits the pipe: all taken"
    );
    wait_for(&done);
    let out = plugin.communicate(b"", limits(10)).unwrap();
    assert_eq!((out.code, out.stdout), (0, b"ok\n".to_vec()));
    assert_eq!(std::fs::read(&done).unwrap(), b"small config");
}

#[test]
fn what_the_pipe_does_not_take_now_goes_through_communicate() {
    let (path, _dir) = sh("sleep 0.2; cat");
    let input: Vec<u8> = (0..400_000u32).map(|i| (i % 251) as u8).collect();
    let mut plugin = spawn(&path, &env(), Within::HERE).unwrap();
    let taken = plugin.feed_now(&input).unwrap();
    assert!(
        0 < taken && taken < input.len(),
        "a pipe holds less than 400 kB: {taken}"
    );
    let out = plugin.communicate(&input[taken..], limits(10)).unwrap();
    assert_eq!(out.stdout, input);
}

#[test]
fn fed_at_the_start_the_plugin_reads_everything_without_the_caller() {
    let dir = tempdir::Dir::new();
    let done = dir.0.join("done");
    let (path, _script) = sh(&format!(
        "cat > {}.tmp; mv {0}.tmp {0}; echo ok",
        done.display()
    ));
    let input: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let (plugin, given) = spawn_fed(&path, &env(), Within::HERE, &input).unwrap();
    assert_eq!(
        given,
        input.len(),
        "grown past 64 KiB, the pipe holds it all"
    );
    wait_for(&done);
    let out = plugin.communicate(b"", limits(10)).unwrap();
    assert_eq!((out.code, out.stdout), (0, b"ok\n".to_vec()));
    assert_eq!(std::fs::read(&done).unwrap(), input);
}

#[test]
fn input_past_the_largest_fed_goes_through_communicate() {
    let (path, _dir) = sh("cat");
    let input: Vec<u8> = (0..=MAX_FED)
        .map(|i| u8::try_from(i % 241).unwrap())
        .collect();
    let (plugin, given) = spawn_fed(&path, &env(), Within::HERE, &input).unwrap();
    assert_eq!(given, 0);
    let limits = Limits {
        max_stdout: 2 * MAX_FED,
        ..limits(10)
    };
    let out = plugin.communicate(&input, limits).unwrap();
    assert_eq!(out.stdout, input);
}

#[test]
fn a_fed_plugin_inherits_only_its_three_streams_and_its_exact_environment() {
    let (path, _dir) = sh("ls /proc/self/fd; echo; env; echo; cat");
    let (plugin, given) = spawn_fed(&path, &env(), Within::HERE, b"the config").unwrap();
    assert_eq!(given, 10);
    let out = plugin.communicate(b"", limits(10)).unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut parts = text.split("\n\n");
    let fds: Vec<&str> = parts.next().unwrap().lines().collect();
    // ls's own directory descriptor is the fourth.
    assert_eq!(fds.len(), 4, "{fds:?}");
    let mut vars: Vec<&str> = parts.next().unwrap().lines().collect();
    vars.retain(|line| {
        !line.starts_with("PWD=") && !line.starts_with("SHLVL=") && !line.starts_with("_=")
    });
    vars.sort_unstable();
    assert_eq!(vars, ["ONLY=this", "PATH=/usr/bin:/bin"]);
    assert_eq!(parts.next().unwrap(), "the config");
}

#[test]
fn a_fed_missing_binary_is_a_spawn_error() {
    let err = spawn_fed(
        Path::new("/nonexistent/plugin"),
        &env(),
        Within::HERE,
        b"{}",
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

#[test]
fn a_plugin_given_a_root_runs_inside_it() {
    // A root of its own: a static busybox and a file no other root has. The binary's path is
    // resolved inside the root, and the plugin sees that root's files at their plain paths.
    let root = tempdir::Dir::new();
    std::fs::create_dir_all(root.0.join("bin")).unwrap();
    std::fs::copy("/bin/busybox", root.0.join("bin/busybox")).expect("busybox-static");
    std::fs::write(root.0.join("only-here"), "inside the root\n").unwrap();
    std::fs::write(
        root.0.join("plugin"),
        "#!/bin/busybox sh\n/bin/busybox cat /only-here\n",
    )
    .unwrap();
    std::fs::set_permissions(
        root.0.join("plugin"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let dir = std::fs::File::open(&root.0).unwrap();
    let within = Within {
        netns: None,
        root: Some(dir.as_raw_fd()),
    };
    let plugin = spawn(Path::new("/plugin"), &env(), within).unwrap();
    let out = plugin.communicate(b"", limits(10)).unwrap();
    assert_eq!(out.code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, b"inside the root\n");
    // Outside that root the same path names nothing.
    assert!(!Path::new("/only-here").exists());
}

#[test]
fn a_plugin_starts_with_default_signals_and_nothing_blocked() {
    // The caller ignores SIGPIPE (as Rust and Python do) and blocks SIGUSR1 on its thread;
    // the plugin must get neither.
    let (path, _dir) = sh("grep -E '^Sig(Blk|Ign):' /proc/self/status");
    let blocked = thread::spawn(move || {
        // SAFETY: signal(2) and pthread_sigmask(3) on this test's own process and thread.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut set);
            libc::sigaddset(&raw mut set, libc::SIGUSR1);
            libc::pthread_sigmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut());
        }
        let plugin = spawn(&path, &env(), Within::HERE).unwrap();
        plugin.communicate(b"", limits(10)).unwrap()
    })
    .join()
    .unwrap();
    let text = String::from_utf8(blocked.stdout).unwrap();
    let mask = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name)).unwrap();
        u64::from_str_radix(line.rsplit('\t').next().unwrap(), 16).unwrap()
    };
    let bit = |signal: libc::c_int| 1_u64 << (signal - 1);
    assert_eq!(mask("SigBlk:"), 0, "{text}");
    let ignored = mask("SigIgn:");
    assert_eq!(
        ignored & (bit(libc::SIGPIPE) | bit(libc::SIGXFSZ)),
        0,
        "{text}"
    );
}

#[test]
fn a_large_caller_starts_plugins_without_copying_its_memory() {
    // 256 MiB touched by the caller: a fork would copy its page tables and fault on every
    // page written afterwards; the shared-memory start does neither. The start must stay well
    // under what copying that much costs (tens of milliseconds here).
    let ballast: Vec<u8> = vec![1; 256 << 20];
    let (path, _dir) = sh("exit 0");
    let mut fastest = Duration::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        let plugin = spawn(&path, &env(), Within::HERE).unwrap();
        fastest = fastest.min(started.elapsed());
        plugin.communicate(b"", limits(10)).unwrap();
    }
    assert!(ballast.iter().step_by(4096).all(|&b| b == 1));
    assert!(fastest < Duration::from_millis(5), "{fastest:?}");
}
