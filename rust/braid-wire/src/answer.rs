//! How long the shim waits for the daemon's answer once connected, what it reports when none
//! comes, and which answers to a DEL it does not accept (it replays the record instead). Both
//! shim executables follow these rules, so they time out and fall back alike.

use alloc::format;
use alloc::string::String;
use core::time::Duration;

use serde_json::Value;

use crate::error::{codes, CniError};
use crate::settings::Settings;
use crate::wire::CniResponse;

/// The argument the front hands a DEL to `braid-full` with when it already asked the daemon and
/// got no answer it accepts (none in time, or one refused by [`del_answer_refused`]):
/// `braid-full` then replays the record without asking again. Runtimes start the shim without
/// arguments, so it means nothing else.
pub const REPLAY_ARG: &str = "--braid-replay";

/// How long a DEL waits for the daemon's answer before the shim replays the record itself.
pub const DEL_ANSWER_WAIT: Duration = Duration::from_secs(5);

/// How long ADD, CHECK, GC and STATUS wait for the daemon's answer once connected (sending
/// the request included): `daemonWaitSeconds` (the daemon may hold a request back as long as
/// the shim waits to reach it) plus `pluginTimeout` (the deadline of the delegate it runs).
pub fn answer_wait(settings: &Settings) -> Duration {
    settings.daemon_wait.saturating_add(settings.plugin_timeout)
}

/// Code 11 for a daemon that accepted the call but did not answer within `wait`.
pub fn no_answer(socket: &str, wait: Duration) -> CniError {
    CniError::new(
        codes::TRY_AGAIN_LATER,
        format!(
            "the braid daemon at {socket} accepted the call but did not answer within {} s \
             (daemonWaitSeconds plus pluginTimeout): it may be stopped, frozen or overloaded; \
             check the braid DaemonSet (or `braidctl daemon`) on this node and try again",
            wait.as_secs_f64()
        ),
    )
}

/// Why the daemon's answer to a DEL cannot stand, so that the shim replays the record: a
/// failure that is not a CNI error document with a code (an empty or broken answer), or one
/// with code 999 (the daemon could not serve it). `None`: the answer is final.
pub fn del_answer_refused(response: &CniResponse) -> Option<String> {
    if response.exit_code == 0 {
        return None;
    }
    let code = serde_json::from_slice::<Value>(&response.stdout)
        .ok()
        .and_then(|doc| doc.get("code").and_then(Value::as_u64));
    match code {
        Some(code) if code == u64::from(codes::INTERNAL) => {
            Some(format!("it answered code {code}"))
        }
        Some(_) => None,
        None => Some(format!(
            "it failed (exit status {}) without a CNI error",
            response.exit_code
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn answer(exit_code: u8, stdout: &[u8]) -> CniResponse {
        CniResponse {
            exit_code,
            stdout: Vec::from(stdout),
        }
    }

    #[test]
    fn a_del_answer_stands_unless_it_is_999_or_no_cni_error() {
        assert_eq!(del_answer_refused(&answer(0, b"")), None);
        assert_eq!(del_answer_refused(&answer(0, b"not json")), None);
        assert_eq!(
            del_answer_refused(&answer(1, br#"{"code": 100, "msg": "no"}"#)),
            None
        );
        assert_eq!(
            del_answer_refused(&answer(1, br#"{"code": 11, "msg": "later"}"#)),
            None
        );
        for refused in [
            answer(1, br#"{"code": 999, "msg": "boom"}"#),
            answer(1, b""),
            answer(2, b"{\"code\": \"100\"}"),
            answer(1, b"[]"),
            answer(1, b"{\"code\": 1"),
        ] {
            assert!(del_answer_refused(&refused).is_some(), "{refused:?}");
        }
    }

    #[test]
    fn the_answer_wait_is_the_daemon_wait_plus_the_plugin_deadline() {
        let settings = crate::settings::parse(
            br#"{"type": "braid", "daemonWaitSeconds": 2, "pluginTimeout": 3.5}"#,
        )
        .unwrap();
        assert_eq!(answer_wait(&settings), Duration::from_millis(5500));
        let huge = crate::settings::parse(
            br#"{"type": "braid", "daemonWaitSeconds": 1e300, "pluginTimeout": 1e300}"#,
        )
        .unwrap();
        assert_eq!(answer_wait(&huge), Duration::from_secs(2_000_000_000));
    }

    #[test]
    fn no_answer_is_code_11_naming_the_socket_and_the_wait() {
        let err = no_answer("/run/braid/braid.sock", Duration::from_millis(1500));
        assert_eq!(err.code, codes::TRY_AGAIN_LATER);
        assert!(err.msg.contains("/run/braid/braid.sock"));
        assert!(err.msg.contains("within 1.5 s"));
    }
}
