//! IP addresses and `address/prefix` values of results, printed as libcni re-marshals them
//! (CNI spec, Section 5, "Result Types"): Go's canonical text (lower case, `::` compression,
//! IPv4 dotted, an IPv4-mapped IPv6 address printed as IPv4) with the host bits of a prefix
//! kept.
use std::fmt;
use std::net::IpAddr;

/// An IP address; an IPv4-mapped IPv6 address is held as IPv4, as Go's `To4()` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ip(IpAddr);

impl Ip {
    /// Parses an address (no zone, no prefix).
    pub(super) fn parse(text: &str) -> Option<Self> {
        text.parse::<IpAddr>().ok().map(Self::from_addr)
    }

    /// Folds an IPv4-mapped IPv6 address to IPv4.
    fn from_addr(addr: IpAddr) -> Self {
        match addr {
            IpAddr::V6(v6) => Self(v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)),
            IpAddr::V4(_) => Self(addr),
        }
    }

    /// Whether Go's `To4()` would succeed: IPv4 or IPv4-mapped.
    pub(super) fn is_v4(self) -> bool {
        self.0.is_ipv4()
    }
}

impl fmt::Display for Ip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Rust prints IPv6 per RFC 5952 like Go does; mapped addresses never reach here as V6.
        write!(f, "{}", self.0)
    }
}

/// An address with a prefix length, host bits kept (`10.1.0.5/16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cidr {
    ip: Ip,
    prefix: u32,
}

impl Cidr {
    /// Parses `address/prefix` as Go's `net.ParseCIDR` does.
    pub(super) fn parse(text: &str) -> Option<Self> {
        let (addr, prefix) = text.rsplit_once('/')?;
        if prefix.is_empty() || prefix.len() > 10 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let prefix: u32 = prefix.parse().ok()?;
        let raw: IpAddr = addr.parse().ok()?;
        let bits = if raw.is_ipv4() { 32 } else { 128 };
        if prefix > bits {
            return None;
        }
        let ip = Ip::from_addr(raw);
        // Go prints a mapped address as IPv4 with the last 32 bits of its 128-bit mask.
        let prefix = if raw.is_ipv6() && ip.is_v4() {
            prefix.saturating_sub(96)
        } else {
            prefix
        };
        Some(Self { ip, prefix })
    }

    /// Whether the address is IPv4 (or IPv4-mapped).
    pub(super) fn is_v4(self) -> bool {
        self.ip.is_v4()
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.ip, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(text: &str) -> Option<String> {
        Cidr::parse(text).map(|c| c.to_string())
    }

    #[test]
    fn prints_go_canonical_text() {
        assert_eq!(
            cidr("ABCD:1234:FFFF:0:0:0:0:CDDE/64").as_deref(),
            Some("abcd:1234:ffff::cdde/64")
        );
        assert_eq!(cidr("15.5.6.8/24").as_deref(), Some("15.5.6.8/24"));
        assert_eq!(cidr("::ffff:1.2.3.4/120").as_deref(), Some("1.2.3.4/24"));
        assert_eq!(
            cidr("1:0:1:1:1:1:1:1/64").as_deref(),
            Some("1:0:1:1:1:1:1:1/64")
        );
        assert_eq!(
            cidr("1:0:0:1:0:0:1:1/64").as_deref(),
            Some("1::1:0:0:1:1/64")
        );
        assert_eq!(
            Ip::parse("::ffff:10.0.0.1")
                .map(|i| i.to_string())
                .as_deref(),
            Some("10.0.0.1")
        );
    }

    #[test]
    fn refuses_what_go_refuses() {
        for bad in [
            "10.0.0.1",
            "10.0.0.1/33",
            "::/129",
            "10.0.0.01/8",
            "fe80::1%eth0/64",
            "/8",
            "1.2.3.4/",
            "x/1",
        ] {
            assert_eq!(cidr(bad), None, "{bad}");
        }
        assert!(Ip::parse("1.2.3.4/8").is_none());
    }
}
