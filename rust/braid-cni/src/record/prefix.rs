//! Reading what is left of a record that is not whole JSON: a file cut short (a power failure
//! after an unflushed rename can leave any prefix of it, or zeros where its blocks never
//! reached the disk) still holds every member written before the damage.
//!
//! The top-level object is read member by member, and the `attachments` array element by
//! element, each value with `serde_json` as a whole; reading stops at the first value that is
//! not whole. A member counts only once the `,` or `}` after it is there (a number cut short is
//! still a number); an array element is an object, whose closing brace says it is whole.

use serde_json::{Deserializer, Map, Value};

/// What the readable prefix of a damaged record holds.
#[derive(Debug, Default)]
pub(super) struct Prefix {
    /// Every whole top-level member but `attachments`, in file order.
    pub members: Map<String, Value>,
    /// The whole elements of the `attachments` array, when it was reached.
    pub attachments: Option<Vec<Value>>,
    /// Whether the `attachments` array's closing bracket was read.
    pub attachments_closed: bool,
}

/// Reads the prefix of `data` (see the module documentation).
pub(super) fn read(data: &[u8]) -> Prefix {
    let mut cursor = Cursor { data, at: 0 };
    let mut prefix = Prefix::default();
    if !cursor.eat(b'{') {
        return prefix;
    }
    while let Some(Value::String(key)) = cursor.value() {
        if !cursor.eat(b':') {
            break;
        }
        if key == "attachments" && cursor.peek() == Some(b'[') {
            cursor.at += 1;
            let (items, closed) = cursor.elements();
            prefix.attachments = Some(items);
            prefix.attachments_closed = closed;
            if !closed {
                break;
            }
        } else {
            let Some(value) = cursor.value() else { break };
            if !matches!(cursor.peek(), Some(b',' | b'}')) {
                break;
            }
            prefix.members.insert(key, value);
        }
        if !cursor.eat(b',') {
            break;
        }
    }
    prefix
}

struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn skip_space(&mut self) {
        while self
            .data
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    /// The next byte after whitespace (which is skipped).
    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.data.get(self.at).copied()
    }

    /// Consumes `byte` when it comes next (after whitespace).
    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.at += 1;
        }
        found
    }

    /// The next whole JSON value, consumed; `None` (nothing consumed) when it is not whole.
    fn value(&mut self) -> Option<Value> {
        let rest = self.data.get(self.at..)?;
        let mut stream = Deserializer::from_slice(rest).into_iter::<Value>();
        let value = stream.next()?.ok()?;
        self.at += stream.byte_offset();
        Some(value)
    }

    /// The elements of an array whose `[` was consumed: the whole ones, and whether its `]`
    /// was reached.
    fn elements(&mut self) -> (Vec<Value>, bool) {
        let mut items = Vec::new();
        if self.eat(b']') {
            return (items, true);
        }
        while let Some(item) = self.value() {
            items.push(item);
            if self.eat(b']') {
                return (items, true);
            }
            if !self.eat(b',') {
                break;
            }
        }
        (items, false)
    }
}

#[cfg(test)]
mod tests {
    use super::read;
    use serde_json::json;

    #[test]
    fn every_member_before_the_cut_is_read() {
        let text = br#"{"a": 1, "b": [true], "attachments": [{"n": 1}, {"n": 2}, {"n""#;
        let prefix = read(text);
        assert_eq!(prefix.members.get("a"), Some(&json!(1)));
        assert_eq!(prefix.members.get("b"), Some(&json!([true])));
        let items = prefix.attachments.expect("reached");
        assert_eq!(items, [json!({"n": 1}), json!({"n": 2})]);
        assert!(!prefix.attachments_closed);
    }

    #[test]
    fn a_number_at_the_cut_is_not_taken() {
        let prefix = read(br#"{"a": "x", "version": 1"#);
        assert_eq!(prefix.members.len(), 1);
        assert!(prefix.attachments.is_none());
    }

    #[test]
    fn an_array_closed_before_the_cut_is_whole() {
        let prefix = read(b"{\"attachments\" : [ {\"n\": 1} ] , \"networkStatus\": [{\"na\0\0\0");
        assert!(prefix.attachments_closed);
        assert_eq!(prefix.attachments.expect("reached").len(), 1);
        let empty = read(br#"{"attachments": [], "#);
        assert!(empty.attachments_closed);
    }

    #[test]
    fn nothing_comes_of_what_is_no_object() {
        for text in [&b""[..], b"\0\0\0\0", b"[1, 2]", b"null", b"{\"a\" 1}"] {
            let prefix = read(text);
            assert!(prefix.members.is_empty() && prefix.attachments.is_none());
        }
    }
}
