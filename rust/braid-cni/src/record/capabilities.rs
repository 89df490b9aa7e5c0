//! Capability arguments in a record (format 2): the runtime's once, at the top, and in each
//! entry only its own, which replace the runtime's of the same name (compared without regard
//! to case, as the plan merges an attachment's requests over the runtime's). Format 1 kept the
//! merged arguments in every entry, the runtime's (pod annotations included) repeated each time.

use serde_json::{Map, Value};

use crate::error::{CniError, Result};

/// An entry's capability arguments: the runtime's with the entry's own over them.
pub fn merged(runtime: &Map<String, Value>, own: &Map<String, Value>) -> Map<String, Value> {
    let replaced = |key: &String| own.keys().any(|mine| mine.eq_ignore_ascii_case(key));
    let mut all: Map<String, Value> = runtime
        .iter()
        .filter(|(key, _)| !replaced(key))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    all.extend(own.iter().map(|(key, value)| (key.clone(), value.clone())));
    all
}

/// How a record holds its entries' capability arguments `alls` (each the runtime's with the
/// entry's requests over them): the runtime's once, and for each entry those that differ from
/// the runtime's. When one of them would not merge back (arguments that lack one of the
/// runtime's), the record keeps them whole, as format 1 did, and no runtime's: [`merged`]
/// gives every entry's back either way.
pub fn split(
    runtime: &Map<String, Value>,
    alls: &[Map<String, Value>],
) -> (Map<String, Value>, Vec<Map<String, Value>>) {
    let owns: Vec<Map<String, Value>> = alls.iter().map(|all| differing(runtime, all)).collect();
    if owns
        .iter()
        .zip(alls)
        .all(|(own, all)| merged(runtime, own) == *all)
    {
        (runtime.clone(), owns)
    } else {
        (Map::new(), alls.to_vec())
    }
}

fn differing(runtime: &Map<String, Value>, all: &Map<String, Value>) -> Map<String, Value> {
    all.iter()
        .filter(|(key, value)| runtime.get(*key) != Some(value))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

fn object(data: &[u8], what: &str) -> Result<Map<String, Value>> {
    match serde_json::from_slice(data) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(CniError::decode(format!("{what} must be a JSON object"))),
    }
}

/// [`merged`] of JSON objects.
pub fn merged_json(runtime: &[u8], own: &[u8]) -> Result<Vec<u8>> {
    let all = merged(
        &object(runtime, "capability arguments")?,
        &object(own, "capability arguments")?,
    );
    serde_json::to_vec(&Value::Object(all)).map_err(|err| CniError::decode(err.to_string()))
}

/// [`split`] of JSON objects.
pub fn split_json(runtime: &[u8], alls: &[&[u8]]) -> Result<(Vec<u8>, Vec<Vec<u8>>)> {
    let runtime = object(runtime, "capability arguments")?;
    let alls = alls
        .iter()
        .map(|all| object(all, "capability arguments"))
        .collect::<Result<Vec<_>>>()?;
    let (top, owns) = split(&runtime, &alls);
    let bytes = |map: Map<String, Value>| {
        serde_json::to_vec(&Value::Object(map)).map_err(|err| CniError::decode(err.to_string()))
    };
    Ok((
        bytes(top)?,
        owns.into_iter().map(bytes).collect::<Result<_>>()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::{merged, split};
    use serde_json::{json, Map, Value};

    fn map(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn an_entrys_own_arguments_replace_the_runtimes_whatever_their_case() {
        let runtime = map(json!({"IPs": ["1.1.1.1/32"], "portMappings": [], "a": 1}));
        let mine = map(json!({"ips": ["10.0.0.2/24"]}));
        assert_eq!(
            Value::Object(merged(&runtime, &mine)),
            json!({"portMappings": [], "a": 1, "ips": ["10.0.0.2/24"]})
        );
    }

    #[test]
    fn only_what_differs_is_kept_and_it_merges_back() {
        let runtime = map(json!({"portMappings": [{"hostPort": 1}], "annotations": {"x": "y"}}));
        let alls = [
            json!({"portMappings": [{"hostPort": 1}], "annotations": {"x": "y"}, "ips": ["a"]}),
            json!({"annotations": {"x": "y"}, "portMappings": [{"hostPort": 2}]}),
            json!({"PortMappings": [{"hostPort": 1}], "annotations": {"x": "y"}}),
            json!({"annotations": {"x": "y"}, "portMappings": [{"hostPort": 1}]}),
        ]
        .map(map);
        let (top, owns) = split(&runtime, &alls);
        assert_eq!(top, runtime);
        for (own, all) in owns.iter().zip(&alls) {
            assert!(!own.contains_key("annotations"), "{own:?}");
            assert_eq!(merged(&top, own), *all);
        }
        assert!(owns[3].is_empty());
    }

    #[test]
    fn arguments_that_do_not_merge_back_are_kept_whole() {
        let runtime = map(json!({"IPs": ["x"], "ips": ["y"], "a": 1}));
        for odd in [json!({"ips": ["y"], "a": 1}), json!({})] {
            let alls = [map(json!({"IPs": ["x"], "ips": ["y"], "a": 1})), map(odd)];
            let (top, owns) = split(&runtime, &alls);
            assert!(top.is_empty());
            assert_eq!(owns, alls);
            for (own, all) in owns.iter().zip(&alls) {
                assert_eq!(merged(&top, own), *all);
            }
        }
    }
}
