//! libcni's emission rules for result fields: Go's `omitempty` drops empty strings and lists
//! and zero integers; optional pointers (`Some(0)`) are kept.
use serde_json::{Map, Value};

use super::route::Route;

pub(super) fn put_opt(m: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        m.insert(key.into(), v);
    }
}

pub(super) fn put_nonzero(m: &mut Map<String, Value>, key: &str, value: i64) {
    if value != 0 {
        m.insert(key.into(), value.into());
    }
}

pub(super) fn put_text(m: &mut Map<String, Value>, key: &str, value: &str) {
    if !value.is_empty() {
        m.insert(key.into(), value.into());
    }
}

pub(super) fn put_list(m: &mut Map<String, Value>, key: &str, items: &[String]) {
    put_items(
        m,
        key,
        items.iter().map(|s| Value::from(s.as_str())).collect(),
    );
}

pub(super) fn put_items(m: &mut Map<String, Value>, key: &str, items: Vec<Value>) {
    if !items.is_empty() {
        m.insert(key.into(), Value::Array(items));
    }
}

pub(super) fn put_routes(m: &mut Map<String, Value>, routes: &[Route]) {
    put_items(m, "routes", routes.iter().map(Route::encode).collect());
}
