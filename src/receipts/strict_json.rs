//! JSON read strictly, for what is checked by signature: an object that names a member twice
//! is refused (serde_json keeps the last, other parsers the first or refuse, so a receipt
//! `{"data": "FAKE", "data": "REAL"}` would read differently to its verifier and to its
//! reader). serde_json has no such mode; this is its `Value` built by a visitor that checks.
//!
//! A public body is also held to a [`Shape`] as it is read: how deep it nests, how many members
//! one object has, how many values it holds in all. Reading stops at the first value past a
//! bound, so a body costs what its shape allows, not what its size would (a receipt-sized body
//! of 60,000 one-character members cost ~44 ms and ~22 MiB read whole). Depth stays bounded by
//! serde_json's own recursion limit (128) as well.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The most characters of a member's name an error repeats.
const NAME_SHOWN: usize = 64;

/// Bounds on a document's shape, checked while it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Containers nested at most (the top object is 1).
    pub depth: usize,
    /// Members of one object at most.
    pub members: usize,
    /// Values in all at most: every scalar, array, object and member name counts one.
    pub values: usize,
}

impl Shape {
    /// No bound but serde_json's recursion limit: for bodies already small (a POST's
    /// parameters, 8 KiB at most) and for files the user reads on their own machine.
    pub const ANY: Shape = Shape { depth: usize::MAX, members: usize::MAX, values: usize::MAX };
}

/// `text` as a JSON value, every object's member names distinct.
///
/// # Errors
/// Not JSON, or a member named twice in one object.
pub fn from_slice(text: &[u8]) -> Result<Value, serde_json::Error> {
    from_slice_shaped(text, Shape::ANY)
}

/// [`from_slice`], held to `shape`.
///
/// # Errors
/// As [`from_slice`], or a bound of `shape` passed (reading stopped there).
pub fn from_slice_shaped(text: &[u8], shape: Shape) -> Result<Value, serde_json::Error> {
    let budget = Budget { shape, values: Cell::new(0) };
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    let value = Seed { budget: &budget, depth: 0 }.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// The shape and the values read so far.
struct Budget {
    shape: Shape,
    values: Cell<usize>,
}

impl Budget {
    /// One more value, or the error that stops the reading.
    fn count<E: de::Error>(&self) -> Result<(), E> {
        let n = self.values.get() + 1;
        if n > self.shape.values {
            return Err(E::custom(format_args!("more than {} values", self.shape.values)));
        }
        self.values.set(n);
        Ok(())
    }

    /// The depth of a container opened at `depth`, or the error that stops the reading.
    fn open<E: de::Error>(&self, depth: usize) -> Result<usize, E> {
        let inner = depth + 1;
        if inner > self.shape.depth {
            return Err(E::custom(format_args!("nested deeper than {} levels", self.shape.depth)));
        }
        Ok(inner)
    }
}

/// A value read at `depth` (the containers around it).
#[derive(Clone, Copy)]
struct Seed<'b> {
    budget: &'b Budget,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.budget.count()?;
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
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
        let inner = Seed { budget: self.budget, depth: self.budget.open(self.depth)? };
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = Seed { budget: self.budget, depth: self.budget.open(self.depth)? };
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            self.budget.count()?;
            if members.len() == self.budget.shape.members {
                let most = self.budget.shape.members;
                return Err(de::Error::custom(format_args!("an object of more than {most} members")));
            }
            if members.contains_key(&name) {
                let shown: String = name.chars().take(NAME_SHOWN).collect();
                return Err(de::Error::custom(format_args!("the member {shown:?} is given twice")));
            }
            let value = map.next_value_seed(inner)?;
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
        assert!(from_slice(b"{} {}").is_err(), "one document");
        // Numbers are numbers (serde_json's arbitrary_precision would make them objects, which
        // the receipts' exact-number check would not see).
        assert!(from_slice(b"1").unwrap().is_number());
        assert!(from_slice(b"-0").unwrap().as_f64().is_some());
    }

    #[test]
    fn a_shape_bounds_depth_members_and_values() {
        let shape = Shape { depth: 2, members: 3, values: 12 };
        let fits = br#"{"a": [1, 2, 3], "b": {"c": "d"}, "e": null}"#;
        assert_eq!(from_slice_shaped(fits, shape).unwrap(), from_slice(fits).unwrap());
        let refused = |text: &str, why: &str| {
            let e = from_slice_shaped(text.as_bytes(), shape).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        };
        refused(r#"{"a": [[1]]}"#, "nested deeper than 2 levels");
        refused(r#"{"a": {"b": {}}}"#, "nested deeper than 2 levels");
        refused(r#"{"a": 1, "b": 2, "c": 3, "d": 4}"#, "more than 3 members");
        refused(r#"[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]"#, "more than 12 values");
        // The reading stops at the bound: what follows is never looked at, even if broken.
        refused(r#"{"a": 1, "b": 2, "c": 3, "d": 4, "#, "more than 3 members");
    }
}
