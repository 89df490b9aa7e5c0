//! The route type: one Go type shared by every result family in libcni, so the 1.1.0 route
//! extras decode (and survive) in every family except on the way to 0.1.0/0.2.0.
use serde_json::{Map, Value};

use super::address::{Cidr, Ip};
use super::emit::{put_nonzero, put_opt};
use super::fields::Fields;
use crate::error::Result;

/// A route with the 1.1.0 extras; `table` and `scope` are kept when 0, the others are not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Route {
    pub dst: Cidr,
    pub gw: Option<Ip>,
    pub mtu: i64,
    pub advmss: i64,
    pub priority: i64,
    pub table: Option<i64>,
    pub scope: Option<i64>,
}

impl Route {
    pub(super) fn decode(f: Fields<'_>) -> Result<Self> {
        Ok(Self {
            dst: f.cidr("dst")?,
            gw: f.ip("gw")?,
            mtu: f.integer("mtu")?.unwrap_or(0),
            advmss: f.integer("advmss")?.unwrap_or(0),
            priority: f.integer("priority")?.unwrap_or(0),
            table: f.integer("table")?,
            scope: f.integer("scope")?,
        })
    }

    /// Keeps only `dst` and `gw`, as the conversion to 0.1.0/0.2.0 does.
    pub(super) fn dst_and_gw(&self) -> Self {
        Self {
            dst: self.dst,
            gw: self.gw,
            mtu: 0,
            advmss: 0,
            priority: 0,
            table: None,
            scope: None,
        }
    }

    pub(super) fn encode(&self) -> Value {
        let mut m = Map::new();
        m.insert("dst".into(), self.dst.to_string().into());
        put_opt(&mut m, "gw", self.gw.map(|g| g.to_string().into()));
        put_nonzero(&mut m, "mtu", self.mtu);
        put_nonzero(&mut m, "advmss", self.advmss);
        put_nonzero(&mut m, "priority", self.priority);
        put_opt(&mut m, "table", self.table.map(Value::from));
        put_opt(&mut m, "scope", self.scope.map(Value::from));
        Value::Object(m)
    }
}
