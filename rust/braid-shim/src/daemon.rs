//! Talking to the daemon over its unix socket (`docs/protocol.md`): one request frame, one
//! response frame per connection.

use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use braid_cni::wire::{
    body_length, decode_cni_response, encode_request, frame, not_protocol_one, talk_failed,
    CniResponse, Request, HEADER_BYTES, SOCKET_NAME,
};
use braid_cni::{codes, CniError};
use socket2::{Domain, SockAddr, Socket, Type};

/// The pause between two connection attempts while waiting for the daemon.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// How long one connection attempt may take (a full listen backlog blocks `connect`).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The daemon's socket in `socket_dir`.
pub fn socket_path(socket_dir: &Path) -> PathBuf {
    socket_dir.join(SOCKET_NAME)
}

/// One connection attempt bounded by `timeout`.
///
/// A unix `connect` blocks only while the daemon's listen backlog is full; Linux bounds that
/// wait by the socket's send timeout, so no helper thread is needed (starting one cost the
/// shim about 0.2 ms per call). The timeout is cleared once connected.
pub fn connect(socket: &Path, timeout: Duration) -> io::Result<UnixStream> {
    let sock = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    sock.set_write_timeout(Some(timeout.max(Duration::from_millis(1))))?;
    match sock.connect(&SockAddr::unix(socket)?) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no connection within {} s (the daemon's backlog is full)",
                    timeout.as_secs_f64()
                ),
            ))
        }
        Err(err) => return Err(err),
    }
    sock.set_write_timeout(None)?;
    Ok(UnixStream::from(OwnedFd::from(sock)))
}

/// Connects, retrying with short pauses until `wait` has passed; the last error otherwise.
pub fn connect_waiting(socket: &Path, wait: Duration) -> io::Result<UnixStream> {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match connect(
            socket,
            left.clamp(Duration::from_millis(10), CONNECT_TIMEOUT),
        ) {
            Ok(stream) => return Ok(stream),
            Err(err) if left.is_zero() => return Err(err),
            Err(_) => thread::sleep(RETRY_PAUSE.min(left)),
        }
    }
}

/// The request frame, encoded before connecting: the daemon, woken by the connection, finds
/// the whole frame already there.
pub fn request_frame(request: &Request) -> Result<Vec<u8>, CniError> {
    frame(&encode_request(request))
}

/// Why an exchange gave no answer: none came in time, or the connection or the answer broke.
#[derive(Debug)]
pub enum NoAnswer {
    /// Nothing within the wait: the request not taken, or no answer to it.
    Silent,
    /// Code 11: the connection broke off, or the answer is not protocol 1.
    Broken(CniError),
}

/// Sends a request frame (`request_frame`) and reads the response to a CNI call, all within
/// `wait` (a daemon that accepts and then stops, freezes or deadlocks never holds the shim).
pub fn exchange(
    stream: UnixStream,
    outgoing: &[u8],
    wait: Duration,
) -> Result<CniResponse, NoAnswer> {
    let mut conn = Bounded {
        stream,
        deadline: Instant::now().checked_add(wait),
    };
    conn.write_all(outgoing)
        .and_then(|()| conn.flush())
        .map_err(|err| broken("sending the request failed", &err))?;
    let mut header = [0_u8; HEADER_BYTES];
    conn.read_exact(&mut header)
        .map_err(|err| broken("it closed the connection without an answer", &err))?;
    let mut body = vec![0_u8; body_length(header).map_err(NoAnswer::Broken)?];
    conn.read_exact(&mut body)
        .map_err(|err| broken("its answer was cut short", &err))?;
    decode_cni_response(&body).map_err(|err| NoAnswer::Broken(not_protocol_one(&err)))
}

/// A connection whose every read and write ends by one deadline (`None`: none in practice).
struct Bounded {
    stream: UnixStream,
    deadline: Option<Instant>,
}

impl Bounded {
    /// What is left until the deadline (`TimedOut` once it has passed).
    fn left(&self) -> io::Result<Option<Duration>> {
        let Some(deadline) = self.deadline else {
            return Ok(None);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        Ok(Some(left))
    }
}

impl Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.set_read_timeout(self.left()?)?;
        self.stream.read(buf)
    }
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.set_write_timeout(self.left()?)?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

/// A socket timeout (`WouldBlock`, `EAGAIN`) or the deadline passing is silence; anything
/// else broke the exchange.
fn broken(what: &str, err: &io::Error) -> NoAnswer {
    match err.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => NoAnswer::Silent,
        _ => NoAnswer::Broken(talk_failed(what, err.to_string())),
    }
}

/// Code 11 for a daemon that stayed unreachable: the socket, the wait, what to check.
pub fn unreachable(socket: &Path, wait: Duration, err: &io::Error) -> CniError {
    CniError::new(
        codes::TRY_AGAIN_LATER,
        format!(
            "the braid daemon is not reachable at {} after waiting {} s: check that the braid \
             DaemonSet (or `braidctl daemon`) is running on this node and that its \
             daemonSocketDir matches this configuration's daemonSocketDir",
            socket.display(),
            wait.as_secs_f64()
        ),
    )
    .with_details(err.to_string())
}
