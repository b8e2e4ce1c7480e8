//! JSON read strictly, for what is checked by signature: an object that names a member twice
//! is refused (serde_json keeps the last, other parsers the first or refuse, so a receipt
//! `{"data": "FAKE", "data": "REAL"}` would read differently to its verifier and to its
//! reader). serde_json has no such mode; this is its `Value` built by a visitor that checks.
//! Depth stays bounded by serde_json's own recursion limit (128).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The most characters of a member's name an error repeats.
const NAME_SHOWN: usize = 64;

/// `text` as a JSON value, every object's member names distinct.
///
/// # Errors
/// Not JSON, or a member named twice in one object.
pub fn from_slice(text: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<Strict>(text).map(|s| s.0)
}

struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            if members.contains_key(&name) {
                let shown: String = name.chars().take(NAME_SHOWN).collect();
                return Err(de::Error::custom(format_args!("the member {shown:?} is given twice")));
            }
            let Strict(value) = map.next_value()?;
            members.insert(name, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_named_twice_is_refused_at_any_depth() {
        assert_eq!(
            from_slice(br#"{"a": [1, {"b": null}], "c": 2.5}"#).unwrap(),
            serde_json::json!({"a": [1, {"b": null}], "c": 2.5})
        );
        for text in
            [r#"{"a": 1, "a": 1}"#, r#"{"x": {"data": "FAKE", "data": "REAL"}}"#, r#"[{"k": 1, "k": 2}]"#]
        {
            let e = from_slice(text.as_bytes()).unwrap_err();
            assert!(e.to_string().contains("given twice"), "{text}: {e}");
        }
        assert!(from_slice(b"{nope").is_err());
        // Numbers are numbers (serde_json's arbitrary_precision would make them objects, which
        // the receipts' exact-number check would not see).
        assert!(from_slice(b"1").unwrap().is_number());
        assert!(from_slice(b"-0").unwrap().as_f64().is_some());
    }
}
