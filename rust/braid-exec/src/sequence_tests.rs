use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{run_sequence, Step, StepLimits, StepResult};
use crate::tests::{env, sh, tempdir};
use crate::Within;

fn limits(timeout: Duration) -> StepLimits {
    StepLimits {
        timeout: Some(timeout),
        exit_grace: Duration::from_millis(200),
        max_stdout: 1 << 20,
    }
}

fn step<'a>(
    path: &'a Path,
    env: &'a [(String, String)],
    stdin: &'a [u8],
    group: usize,
) -> Step<'a> {
    Step {
        path,
        env,
        stdin,
        group,
    }
}

fn stdout_of(result: &StepResult) -> (i32, String) {
    match result {
        StepResult::Exited { output, .. } => (
            output.code,
            String::from_utf8(output.stdout.clone()).unwrap(),
        ),
        other => panic!("not exited: {other:?}"),
    }
}

/// A plugin that notes its pid and start time, then (after reading all of its stdin) the time
/// it had it, in `<dir>/<name>.*`, and prints its stdin back.
fn witness(dir: &Path, name: &str, then: &str) -> (PathBuf, tempdir::Dir) {
    let base = dir.join(name);
    let b = base.display();
    sh(&format!(
        "echo $$ > {b}.pid; date +%s%N > {b}.started; cat > {b}.in; date +%s%N > {b}.read; \
         cat {b}.in; {then}"
    ))
}

fn nanos(path: &Path) -> u128 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn steps_run_in_order_each_with_its_own_stdin() {
    let (echo, _d) = sh("cat");
    let env = env();
    let steps = [
        step(&echo, &env, b"one", 0),
        step(&echo, &env, b"two", 0),
        step(&echo, &env, b"three", 1),
    ];
    let results = run_sequence(&steps, limits(Duration::from_secs(10)), Within::HERE);
    let outs: Vec<_> = results.iter().map(stdout_of).collect();
    assert_eq!(
        outs,
        [(0, "one".into()), (0, "two".into()), (0, "three".into())]
    );
}

#[test]
fn the_next_plugin_is_started_during_the_one_before_and_read_only_after_it() {
    let dir = tempdir::Dir::new();
    let (first, _a) = witness(&dir.0, "first", "sleep 0.4");
    let (second, _b) = witness(&dir.0, "second", "true");
    let env = env();
    let steps = [step(&first, &env, b"1", 0), step(&second, &env, b"2", 1)];
    let results = run_sequence(&steps, limits(Duration::from_secs(10)), Within::HERE);
    assert_eq!(stdout_of(&results[1]), (0, "2".into()));
    let first_done = nanos(&dir.0.join("first.read")) + 400_000_000;
    assert!(
        nanos(&dir.0.join("second.started")) < first_done,
        "started while the first one still worked"
    );
    assert!(
        nanos(&dir.0.join("second.read")) >= first_done,
        "its stdin came only once the first one was done"
    );
}

#[test]
fn a_failure_skips_the_rest_of_its_group_only_and_the_plugin_held_for_it_is_killed_unread() {
    let dir = tempdir::Dir::new();
    // It fails once the plugin started ahead of the next step has shown up.
    let (fails, _a) = sh(&format!(
        "cat >/dev/null; while [ ! -s {} ]; do sleep 0.01; done; \
         echo '{{\"code\":11,\"msg\":\"busy\"}}'; exit 1",
        dir.0.join("held.pid").display()
    ));
    let (held, _b) = witness(&dir.0, "held", "true");
    let (echo, _c) = sh("cat");
    let env = env();
    let steps = [
        step(&fails, &env, b"x", 0),
        step(&held, &env, b"never", 0),
        step(&echo, &env, b"next group", 1),
    ];
    let results = run_sequence(&steps, limits(Duration::from_secs(10)), Within::HERE);
    assert_eq!(stdout_of(&results[0]).0, 1);
    assert!(
        matches!(results[1], StepResult::Skipped),
        "{:?}",
        results[1]
    );
    assert_eq!(stdout_of(&results[2]), (0, "next group".into()));
    // It was started ahead, never got its stdin, and is gone.
    let pid: u32 = std::fs::read_to_string(dir.0.join("held.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !dir.0.join("held.read").exists(),
        "the skipped plugin read its stdin"
    );
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "pid {pid} outlived the sequence"
    );
}

#[test]
fn a_plugin_that_cannot_start_ends_its_group_with_its_own_error() {
    let (echo, _d) = sh("cat");
    let missing = PathBuf::from("/nonexistent/plugin");
    let env = env();
    let steps = [
        step(&missing, &env, b"x", 0),
        step(&echo, &env, b"skipped", 0),
        step(&echo, &env, b"runs", 1),
    ];
    let results = run_sequence(&steps, limits(Duration::from_secs(10)), Within::HERE);
    match &results[0] {
        StepResult::NotStarted(err) => assert_eq!(err.raw_os_error(), Some(libc::ENOENT)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(results[1], StepResult::Skipped));
    assert_eq!(stdout_of(&results[2]), (0, "runs".into()));
}

#[test]
fn each_step_has_its_own_deadline_counted_from_its_turn() {
    let (slow, _a) = sh("cat >/dev/null; sleep 0.3; echo late");
    let (stuck, _b) = sh("cat >/dev/null; sleep 30");
    let env = env();
    let steps = [
        step(&slow, &env, b"", 0),
        step(&slow, &env, b"", 1),
        step(&stuck, &env, b"", 2),
        step(&slow, &env, b"", 3),
    ];
    let started = Instant::now();
    // 0.5 s each: two slow steps in a row (0.6 s) are within their own deadlines.
    let results = run_sequence(&steps, limits(Duration::from_millis(500)), Within::HERE);
    assert_eq!(stdout_of(&results[0]), (0, "late\n".into()));
    assert_eq!(stdout_of(&results[1]), (0, "late\n".into()));
    assert!(
        matches!(
            results[2],
            StepResult::Failed {
                failure: crate::Failure::TimedOut,
                ..
            }
        ),
        "{:?}",
        results[2]
    );
    assert_eq!(stdout_of(&results[3]), (0, "late\n".into()));
    assert!(started.elapsed() < Duration::from_secs(5));
}
