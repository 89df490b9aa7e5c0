//! The kernel side of [`crate::source_routing`]: installing, removing and checking one
//! interface's table, rules and metric inside a pod's namespace.

use std::collections::HashSet;

use crate::enter::socket_in_namespace;
use crate::error::NetnsError;
use crate::link::find_link;
use crate::rule::{self, dump_rules};
use crate::socket::NetlinkSocket;
use crate::source_routing::{
    delete_route, gateway_routes, is_braid_table, is_route, metric_of, metric_request,
    route_request, rule_sources, table_for, table_routes, SourceRouting, RULE_PRIORITY,
};

fn interface(sock: &mut NetlinkSocket, ifname: &str) -> Result<u32, NetnsError> {
    find_link(sock, ifname)?
        .map(|l| l.index)
        .ok_or_else(|| NetnsError::NoSuchLink {
            ifname: ifname.to_owned(),
        })
}

/// Gives every main-table route through `oif` that has a gateway the priority `metric`: a
/// copy with the new metric is added, then the old route deleted.
fn set_metric(sock: &mut NetlinkSocket, oif: u32, metric: u32) -> Result<(), NetnsError> {
    for route in gateway_routes(sock, oif)?
        .into_iter()
        .filter(|r| metric_of(r) != metric)
    {
        sock.execute("setting a route's metric", metric_request(&route, metric))?;
        delete_route(sock, &route)?;
    }
    Ok(())
}

/// Installs `routing` for `ifname` in the namespace at `netns`: its table's routes, then one
/// rule per address, then `metric` on its main-table gateway routes. Idempotent: what is
/// already there stays. Returns the table.
pub fn apply(
    netns: &str,
    ifname: &str,
    routing: &SourceRouting,
    metric: Option<u32>,
) -> Result<u32, NetnsError> {
    let mut sock = socket_in_namespace(netns)?;
    let oif = interface(&mut sock, ifname)?;
    let table = table_for(oif)?;
    for route in &routing.routes {
        sock.execute("adding a route", route_request(table, oif, route))?;
    }
    for (source, len) in rule_sources(routing) {
        let request = rule::add_request(source, len, table, RULE_PRIORITY);
        match sock.execute("adding a rule", request) {
            Err(e) if e.errno() == Some(libc::EEXIST) => {}
            other => other?,
        }
    }
    if let Some(metric) = metric {
        set_metric(&mut sock, oif, metric)?;
    }
    Ok(table)
}

/// Removes `ifname`'s rules and table routes from the namespace at `netns` (nothing when the
/// interface is gone: its routes went with it), then every rule of braid's table range that
/// points to an empty table (left by an interface that disappeared). Idempotent.
pub fn clear(netns: &str, ifname: &str) -> Result<(), NetnsError> {
    let mut sock = socket_in_namespace(netns)?;
    if let Some(link) = find_link(&mut sock, ifname)? {
        let table = table_for(link.index)?;
        for r in dump_rules(&mut sock)?.iter().filter(|r| r.table == table) {
            rule::delete(&mut sock, r)?;
        }
        for route in table_routes(&mut sock, table)? {
            delete_route(&mut sock, &route)?;
        }
    }
    let rules = dump_rules(&mut sock)?;
    let mut empty = HashSet::new();
    for r in rules.iter().filter(|r| is_braid_table(r.table)) {
        if empty.contains(&r.table) || table_routes(&mut sock, r.table)?.is_empty() {
            empty.insert(r.table);
            rule::delete(&mut sock, r)?;
        }
    }
    Ok(())
}

/// What is missing of `routing` (and `metric`) for `ifname` in the namespace at `netns`, one
/// sentence each; empty when everything is in place.
pub fn check(
    netns: &str,
    ifname: &str,
    routing: &SourceRouting,
    metric: Option<u32>,
) -> Result<Vec<String>, NetnsError> {
    let mut sock = socket_in_namespace(netns)?;
    let Some(link) = find_link(&mut sock, ifname)? else {
        return Ok(vec![format!("interface {ifname} is missing")]);
    };
    let (oif, table) = (link.index, table_for(link.index)?);
    let mut problems = Vec::new();
    let present = table_routes(&mut sock, table)?;
    for want in &routing.routes {
        if !present.iter().any(|r| is_route(r, want, oif)) {
            let via = want
                .gateway
                .map(|g| format!(" via {g}"))
                .unwrap_or_default();
            problems.push(format!(
                "route {}/{}{via} dev {ifname} is missing from table {table}",
                want.dst, want.dst_len
            ));
        }
    }
    let rules = dump_rules(&mut sock)?;
    for (source, len) in rule_sources(routing) {
        if !rules
            .iter()
            .any(|r| r.src == Some((source, len)) && r.table == table && !r.has_dst)
        {
            problems.push(format!("rule from {source} lookup {table} is missing"));
        }
    }
    if let Some(metric) = metric {
        for r in gateway_routes(&mut sock, oif)?
            .iter()
            .filter(|r| metric_of(r) != metric)
        {
            problems.push(format!(
                "route {}/{} via {} dev {ifname} has metric {}, not {metric}",
                r.dst,
                r.dst_len,
                r.gateway.map(|g| g.to_string()).unwrap_or_default(),
                metric_of(r)
            ));
        }
    }
    Ok(problems)
}
