//! The `random` object of a signed RANDOM.ORG result and the bytes its signature covers.
//!
//! RANDOM.ORG signs "the JSON representation of a random object" (its Signed API, Release 4)
//! and lists the object's members in one order per method: `method`, `hashedApiKey`, the
//! method's parameters in its documented order, `data`, `license`, `licenseData`, `userData`,
//! `ticketData`, `completionTime`, `serialNumber`. drbgd signs the compact serialisation of
//! the object with its members in that order, and every object inside it (`license`,
//! `ticketData`, a `userData` object…) with its members in code-point order; strings as
//! serde_json writes them (UTF-8, only `"`, `\` and control characters escaped), numbers as
//! serde_json writes a binary64 or an integer, a whole binary64 below 2^53 as an integer
//! (`100`, not `100.0`: JavaScript reads and writes `100.0` as `100`, so an object it sends back
//! must make the same bytes), wherever it is (`data`, a parameter, `userData`). The bytes are exactly the `random` member of
//! the response, so a verifier may take them from there. [`canonical`] makes the same bytes
//! again from an object a client parsed and sent back (`verifySignature`): whitespace, member
//! order and number spelling (`1e-05` for `1e-5`) do not change them, any member more or less
//! does.

use serde_json::{Map, Value};

use super::request::Kind;

/// The members after a method's parameters, in order.
const TAIL: [&str; 7] =
    ["data", "license", "licenseData", "userData", "ticketData", "completionTime", "serialNumber"];

/// The members of a signed `random` of `kind`, in order.
pub fn members(kind: Kind) -> impl Iterator<Item = &'static str> {
    ["method", "hashedApiKey"].into_iter().chain(kind.params().iter().copied()).chain(TAIL)
}

/// `members` as one compact JSON object, in the order given.
pub fn write<'a>(members: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.push(b'{');
    for (i, (name, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Writing a string or a `Value` to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, name);
        out.push(b':');
        let _ = serde_json::to_writer(&mut out, &Whole(value));
    }
    out.push(b'}');
    out
}

/// A value written with its whole binary64 numbers as integers (objects' members in the
/// `Map`'s code-point order).
struct Whole<'a>(&'a Value);

impl serde::Serialize for Whole<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        const EXACT: f64 = 9_007_199_254_740_992.0;
        match self.0 {
            Value::Number(n) => match n.as_f64() {
                Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < EXACT => {
                    serializer.serialize_i64(f as i64)
                }
                _ => n.serialize(serializer),
            },
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                items.iter().try_for_each(|item| seq.serialize_element(&Whole(item)))?;
                seq.end()
            }
            Value::Object(members) => {
                let mut map = serializer.serialize_map(Some(members.len()))?;
                members.iter().try_for_each(|(k, v)| map.serialize_entry(k, &Whole(v)))?;
                map.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// The signed bytes of `random` as a client sends it back: its members written in the order of
/// its `method`'s signed objects; `None` when it is no signed `random` of a generating method
/// (an unknown method, a member missing or one too many).
pub fn canonical(random: &Map<String, Value>) -> Option<Vec<u8>> {
    let method = random.get("method")?.as_str()?;
    let (kind, true) = Kind::of_method(method)? else { return None };
    let names: Vec<&str> = members(kind).collect();
    if random.len() != names.len() {
        return None;
    }
    let values = names.iter().map(|&name| random.get(name).map(|v| (name, v))).collect::<Option<Vec<_>>>()?;
    Some(write(values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn written_in_the_methods_order_and_remade_from_a_parsed_copy() {
        let random = json!({
            "method": "generateSignedIntegers", "hashedApiKey": "k", "n": 2, "min": 1, "max": 6,
            "replacement": true, "base": 10, "pregeneratedRandomization": null, "data": [3, 1e-5],
            "license": {"type": "t", "text": "x", "infoUrl": null}, "licenseData": null,
            "userData": {"b": "é/\u{1}", "a": 1}, "ticketData": null,
            "completionTime": "2026-12-06 10:00:00Z", "serialNumber": 7
        });
        let bytes = canonical(random.as_object().unwrap()).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with(r#"{"method":"generateSignedIntegers","hashedApiKey":"k","n":2,"min":1,"max":6,"replacement":true,"base":10,"pregeneratedRandomization":null,"data":[3,0.00001],"license":{"infoUrl":null,"text":"x","type":"t"}"#), "{text}");
        assert!(text.ends_with(r#""userData":{"a":1,"b":"é/\u0001"},"ticketData":null,"completionTime":"2026-12-06 10:00:00Z","serialNumber":7}"#), "{text}");
        // As Python's json.dumps re-sends it: spacing, `1e-05`, `\u00e9`.
        let resent = r#"{"method": "generateSignedIntegers", "hashedApiKey": "k", "n": 2, "min": 1, "max": 6, "replacement": true, "base": 10, "pregeneratedRandomization": null, "data": [3, 1e-05], "license": {"type": "t", "text": "x", "infoUrl": null}, "licenseData": null, "userData": {"b": "\u00e9/\u0001", "a": 1}, "ticketData": null, "completionTime": "2026-12-06 10:00:00Z", "serialNumber": 7}"#;
        let parsed: Value = serde_json::from_str(resent).unwrap();
        assert_eq!(canonical(parsed.as_object().unwrap()).unwrap(), bytes);
        let mut more = random.as_object().unwrap().clone();
        more.insert("cost".into(), json!(0));
        assert_eq!(canonical(&more), None, "a member more");
        more.remove("cost");
        more.remove("userData");
        assert_eq!(canonical(&more), None, "a member less");
        more.insert("userData".into(), Value::Null);
        let text =
            String::from_utf8(write([("a", &json!([1000.0, -0.0, 2.5, {"x": [3.0]}, 1e300]))])).unwrap();
        assert_eq!(text, r#"{"a":[1000,0,2.5,{"x":[3]},1e+300]}"#, "whole binary64s as integers");
        more.insert("method".into(), json!("generateIntegers"));
        assert_eq!(canonical(&more), None, "a Basic method signs nothing");
    }
}
