//! `braid-full` against a stand-in for a frozen daemon: a separate process listening on a unix
//! socket that accepts every connection, reads the request frame with the real protocol
//! (`braid_wire::wire`) and never answers nor closes it (or, asked to, reads nothing at all).
//! Every call must end within its bound: ADD, CHECK, GC and STATUS with code 11 after
//! `daemonWaitSeconds` plus `pluginTimeout`, DEL by replaying the record after a few seconds.
//!
//! The stand-in is this test binary started again with `STAND_IN_SOCKET` set, running only
//! `stand_in_daemon` (which does nothing in an ordinary test run).

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use std::{env, fs, thread};

use braid_wire::answer::{DEL_ANSWER_WAIT, REPLAY_ARG};
use braid_wire::wire::{body_length, decode_request, Request, HEADER_BYTES, SOCKET_NAME};
use serde_json::{json, Value};

const STAND_IN_SOCKET: &str = "BRAID_STAND_IN_SOCKET";
const STAND_IN_READS: &str = "BRAID_STAND_IN_READS";

/// The stand-in daemon's body (see the module documentation).
#[test]
fn stand_in_daemon() {
    let Some(socket) = env::var_os(STAND_IN_SOCKET) else {
        return;
    };
    let reads = env::var_os(STAND_IN_READS).is_none_or(|v| v != "0");
    let log = PathBuf::from(&socket).with_extension("log");
    let listener = UnixListener::bind(&socket).expect("bind the stand-in socket");
    let mut held: Vec<UnixStream> = Vec::new();
    for conn in listener.incoming() {
        let mut conn = conn.expect("accept");
        if reads {
            let mut header = [0_u8; HEADER_BYTES];
            conn.read_exact(&mut header).expect("frame header");
            let mut body = vec![0_u8; body_length(header).expect("frame length")];
            conn.read_exact(&mut body).expect("frame body");
            let Ok(Request::Cni { env, .. }) = decode_request(&body) else {
                panic!("not a CNI request");
            };
            let mut file = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .expect("log");
            writeln!(file, "{}", env.command).expect("log line");
        }
        held.push(conn); // never answered, never closed
    }
}

/// A running stand-in, killed and reaped when dropped.
struct StandIn {
    child: Child,
    dir: PathBuf,
}

impl StandIn {
    fn start(name: &str, reads: bool) -> Self {
        let dir = env::temp_dir().join(format!("braid-silent-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("socket dir");
        let socket = dir.join(SOCKET_NAME);
        let child = Command::new(env::current_exe().expect("test binary"))
            .args([
                "stand_in_daemon",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(STAND_IN_SOCKET, &socket)
            .env(STAND_IN_READS, if reads { "1" } else { "0" })
            .stdout(Stdio::null())
            .spawn()
            .expect("start the stand-in");
        let stand_in = Self { child, dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !socket.exists() {
            assert!(Instant::now() < deadline, "the stand-in never listened");
            thread::sleep(Duration::from_millis(10));
        }
        stand_in
    }

    fn requests(&self) -> Vec<String> {
        let log = self.dir.join(SOCKET_NAME).with_extension("log");
        fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn conf(&self, extra: &Value) -> Vec<u8> {
        let mut conf = json!({
            "cniVersion": "1.0.0",
            "name": "braid",
            "type": "braid",
            "daemonSocketDir": self.dir.to_str().expect("utf-8"),
            "cniDir": self.dir.join("cni").to_str().expect("utf-8"),
        });
        for (key, value) in extra.as_object().expect("an object") {
            conf[key] = value.clone();
        }
        serde_json::to_vec(&conf).expect("json")
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Runs `braid-full` with `command`, `stdin` and `args`; its output and how long it took.
fn shim(command: &str, stdin: &[u8], args: &[&str]) -> (Output, Duration) {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_braid-full"))
        .args(args)
        .env_clear()
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", "ctr-silent-1")
        .env("CNI_NETNS", "/run/netns/silent")
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", "/nonexistent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start braid-full");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let writer = thread::spawn(move || input.write_all(&data));
    let output = wait_bounded(child, Duration::from_secs(60));
    writer.join().expect("writer").expect("stdin written");
    (output, start.elapsed())
}

/// The child's output; it is killed (and the test fails) if it runs past `limit`.
fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("braid-full hung for more than {limit:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn error_of(output: &Output) -> Value {
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("a CNI error document")
}

#[test]
fn every_verb_but_del_ends_with_code_11_after_the_daemon_wait_plus_the_plugin_deadline() {
    let stand_in = StandIn::start("verbs", true);
    let conf = stand_in.conf(&json!({"daemonWaitSeconds": 0.3, "pluginTimeout": 0.4}));
    for command in ["ADD", "CHECK", "GC", "STATUS"] {
        let (output, took) = shim(command, &conf, &[]);
        let error = error_of(&output);
        assert_eq!(error["code"], 11, "{command}: {error}");
        let msg = error["msg"].as_str().expect("msg");
        assert!(msg.contains("did not answer within 0.7 s"), "{msg}");
        assert!(
            msg.contains(&format!("{}", stand_in.dir.display())),
            "{msg}"
        );
        assert!(
            took >= Duration::from_millis(700),
            "{command} took {took:?}"
        );
        assert!(took < Duration::from_secs(5), "{command} took {took:?}");
    }
    assert_eq!(stand_in.requests(), ["ADD", "CHECK", "GC", "STATUS"]);
}

#[test]
fn a_request_the_daemon_never_reads_is_bounded_too() {
    // Larger than the socket's buffers: sending it blocks until the deadline.
    let stand_in = StandIn::start("unread", false);
    let padding = "x".repeat(900_000);
    let conf = stand_in.conf(&json!({
        "daemonWaitSeconds": 0.2, "pluginTimeout": 0.3, "padding": padding,
    }));
    let (output, took) = shim("ADD", &conf, &[]);
    assert_eq!(error_of(&output)["code"], 11);
    assert!(took >= Duration::from_millis(500), "took {took:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[test]
fn a_del_the_daemon_does_not_answer_is_replayed_after_the_del_bound() {
    let stand_in = StandIn::start("del", true);
    // A huge configured wait does not stretch the DEL's.
    let conf = stand_in.conf(&json!({"daemonWaitSeconds": 1e9, "pluginTimeout": 1e9}));
    let (output, took) = shim("DEL", &conf, &[]);
    // No record: nothing was ever attached, so the replay succeeds with nothing to do.
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(output.stdout, b"");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no answer within 5 s"), "{stderr}");
    assert!(took >= DEL_ANSWER_WAIT, "took {took:?}");
    assert!(
        took < DEL_ANSWER_WAIT + Duration::from_secs(5),
        "took {took:?}"
    );
    assert_eq!(stand_in.requests(), ["DEL"]);
}

#[test]
fn a_del_handed_over_after_the_daemon_failed_it_is_replayed_without_asking_again() {
    let stand_in = StandIn::start("handed", true);
    let record = stand_in.dir.join("cni/records/ctr-silent-1.json");
    fs::create_dir_all(record.parent().expect("dir")).expect("records dir");
    let conf = stand_in.conf(&json!({}));
    // A record that lists no attachment but is not valid: nothing is torn down from it, so it
    // stays, and the answer is code 11 (the daemon resolves it once it serves).
    fs::write(
        &record,
        br#"{"kind": "braidAttachmentRecord", "version": 2, "attachments": []}"#,
    )
    .expect("record");
    let (output, took) = shim("DEL", &conf, &[REPLAY_ARG]);
    let error = error_of(&output);
    assert_eq!(error["code"], 11, "{error}");
    assert!(
        record.exists(),
        "a damaged record nothing was torn down from stays"
    );
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert_eq!(stand_in.requests(), Vec::<String>::new(), "not asked again");
}
