//! A receipt's `random` object before it is stamped and signed: the endpoint, the generator,
//! every request parameter in its canonical typed form (defaults applied), and the output as
//! `data`. The same for REST and gRPC, so both transports' receipts read and verify alike.
//!
//! Only strings, booleans and integers within ±(2^53 − 1) are written as JSON values: any
//! language's JSON parser reads them exactly, and for them RFC 8785's canonical form is
//! Python's `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`. An
//! integer beyond that range is a string of its decimal digits; `/int`'s values are always
//! strings (one type for the list); binary output is base64 (`data_encoding` says so).
//!
//! The canonical text is written here directly ([`Random::canonical_json`]) rather than by
//! `serde_json_canonicalizer` through a `serde_json::Value` tree: for this fixed schema of
//! strings, integers, booleans and lists of strings, RFC 8785 is sorted ASCII names and
//! `JSON.stringify`'s string escapes, a few dozen lines, written once into a buffer of its
//! exact length; without the tree, its sort and its copies a receipt cost 1.2 µs less of its
//! 18.8 beside the signature (benches/README.md, "Receipts"). The tests check the text against
//! `serde_json_canonicalizer`'s, byte for byte.

use zeroize::{Zeroize, Zeroizing};

use crate::route::Route;
use crate::service::{BitsRequest, Encoding, Ints, Secret, Uuids};

/// The largest integer every JSON reader takes exactly (JavaScript's
/// `Number.MAX_SAFE_INTEGER`, 2^53 − 1).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// One member's value: the only kinds a receipt holds.
#[derive(Clone, PartialEq, Eq)]
pub enum Field {
    /// A string (output, the caller's name, decimal digits of an integer beyond 2^53).
    Text(String),
    /// A name of drbgd's own (an endpoint's path, a generator's or a format's): no output,
    /// nothing to copy or wipe.
    Name(&'static str),
    /// An integer within ±[`MAX_SAFE_INTEGER`].
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A list of strings (`/int`'s values, `/uuid`'s UUIDs).
    Texts(Vec<String>),
}

impl From<&str> for Field {
    fn from(s: &str) -> Field {
        Field::Text(s.to_owned())
    }
}

impl From<String> for Field {
    fn from(s: String) -> Field {
        Field::Text(s)
    }
}

impl From<bool> for Field {
    fn from(b: bool) -> Field {
        Field::Bool(b)
    }
}

impl Zeroize for Field {
    fn zeroize(&mut self) {
        match self {
            Field::Text(s) => s.zeroize(),
            Field::Texts(items) => items.iter_mut().for_each(Zeroize::zeroize),
            Field::Int(_) | Field::Bool(_) | Field::Name(_) => {}
        }
    }
}

/// The fields of a `random` object so far (wiped when dropped: `data` is random output).
#[derive(Default)]
pub struct Random {
    fields: Vec<(&'static str, Field)>,
}

/// Shows the fields' names, never their values (`data` is random output).
impl std::fmt::Debug for Random {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.fields.iter().map(|(name, _)| *name).collect();
        f.debug_struct("Random").field("fields", &names).finish()
    }
}

impl Drop for Random {
    fn drop(&mut self) {
        for (_, value) in &mut self.fields {
            value.zeroize();
        }
    }
}

impl Random {
    /// The fields every receipt starts with: the endpoint's path (its policy route's name) and
    /// the generator's name. An endpoint adds its parameters and its output with
    /// [`Random::with`] (the forms below are the built-in endpoints').
    pub fn new(route: Route, alg: crate::drbg::Algorithm) -> Self {
        // Room for every member a receipt has, stamp included: no reallocation.
        let random = Random { fields: Vec::with_capacity(16) };
        random.with("endpoint", Field::Name(route.name())).with("alg", Field::Name(alg.name()))
    }

    /// This object with `key` set to `value` (a key set before is replaced, its value wiped).
    pub fn with(mut self, key: &'static str, value: impl Into<Field>) -> Self {
        let value = value.into();
        match self.fields.iter_mut().find(|(name, _)| *name == key) {
            Some((_, old)) => {
                old.zeroize();
                *old = value;
            }
            None => self.fields.push((key, value)),
        }
        self
    }

    /// `/bits` or `/bytes` (`route`): `n` (bits, or bytes for `/bytes`), `format`, `pr`, and
    /// `raw` (the packed output) in the request's format; binary as base64 and JSON's as hex,
    /// with `data_encoding` naming that.
    pub fn bits(route: Route, req: &BitsRequest, raw: &[u8]) -> Self {
        let n = if route == Route::Bytes { req.byte_len() } else { req.n_bits() };
        let (written, data_encoding) = match req.format() {
            Encoding::Binary => (Encoding::Base64, Some("base64")),
            Encoding::Json => (Encoding::Hex, Some("hex")),
            format => (format, None),
        };
        let mut text = Vec::with_capacity(raw.len() * written.expansion() + 4);
        written.encode_into(raw, req.n_bits(), &mut text);
        // Every text encoding is ASCII.
        let data = String::from_utf8(text).unwrap_or_default();
        let random = Random::new(route, req.alg())
            .with("n", integer_u64(n))
            .with("format", Field::Name(req.format().name()))
            .with("pr", req.pr())
            .with("data", data);
        match data_encoding {
            Some(encoding) => random.with("data_encoding", Field::Name(encoding)),
            None => random,
        }
    }

    /// `/token` or `/nonce` (the secret's kind): `bytes`, `format`, and the encoded value.
    pub fn secret(secret: &Secret) -> Self {
        Random::new(secret.kind.route(), secret.alg)
            .with("bytes", integer_u64(secret.bytes))
            .with("format", Field::Name(secret.format.name()))
            .with("data", secret.value.as_str())
    }

    /// `/uuid`: `count`, `version`, and the UUIDs (hyphenated lowercase).
    pub fn uuids(out: &Uuids) -> Self {
        let data: Vec<String> = out.uuids.iter().map(ToString::to_string).collect();
        Random::new(Route::Uuid, out.alg)
            .with("count", integer_u64(out.uuids.len() as u64))
            .with("version", integer(i64::from(out.version)))
            .with("data", Field::Texts(data))
    }

    /// `/int`: `min`, `max`, `count`, and the values as decimal strings.
    pub fn ints(out: &Ints) -> Self {
        Random::integers(Route::Int, out.alg, (out.min, out.max), &out.values)
    }

    /// Integers of `[min, max]` from `alg` served on `route` (`/int`, `/sequence`): `min`,
    /// `max`, `count`, and the values as decimal strings (one type for the list, exact in any
    /// JSON reader).
    pub fn integers(
        route: Route,
        alg: crate::drbg::Algorithm,
        (min, max): (i64, i64),
        values: &[i64],
    ) -> Self {
        let data: Vec<String> = values.iter().map(ToString::to_string).collect();
        Random::new(route, alg)
            .with("min", integer(min))
            .with("max", integer(max))
            .with("count", integer_u64(values.len() as u64))
            .with("data", Field::Texts(data))
    }

    /// The object as RFC 8785 (JCS) canonical JSON: members sorted by name (every name is
    /// ASCII, so byte order is UTF-16 order), no white space, strings escaped as
    /// ECMAScript's `JSON.stringify` escapes them, integers in decimal. Written into one
    /// buffer of the exact length, measured first, so no reallocation leaves a copy of the
    /// output unwiped; `None` if the text came out of another length than measured (a bug:
    /// the receipt is refused rather than served from a buffer that grew).
    pub(super) fn canonical_json(&self) -> Option<Zeroizing<String>> {
        let mut members: Vec<&(&'static str, Field)> = self.fields.iter().collect();
        members.sort_unstable_by_key(|(name, _)| *name);
        let mut len = 0;
        write_object(&members, &mut len);
        let mut out = Zeroizing::new(String::with_capacity(len));
        let capacity = out.capacity();
        write_object(&members, &mut *out);
        (out.len() == len && out.capacity() == capacity).then_some(out)
    }

    /// The fields, for tests that read them.
    #[cfg(test)]
    pub(super) fn get(&self, key: &str) -> Option<&Field> {
        self.fields.iter().find(|(name, _)| *name == key).map(|(_, value)| value)
    }
}

/// `n` as a JSON number where every reader takes it exactly, else as a decimal string.
pub fn integer(n: i64) -> Field {
    if safe(n) { Field::Int(n) } else { Field::Text(n.to_string()) }
}

/// Whether every JSON reader takes `n` exactly (within ±[`MAX_SAFE_INTEGER`]).
fn safe(n: i64) -> bool {
    (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&n)
}

/// [`integer`] of an unsigned number.
pub fn integer_u64(n: u64) -> Field {
    i64::try_from(n).map_or_else(|_| Field::Text(n.to_string()), integer)
}

/// The escape of `b` in a JSON string (RFC 8785 section 3.2.2.2, as `JSON.stringify`): the
/// short escapes, `\u00XX` in lowercase hex for the other control characters, `None` for a
/// byte written as it is (every other one, UTF-8 sequences included).
fn escape(b: u8) -> Option<&'static str> {
    const CONTROL: [&str; 32] = [
        "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007", "\\b", "\\t",
        "\\n", "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f", "\\u0010", "\\u0011", "\\u0012", "\\u0013",
        "\\u0014", "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c",
        "\\u001d", "\\u001e", "\\u001f",
    ];
    match b {
        b'"' => Some("\\\""),
        b'\\' => Some("\\\\"),
        0..=0x1f => Some(CONTROL[usize::from(b)]),
        _ => None,
    }
}

/// Where canonical text goes: a buffer, or a count of its bytes (the pass that measures it),
/// so that the length measured and the text written come from the same code.
trait Out {
    fn put(&mut self, s: &str);
}

impl Out for String {
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
}

impl Out for usize {
    fn put(&mut self, s: &str) {
        *self += s.len();
    }
}

/// `members` (sorted) as a JSON object.
fn write_object(members: &[&(&'static str, Field)], out: &mut impl Out) {
    out.put("{");
    for (i, (name, value)) in members.iter().enumerate() {
        if i > 0 {
            out.put(",");
        }
        write_text(out, name);
        out.put(":");
        write_field(out, value);
    }
    out.put("}");
}

/// Whether any byte of `s` is escaped: a pass without early exit, which the compiler turns
/// into SIMD (most strings of a receipt have none: hex, base64, UUIDs, names).
fn any_escape(s: &str) -> bool {
    s.bytes().fold(false, |any, b| any | (b < 0x20) | (b == b'"') | (b == b'\\'))
}

/// `s` as a JSON string; runs of bytes that need no escape are copied whole.
fn write_text(out: &mut impl Out, s: &str) {
    out.put("\"");
    if !any_escape(s) {
        out.put(s);
        out.put("\"");
        return;
    }
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        if let Some(escaped) = escape(b) {
            out.put(&s[start..i]);
            out.put(escaped);
            start = i + 1;
        }
    }
    out.put(&s[start..]);
    out.put("\"");
}

/// `value` written.
fn write_field(out: &mut impl Out, value: &Field) {
    match value {
        Field::Text(s) => write_text(out, s),
        Field::Name(s) => write_text(out, s),
        // Beyond ±(2^53 − 1) a number is a string of its digits ([`integer`]), whoever built it.
        Field::Int(n) if !safe(*n) => write_text(out, itoa::Buffer::new().format(*n)),
        Field::Int(n) => out.put(itoa::Buffer::new().format(*n)),
        Field::Bool(b) => out.put(if *b { "true" } else { "false" }),
        Field::Texts(items) => {
            out.put("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(",");
                }
                write_text(out, item);
            }
            out.put("]");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use crate::drbg::Algorithm;
    use crate::service::{BytesRequest, Rules};

    fn text(s: &str) -> Field {
        Field::Text(s.into())
    }

    #[test]
    fn integers_beyond_2_53_are_strings() {
        assert!(integer(MAX_SAFE_INTEGER) == Field::Int(9_007_199_254_740_991));
        assert!(integer(-MAX_SAFE_INTEGER) == Field::Int(-9_007_199_254_740_991));
        assert!(integer(MAX_SAFE_INTEGER + 1) == text("9007199254740992"));
        assert!(integer(i64::MIN) == text("-9223372036854775808"));
        assert!(integer_u64(u64::MAX) == text("18446744073709551615"));
        assert!(integer_u64(256) == Field::Int(256));
        let ints = Ints { values: vec![i64::MIN, 0, 6], min: i64::MIN, max: 6, alg: Algorithm::ChaCha20 };
        let random = Random::ints(&ints);
        assert!(random.get("min") == Some(&text("-9223372036854775808")));
        assert!(random.get("max") == Some(&Field::Int(6)));
        assert!(random.get("count") == Some(&Field::Int(3)));
        let list = Field::Texts(vec!["-9223372036854775808".into(), "0".into(), "6".into()]);
        assert!(random.get("data") == Some(&list));
        assert!(random.get("endpoint") == Some(&Field::Name("/int")));
    }

    #[test]
    fn binary_output_is_base64_and_says_so() {
        let rules = Rules::from_settings(&Settings::defaults());
        let raw = [0xffu8, 0x00, 0xa5];
        let req = BytesRequest::new(&rules, Some(3), None, Encoding::Binary, false).unwrap().into_bits();
        let random = Random::bits(Route::Bytes, &req, &raw);
        assert!(random.get("n") == Some(&Field::Int(3)), "/bytes counts bytes");
        assert!(random.get("format") == Some(&Field::Name("binary")));
        assert!(random.get("data") == Some(&text("/wCl")));
        assert!(random.get("data_encoding") == Some(&Field::Name("base64")));
        assert!(random.get("pr") == Some(&Field::Bool(false)));
        let req = BitsRequest::new(&rules, Some(20), None, Encoding::Bits, false).unwrap();
        let random = Random::bits(Route::Bits, &req, &raw);
        assert!(random.get("data") == Some(&text("11111111000000001010")));
        assert!(random.get("n") == Some(&Field::Int(20)));
        assert!(random.get("data_encoding").is_none());
    }

    /// The same object as a `serde_json::Value`, for the reference canonicaliser.
    fn as_value(random: &Random) -> serde_json::Value {
        let field = |value: &Field| match value {
            Field::Text(s) => serde_json::Value::from(s.as_str()),
            Field::Name(s) => serde_json::Value::from(*s),
            Field::Int(n) => serde_json::Value::from(*n),
            Field::Bool(b) => serde_json::Value::from(*b),
            Field::Texts(items) => serde_json::Value::from(items.clone()),
        };
        random.fields.iter().map(|(name, value)| ((*name).to_owned(), field(value))).collect()
    }

    /// Every string of one byte or one character that escaping could treat specially, names
    /// in any order, integers at the edges, lists: the text written here is
    /// `serde_json_canonicalizer`'s (RFC 8785), byte for byte.
    #[test]
    fn the_canonical_text_is_rfc_8785_s() {
        let mut strings: Vec<String> = (0u8..=0x7f).map(|b| char::from(b).to_string()).collect();
        strings.extend(
            ["é", "\u{2028}", "\u{2029}", "\u{7f}", "\u{fffd}", "😀", "a\"b\\c\nd\te\u{1}f", ""]
                .map(String::from),
        );
        let names = ["user_data", "data", "n", "alg", "caller", "key_id", "pr", "count", "min", "max", "z"];
        for (i, s) in strings.iter().enumerate() {
            let random = Random::default()
                .with(names[i % names.len()], s.as_str())
                .with(names[(i + 3) % names.len()], integer(i64::from(u8::try_from(i % 200).unwrap()) - 100))
                .with(names[(i + 5) % names.len()], Field::Texts(vec![s.clone(), "x".into(), s.clone()]))
                .with(names[(i + 7) % names.len()], i % 2 == 0)
                .with(
                    names[(i + 9) % names.len()],
                    integer(if i % 2 == 0 { MAX_SAFE_INTEGER } else { -MAX_SAFE_INTEGER }),
                );
            let reference = serde_json_canonicalizer::to_string(&as_value(&random)).unwrap();
            assert_eq!(*random.canonical_json().unwrap(), reference, "{s:?}");
        }
        assert_eq!(*Random::default().canonical_json().unwrap(), "{}");
        let empty_list = Random::default().with("data", Field::Texts(vec![]));
        assert_eq!(*empty_list.canonical_json().unwrap(), r#"{"data":[]}"#);
        // A number built past integer() is still written as integer() writes it.
        let unsafe_int = Random::default().with("n", Field::Int(i64::MAX));
        assert_eq!(*unsafe_int.canonical_json().unwrap(), r#"{"n":"9223372036854775807"}"#);
    }
}
