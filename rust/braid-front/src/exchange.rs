//! The front's one exchange with the daemon (`docs/protocol.md`): the request frame sent and
//! the answer read, every send and read bounded by one deadline (`braid_wire::answer`), so a
//! daemon that accepts and then stops, freezes or deadlocks never holds the front.

use alloc::string::String;
use core::time::Duration;

use braid_wire::wire::{
    body_length, decode_cni_response, not_protocol_one, talk_failed, CniResponse, HEADER_BYTES,
};
use braid_wire::CniError;

use crate::{describe, sys};

/// How long the front's one connection attempt may wait for a full listen backlog.
pub const CONNECT_TIMEOUT_MS: u64 = 1000;

/// Why an exchange gave no answer: none came in time, or the connection or the answer broke.
pub enum NoAnswer {
    /// Nothing within the wait: the request not taken, or no answer to it.
    Silent,
    /// Code 11: the connection broke off, or the answer is not protocol 1.
    Broken(CniError),
}

/// Sends the request frame and reads the daemon's answer, all within `wait`.
pub fn exchange(fd: i32, outgoing: &[u8], wait: Duration) -> Result<CniResponse, NoAnswer> {
    // std's words for a stream that ended early, as braid-full reports it.
    let broken = |what: &str, why: isize| match why {
        TIMED_OUT => NoAnswer::Silent,
        0 if what != SENDING => NoAnswer::Broken(talk_failed(
            what,
            String::from("failed to fill whole buffer"),
        )),
        _ => NoAnswer::Broken(talk_failed(what, describe(why))),
    };
    let mut clock = Deadline::new(fd, wait);
    let mut left = outgoing;
    while !left.is_empty() {
        let sent = clock.call(sys::Timeout::Send, || sys::send(fd, left));
        if sent <= 0 {
            return Err(broken(SENDING, sent));
        }
        left = &left[sent.unsigned_abs()..];
    }
    let mut header = [0_u8; HEADER_BYTES];
    read_exact(&mut clock, &mut header)
        .map_err(|why| broken("it closed the connection without an answer", why))?;
    let mut body = alloc::vec![0_u8; body_length(header).map_err(NoAnswer::Broken)?];
    read_exact(&mut clock, &mut body).map_err(|why| broken("its answer was cut short", why))?;
    decode_cni_response(&body).map_err(|err| NoAnswer::Broken(not_protocol_one(&err)))
}

const SENDING: &str = "sending the request failed";
/// What [`Deadline::call`] answers once the deadline has passed (an errno no call returns).
const TIMED_OUT: isize = isize::MIN;
/// How far past the deadline one blocked call may end (the timeouts are re-armed only when
/// they exceed what is left by more than this, saving a system call per read).
const SLACK_MICROS: u64 = 10_000;

/// One deadline over a connection's sends and reads, each bounded by its socket timeout
/// (`SO_SNDTIMEO`, `SO_RCVTIMEO`), armed to what is left of the wait.
struct Deadline {
    fd: i32,
    end: u64,
    /// The send and receive timeouts armed now, in microseconds (`u64::MAX`: none).
    armed: [u64; 2],
}

impl Deadline {
    fn new(fd: i32, wait: Duration) -> Self {
        let wait = u64::try_from(wait.as_micros()).unwrap_or(u64::MAX);
        Self {
            fd,
            end: sys::monotonic_micros().saturating_add(wait),
            // `connect_unix` left the send timeout at the connection's.
            armed: [CONNECT_TIMEOUT_MS * 1000, u64::MAX],
        }
    }

    /// `call` (a send or a read on the connection) with `which` timeout armed to what is
    /// left; retried while it times out early, [`TIMED_OUT`] once the deadline has passed.
    fn call(&mut self, which: sys::Timeout, mut call: impl FnMut() -> isize) -> isize {
        let slot = usize::from(which == sys::Timeout::Receive);
        loop {
            let left = self.end.saturating_sub(sys::monotonic_micros());
            if left == 0 {
                return TIMED_OUT;
            }
            if self.armed[slot] > left.saturating_add(SLACK_MICROS) {
                let set = sys::set_timeout(self.fd, which, left);
                if set < 0 {
                    return set;
                }
                self.armed[slot] = left;
            }
            match call() {
                ret if ret == -sys::EAGAIN => {}
                ret => return ret,
            }
        }
    }
}

/// Fills `buf` from the connection; the errno (or [`TIMED_OUT`], or 0 for its end) otherwise.
fn read_exact(clock: &mut Deadline, buf: &mut [u8]) -> Result<(), isize> {
    let fd = clock.fd;
    let mut at = 0;
    while at < buf.len() {
        match clock.call(sys::Timeout::Receive, || sys::read(fd, &mut buf[at..])) {
            n if n <= 0 => return Err(n),
            n => at += n.unsigned_abs(),
        }
    }
    Ok(())
}
