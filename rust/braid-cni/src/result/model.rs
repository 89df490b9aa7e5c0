//! The result types of the three families (CNI spec, Section 5), decoded from JSON with libcni's
//! rules (unknown keys ignored, `null` as absent) and encoded as libcni marshals them.
use serde_json::{Map, Value};

use super::address::{Cidr, Ip};
use super::emit::{put_items, put_list, put_nonzero, put_opt, put_routes, put_text};
use super::fields::Fields;
use super::route::Route;
use crate::error::Result;

/// The three result families: one Go type each in libcni.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    /// 0.1.0 and 0.2.0: `ip4`/`ip6`.
    V020,
    /// 0.3.0, 0.3.1 and 0.4.0: `interfaces`/`ips` with `version`.
    V040,
    /// 1.0.0 and 1.1.0: `ips` without `version`, 1.1.0 interface and route extras.
    V100,
}

impl Family {
    /// The family of a known version, `None` for any other text.
    pub(super) fn of(version: &str) -> Option<Self> {
        match version {
            "0.1.0" | "0.2.0" => Some(Self::V020),
            "0.3.0" | "0.3.1" | "0.4.0" => Some(Self::V040),
            "1.0.0" | "1.1.0" => Some(Self::V100),
            _ => None,
        }
    }
}

/// The `dns` object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Dns {
    pub nameservers: Vec<String>,
    pub domain: String,
    pub search: Vec<String>,
    pub options: Vec<String>,
}

/// A 0.1.0/0.2.0 `ip4` or `ip6` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LegacyIp {
    pub ip: Cidr,
    pub gateway: Option<Ip>,
    pub routes: Vec<Route>,
}

/// A 0.1.0/0.2.0 result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct LegacyResult {
    pub ip4: Option<LegacyIp>,
    pub ip6: Option<LegacyIp>,
    pub dns: Dns,
}

/// An interface; the 1.1.0 fields stay empty in the 0.3.x/0.4.0 family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Interface {
    pub name: String,
    pub mac: String,
    pub mtu: i64,
    pub sandbox: String,
    pub socket_path: String,
    pub pci_id: String,
}

/// An `ips` entry; `version` is only meaningful in the 0.3.x/0.4.0 family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct IpConfig {
    pub version: String,
    pub interface: Option<i64>,
    pub address: Cidr,
    pub gateway: Option<Ip>,
}

/// A result of the 0.3.x/0.4.0 or the 1.x family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ModernResult {
    pub interfaces: Vec<Interface>,
    pub ips: Vec<IpConfig>,
    pub routes: Vec<Route>,
    pub dns: Dns,
}

impl Dns {
    fn decode(f: Fields<'_>) -> Result<Self> {
        Ok(Self {
            nameservers: f.strings("nameservers")?,
            domain: f.text("domain")?,
            search: f.strings("search")?,
            options: f.strings("options")?,
        })
    }

    fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    fn encode(&self) -> Value {
        let mut m = Map::new();
        put_list(&mut m, "nameservers", &self.nameservers);
        put_text(&mut m, "domain", &self.domain);
        put_list(&mut m, "search", &self.search);
        put_list(&mut m, "options", &self.options);
        Value::Object(m)
    }
}

impl LegacyResult {
    /// Decodes the fields of a 0.1.0/0.2.0 result.
    pub(super) fn decode(f: Fields<'_>) -> Result<Self> {
        Ok(Self {
            ip4: f.child("ip4", LegacyIp::decode)?,
            ip6: f.child("ip6", LegacyIp::decode)?,
            dns: dns_of(f)?,
        })
    }

    /// The result as libcni marshals it: `dns` always present.
    pub(super) fn encode(&self, version: &str) -> Value {
        let mut m = Map::new();
        m.insert("cniVersion".into(), version.into());
        put_opt(&mut m, "ip4", self.ip4.as_ref().map(LegacyIp::encode));
        put_opt(&mut m, "ip6", self.ip6.as_ref().map(LegacyIp::encode));
        m.insert("dns".into(), self.dns.encode());
        Value::Object(m)
    }
}

impl LegacyIp {
    fn decode(f: Fields<'_>) -> Result<Self> {
        Ok(Self {
            ip: f.cidr("ip")?,
            gateway: f.ip("gateway")?,
            routes: f.each("routes", Route::decode)?,
        })
    }

    fn encode(&self) -> Value {
        let mut m = Map::new();
        m.insert("ip".into(), self.ip.to_string().into());
        put_opt(
            &mut m,
            "gateway",
            self.gateway.map(|g| g.to_string().into()),
        );
        put_routes(&mut m, &self.routes);
        Value::Object(m)
    }
}

impl ModernResult {
    /// Decodes the fields of a result of `family` (0.3.x/0.4.0 or 1.x).
    pub(super) fn decode(f: Fields<'_>, family: Family) -> Result<Self> {
        Ok(Self {
            interfaces: f.each("interfaces", |i| Interface::decode(i, family))?,
            ips: f.each("ips", |i| IpConfig::decode(i, family))?,
            routes: f.each("routes", Route::decode)?,
            dns: dns_of(f)?,
        })
    }

    /// The result as libcni marshals it for `family`: `dns` always for 0.3.x/0.4.0, only when
    /// non-empty for 1.x; empty lists omitted.
    pub(super) fn encode(&self, version: &str, family: Family) -> Value {
        let mut m = Map::new();
        m.insert("cniVersion".into(), version.into());
        put_items(
            &mut m,
            "interfaces",
            self.interfaces.iter().map(|i| i.encode(family)).collect(),
        );
        put_items(
            &mut m,
            "ips",
            self.ips.iter().map(|i| i.encode(family)).collect(),
        );
        put_routes(&mut m, &self.routes);
        if family == Family::V040 || !self.dns.is_empty() {
            m.insert("dns".into(), self.dns.encode());
        }
        Value::Object(m)
    }
}

impl Interface {
    fn decode(f: Fields<'_>, family: Family) -> Result<Self> {
        let mut out = Self {
            name: f.text("name")?,
            mac: f.text("mac")?,
            sandbox: f.text("sandbox")?,
            ..Self::default()
        };
        if family == Family::V100 {
            out.mtu = f.integer("mtu")?.unwrap_or(0);
            out.socket_path = f.text("socketPath")?;
            out.pci_id = f.text("pciID")?;
        }
        Ok(out)
    }

    fn encode(&self, family: Family) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), self.name.clone().into());
        put_text(&mut m, "mac", &self.mac);
        if family == Family::V100 {
            put_nonzero(&mut m, "mtu", self.mtu);
        }
        put_text(&mut m, "sandbox", &self.sandbox);
        if family == Family::V100 {
            put_text(&mut m, "socketPath", &self.socket_path);
            put_text(&mut m, "pciID", &self.pci_id);
        }
        Value::Object(m)
    }
}

impl IpConfig {
    fn decode(f: Fields<'_>, family: Family) -> Result<Self> {
        let version = if family == Family::V040 {
            f.text("version")?
        } else {
            String::new()
        };
        Ok(Self {
            version,
            interface: f.integer("interface")?,
            address: f.cidr("address")?,
            gateway: f.ip("gateway")?,
        })
    }

    fn encode(&self, family: Family) -> Value {
        let mut m = Map::new();
        if family == Family::V040 {
            m.insert("version".into(), self.version.clone().into());
        }
        put_opt(&mut m, "interface", self.interface.map(Value::from));
        m.insert("address".into(), self.address.to_string().into());
        put_opt(
            &mut m,
            "gateway",
            self.gateway.map(|g| g.to_string().into()),
        );
        Value::Object(m)
    }
}

fn dns_of(f: Fields<'_>) -> Result<Dns> {
    Ok(f.child("dns", Dns::decode)?.unwrap_or_default())
}
