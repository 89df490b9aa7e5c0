//! A `NETLINK_ROUTE` socket: send one request, collect its dump or its acknowledgement.
//!
//! The socket belongs to the network namespace of the thread that opened it, so it is opened
//! by the namespace worker (see [`crate::enter`]).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::error::NetnsError;
use crate::message::{parse_ack, parse_messages, MessageBuilder, NLMSG_DONE, NLMSG_ERROR};

const NETLINK_CAP_ACK: libc::c_int = 10;
const NETLINK_EXT_ACK: libc::c_int = 11;
/// A dump was interrupted by a change; its content may be inconsistent.
const NLM_F_DUMP_INTR: u16 = 0x10;
const RECV_BUFFER: usize = 1 << 16;
const DUMP_ATTEMPTS: usize = 5;

/// One message of a reply, owned.
#[derive(Debug, Clone)]
pub struct Reply {
    pub kind: u16,
    pub payload: Vec<u8>,
}

/// An open rtnetlink socket with its own sequence numbers.
#[derive(Debug)]
pub struct NetlinkSocket {
    fd: OwnedFd,
    seq: u32,
}

fn os(op: &'static str) -> NetnsError {
    NetnsError::Os {
        op,
        source: io::Error::last_os_error(),
    }
}

fn set_int_option(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> bool {
    let len = libc::socklen_t::try_from(size_of::<libc::c_int>()).unwrap_or(4);
    // SAFETY: `fd` is an open socket; the option value points to a live `c_int` of `len` bytes.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            std::ptr::addr_of!(value).cast(),
            len,
        )
    };
    rc == 0
}

/// The error a dump may carry in its `NLMSG_DONE` message.
fn done_status(op: &'static str, payload: &[u8]) -> Result<(), NetnsError> {
    match payload.get(..4) {
        Some(b) if i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) < 0 => {
            let errno = -i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            Err(NetnsError::Kernel {
                op,
                source: io::Error::from_raw_os_error(errno),
                message: None,
            })
        }
        _ => Ok(()),
    }
}

impl NetlinkSocket {
    /// Opens a socket in the calling thread's network namespace.
    pub fn open() -> Result<Self, NetnsError> {
        // SAFETY: plain system call with constant arguments; the result is checked.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if raw < 0 {
            return Err(os("socket(NETLINK_ROUTE)"));
        }
        // SAFETY: `raw` is a descriptor we just opened and nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // Extended acks only improve messages; kernels without them still work.
        set_int_option(&fd, libc::SOL_NETLINK, NETLINK_EXT_ACK, 1);
        set_int_option(&fd, libc::SOL_NETLINK, NETLINK_CAP_ACK, 1);
        let timeout = libc::timeval {
            tv_sec: 10,
            tv_usec: 0,
        };
        let len = libc::socklen_t::try_from(size_of::<libc::timeval>()).unwrap_or(16);
        // SAFETY: `fd` is open; the value points to a live `timeval` of `len` bytes.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                std::ptr::addr_of!(timeout).cast(),
                len,
            )
        };
        if rc != 0 {
            return Err(os("setsockopt(SO_RCVTIMEO)"));
        }
        Ok(Self { fd, seq: 0 })
    }

    fn send(&mut self, request: MessageBuilder) -> Result<u32, NetnsError> {
        self.seq = self.seq.wrapping_add(1);
        let bytes = request.finish(self.seq);
        // SAFETY: a zeroed `sockaddr_nl` is valid; pid 0 and no groups address the kernel.
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = u16::try_from(libc::AF_NETLINK).unwrap_or(16);
        let addr_len = libc::socklen_t::try_from(size_of::<libc::sockaddr_nl>()).unwrap_or(12);
        // SAFETY: `bytes` is a live buffer of the given length and `kernel` a live address of
        // `addr_len` bytes; the result is checked.
        let sent = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                0,
                std::ptr::addr_of!(kernel).cast(),
                addr_len,
            )
        };
        if usize::try_from(sent).ok() != Some(bytes.len()) {
            return Err(os("sendto(netlink)"));
        }
        Ok(self.seq)
    }

    /// Receives one datagram from the kernel into `buf`; returns its length.
    fn recv(&self, buf: &mut [u8]) -> Result<usize, NetnsError> {
        loop {
            // SAFETY: a zeroed `sockaddr_nl` is valid storage for the sender's address.
            let mut from: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
            let mut from_len =
                libc::socklen_t::try_from(size_of::<libc::sockaddr_nl>()).unwrap_or(12);
            // SAFETY: `buf` is writable for its length; `from`/`from_len` describe live storage.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_TRUNC,
                    std::ptr::addr_of_mut!(from).cast(),
                    std::ptr::addr_of_mut!(from_len),
                )
            };
            let Ok(n) = usize::try_from(n) else {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(os("recvfrom(netlink)"));
            };
            if n > buf.len() {
                return Err(NetnsError::Malformed(format!(
                    "datagram of {n} bytes truncated"
                )));
            }
            if from.nl_pid == 0 {
                return Ok(n);
            }
        }
    }

    /// Sends `request` and collects replies until the end of the dump or the acknowledgement.
    /// `Ok(None)` means the dump was interrupted by a concurrent change.
    fn exchange(
        &mut self,
        op: &'static str,
        request: MessageBuilder,
    ) -> Result<Option<Vec<Reply>>, NetnsError> {
        let seq = self.send(request)?;
        let mut buf = vec![0u8; RECV_BUFFER];
        let mut out = Vec::new();
        let mut interrupted = false;
        loop {
            let n = self.recv(&mut buf)?;
            for msg in parse_messages(&buf[..n])?
                .into_iter()
                .filter(|m| m.seq == seq)
            {
                interrupted |= msg.flags & NLM_F_DUMP_INTR != 0;
                match msg.kind {
                    NLMSG_DONE => {
                        done_status(op, msg.payload)?;
                        return Ok((!interrupted).then_some(out));
                    }
                    NLMSG_ERROR => {
                        let ack = parse_ack(&msg)?;
                        if ack.errno == 0 {
                            return Ok(Some(out));
                        }
                        let source = io::Error::from_raw_os_error(ack.errno);
                        return Err(NetnsError::Kernel {
                            op,
                            source,
                            message: ack.message,
                        });
                    }
                    kind => out.push(Reply {
                        kind,
                        payload: msg.payload.to_vec(),
                    }),
                }
            }
        }
    }

    /// A dump request: every reply message, retried while the kernel reports it inconsistent.
    pub fn dump(
        &mut self,
        op: &'static str,
        build: impl Fn() -> MessageBuilder,
    ) -> Result<Vec<Reply>, NetnsError> {
        for _ in 0..DUMP_ATTEMPTS {
            if let Some(replies) = self.exchange(op, build())? {
                return Ok(replies);
            }
        }
        Err(NetnsError::Kernel {
            op,
            source: io::Error::from_raw_os_error(libc::EINTR),
            message: None,
        })
    }

    /// A change request sent with `NLM_F_ACK`: succeeds when the kernel acknowledges it.
    pub fn execute(&mut self, op: &'static str, request: MessageBuilder) -> Result<(), NetnsError> {
        self.exchange(op, request).map(|_| ())
    }
}
