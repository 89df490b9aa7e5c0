//! Netlink framing: message headers, attributes (`rtattr`) and acknowledgements, in host byte
//! order as netlink wants. No system calls here; everything is tested with plain `cargo test`.

use crate::error::NetnsError;

/// Size of `struct nlmsghdr`.
pub const NLMSG_HDRLEN: usize = 16;
/// An acknowledgement or error (`struct nlmsgerr`).
pub const NLMSG_ERROR: u16 = 2;
/// The end of a multi-part (dump) reply.
pub const NLMSG_DONE: u16 = 3;

pub const NLM_F_REQUEST: u16 = 0x1;
pub const NLM_F_ACK: u16 = 0x4;
pub const NLM_F_DUMP: u16 = 0x300;
pub const NLM_F_REPLACE: u16 = 0x100;
pub const NLM_F_EXCL: u16 = 0x200;
pub const NLM_F_CREATE: u16 = 0x400;
/// In an acknowledgement: the original request's payload was left out.
const NLM_F_CAPPED: u16 = 0x100;
/// In an acknowledgement: extended-ack attributes follow.
const NLM_F_ACK_TLVS: u16 = 0x200;
/// The extended-ack attribute carrying the kernel's text.
const NLMSGERR_ATTR_MSG: u16 = 1;
/// Attribute type bits (the top two bits are the nested and byte-order flags).
const NLA_TYPE_MASK: u16 = 0x3fff;
const RTA_HDRLEN: usize = 4;

/// Rounds `len` up to netlink's 4-byte alignment.
pub const fn align(len: usize) -> usize {
    (len + 3) & !3
}

/// A request being built: header, family structure, then attributes.
#[derive(Debug)]
pub struct MessageBuilder {
    buf: Vec<u8>,
}

impl MessageBuilder {
    /// Starts a message of type `kind` with `flags`; length and sequence are set by `finish`.
    pub fn new(kind: u16, flags: u16) -> Self {
        let mut buf = Vec::with_capacity(128);
        buf.extend_from_slice(&0u32.to_ne_bytes());
        buf.extend_from_slice(&kind.to_ne_bytes());
        buf.extend_from_slice(&flags.to_ne_bytes());
        buf.extend_from_slice(&[0; 8]);
        Self { buf }
    }

    /// Appends raw bytes (a family structure), padded to alignment.
    pub fn push(&mut self, data: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(data);
        self.buf.resize(align(self.buf.len()), 0);
        self
    }

    /// Appends one attribute, padded to alignment.
    pub fn attr(&mut self, kind: u16, value: &[u8]) -> &mut Self {
        let len = u16::try_from(RTA_HDRLEN + value.len()).unwrap_or(u16::MAX);
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.push(value)
    }

    /// Appends a `u32` attribute.
    pub fn attr_u32(&mut self, kind: u16, value: u32) -> &mut Self {
        self.attr(kind, &value.to_ne_bytes())
    }

    /// The finished message, its length and sequence number filled in.
    pub fn finish(mut self, seq: u32) -> Vec<u8> {
        let len = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        self.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
        self.buf
    }
}

/// One message of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    pub kind: u16,
    pub flags: u16,
    pub seq: u32,
    pub payload: &'a [u8],
}

fn read_u16(buf: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([buf[at], buf[at + 1]])
}

pub(crate) fn read_u32(buf: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
}

/// Splits a datagram into its messages.
pub fn parse_messages(mut buf: &[u8]) -> Result<Vec<Message<'_>>, NetnsError> {
    let mut out = Vec::new();
    while buf.len() >= NLMSG_HDRLEN {
        let len = read_u32(buf, 0) as usize;
        if len < NLMSG_HDRLEN || len > buf.len() {
            return Err(NetnsError::Malformed(format!(
                "message length {len} of {}",
                buf.len()
            )));
        }
        out.push(Message {
            kind: read_u16(buf, 4),
            flags: read_u16(buf, 6),
            seq: read_u32(buf, 8),
            payload: &buf[NLMSG_HDRLEN..len],
        });
        buf = &buf[align(len).min(buf.len())..];
    }
    Ok(out)
}

/// The attributes of a payload that starts after a family structure of `skip` bytes.
pub fn parse_attributes(payload: &[u8], skip: usize) -> Result<Vec<(u16, &[u8])>, NetnsError> {
    let mut buf = payload.get(align(skip)..).unwrap_or_default();
    let mut out = Vec::new();
    while buf.len() >= RTA_HDRLEN {
        let len = usize::from(read_u16(buf, 0));
        if len < RTA_HDRLEN || len > buf.len() {
            return Err(NetnsError::Malformed(format!(
                "attribute length {len} of {}",
                buf.len()
            )));
        }
        out.push((read_u16(buf, 2) & NLA_TYPE_MASK, &buf[RTA_HDRLEN..len]));
        buf = &buf[align(len).min(buf.len())..];
    }
    Ok(out)
}

/// Finds the first attribute of type `kind`.
pub fn find_attr<'a>(attrs: &[(u16, &'a [u8])], kind: u16) -> Option<&'a [u8]> {
    attrs.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v)
}

/// Reads a `u32` attribute value.
pub fn attr_u32(value: &[u8]) -> Option<u32> {
    (value.len() >= 4).then(|| read_u32(value, 0))
}

/// Reads a NUL-terminated string attribute value.
pub fn attr_string(value: &[u8]) -> String {
    let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
    String::from_utf8_lossy(&value[..end]).into_owned()
}

/// An acknowledgement: `errno` 0 for success, otherwise the positive error number, plus the
/// kernel's extended-ack text when it sent one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    pub errno: i32,
    pub message: Option<String>,
}

/// Decodes an `NLMSG_ERROR` message.
pub fn parse_ack(msg: &Message<'_>) -> Result<Ack, NetnsError> {
    let p = msg.payload;
    if p.len() < 4 + NLMSG_HDRLEN {
        return Err(NetnsError::Malformed(format!(
            "acknowledgement of {} bytes",
            p.len()
        )));
    }
    let errno = -i32::from_ne_bytes([p[0], p[1], p[2], p[3]]);
    let original_len = read_u32(p, 4) as usize;
    let echoed = if msg.flags & NLM_F_CAPPED == 0 {
        original_len
    } else {
        NLMSG_HDRLEN
    };
    let message = if msg.flags & NLM_F_ACK_TLVS == 0 {
        None
    } else {
        let attrs = parse_attributes(p.get(4..).unwrap_or_default(), echoed)?;
        find_attr(&attrs, NLMSGERR_ATTR_MSG)
            .map(attr_string)
            .filter(|m| !m.is_empty())
    };
    Ok(Ack { errno, message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_sets_length_sequence_and_pads_attributes() {
        let mut b = MessageBuilder::new(26, NLM_F_REQUEST | NLM_F_ACK);
        b.push(&[2, 0, 0]).attr(5, &[10, 0, 0, 1]).attr(3, b"ab\0");
        let bytes = b.finish(7);
        assert_eq!(bytes.len(), 16 + 4 + 8 + 8);
        assert_eq!(read_u32(&bytes, 0) as usize, bytes.len());
        assert_eq!(read_u16(&bytes, 4), 26);
        assert_eq!(read_u16(&bytes, 6), 5);
        assert_eq!(read_u32(&bytes, 8), 7);
        assert_eq!(&bytes[16..20], &[2, 0, 0, 0]);
        assert_eq!(read_u16(&bytes, 20), 8);
        assert_eq!(&bytes[24..28], &[10, 0, 0, 1]);
        assert_eq!(read_u16(&bytes, 28), 7);
        assert_eq!(&bytes[32..36], b"ab\0\0");
    }

    #[test]
    fn built_messages_parse_back() {
        let mut b = MessageBuilder::new(24, NLM_F_REQUEST);
        b.push(&[0; 12]).attr_u32(6, 1024).attr(1, &[0xfe, 0x80]);
        let mut datagram = b.finish(1);
        datagram.extend(MessageBuilder::new(NLMSG_DONE, 2).finish(1));
        let msgs = parse_messages(&datagram).unwrap();
        assert_eq!(msgs.len(), 2);
        assert_eq!((msgs[0].kind, msgs[0].seq), (24, 1));
        assert_eq!(msgs[1].kind, NLMSG_DONE);
        let attrs = parse_attributes(msgs[0].payload, 12).unwrap();
        assert_eq!(attrs.len(), 2);
        assert_eq!(find_attr(&attrs, 6).and_then(attr_u32), Some(1024));
        assert_eq!(find_attr(&attrs, 1), Some(&[0xfe, 0x80][..]));
        assert_eq!(find_attr(&attrs, 9), None);
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let mut bytes = MessageBuilder::new(24, 0).finish(1);
        bytes[0] = 200;
        assert!(parse_messages(&bytes).is_err());
        assert!(parse_attributes(&[9, 0, 1, 0, 1], 0).is_err());
        assert!(parse_attributes(&[2, 0, 1, 0], 0).is_err());
        let short = Message {
            kind: NLMSG_ERROR,
            flags: 0,
            seq: 1,
            payload: &[0; 8],
        };
        assert!(parse_ack(&short).is_err());
    }

    fn ack_payload(errno: i32, text: Option<&str>) -> Vec<u8> {
        let mut p = (-errno).to_ne_bytes().to_vec();
        let original = MessageBuilder::new(24, 5).finish(3);
        p.extend_from_slice(&original);
        if let Some(t) = text {
            let mut b = MessageBuilder::new(0, 0);
            b.attr(NLMSGERR_ATTR_MSG, format!("{t}\0").as_bytes());
            p.extend_from_slice(&b.finish(0)[NLMSG_HDRLEN..]);
        }
        p
    }

    #[test]
    fn acknowledgements_decode_errno_and_extended_text() {
        let plain = ack_payload(0, None);
        let ok = Message {
            kind: NLMSG_ERROR,
            flags: 0,
            seq: 3,
            payload: &plain,
        };
        assert_eq!(
            parse_ack(&ok).unwrap(),
            Ack {
                errno: 0,
                message: None
            }
        );

        let with_text = ack_payload(101, Some("Nexthop has invalid gateway"));
        let flags = NLM_F_CAPPED | NLM_F_ACK_TLVS;
        let err = Message {
            kind: NLMSG_ERROR,
            flags,
            seq: 3,
            payload: &with_text,
        };
        let ack = parse_ack(&err).unwrap();
        assert_eq!(ack.errno, 101);
        assert_eq!(ack.message.as_deref(), Some("Nexthop has invalid gateway"));
    }

    #[test]
    fn strings_stop_at_nul() {
        assert_eq!(attr_string(b"eth0\0\0"), "eth0");
        assert_eq!(attr_string(b"lo"), "lo");
        assert_eq!(attr_u32(&[1, 0]), None);
    }
}
