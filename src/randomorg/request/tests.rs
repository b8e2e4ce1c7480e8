use serde_json::{Value, json};

use super::*;

fn read_of(kind: Kind, params: Value) -> Result<Request, RpcError> {
    let allowed: Vec<&str> = kind.params().to_vec();
    let p = Params::of(Some(&params), &allowed)?;
    read(kind, &p)
}

fn code(kind: Kind, params: Value) -> i64 {
    read_of(kind, params).map_or_else(|e| e.code, |_| 0)
}

#[test]
fn integers_read_with_randomorgs_bounds_and_codes() {
    let r = read_of(Kind::Integers, json!({"n": 3, "min": 1, "max": 6, "base": null})).unwrap();
    assert_eq!(r.spec, Spec::Integers(Sequence { length: 3, min: 1, max: 6, replacement: true, base: 10 }));
    let echoed: Vec<(&str, Value)> = r.echo.clone();
    assert_eq!(
        echoed,
        vec![
            ("n", json!(3)),
            ("min", json!(1)),
            ("max", json!(6)),
            ("replacement", json!(true)),
            ("base", json!(10)),
            ("pregeneratedRandomization", Value::Null)
        ],
        "defaults written out, in the documented order"
    );
    for (params, expected) in [
        (json!({"n": 10001, "min": 1, "max": 6}), 202),
        (json!({"n": 0, "min": 1, "max": 6}), 202),
        (json!({"n": 1, "min": -1_000_000_001, "max": 6}), 202),
        (json!({"n": 1, "min": 10, "max": 0}), 300),
        (json!({"n": 11, "min": 0, "max": 9, "replacement": false}), 301),
        (json!({"n": 1, "min": 0, "max": 9, "base": 3}), 201),
        (json!({"n": 1, "min": 0, "max": 9, "base": 17}), 201),
        (json!({"n": 1, "min": 0, "max": 9, "base": 1}), 201),
        (json!({"n": 1, "min": 0, "max": 9, "base": 2.5}), 200),
        (json!({"n": "1", "min": 0, "max": 9}), 200),
        (json!({"n": 1, "min": 0}), -32602),
        (json!({"n": 1, "min": 0, "max": 9, "pregeneratedRandomization": {"date": "2020-01-01"}}), 201),
    ] {
        assert_eq!(code(Kind::Integers, params.clone()), expected, "{params}");
    }
    assert_eq!(code(Kind::Integers, json!({"n": 10, "min": 0, "max": 9, "replacement": false})), 0);
}

#[test]
fn sequences_take_scalars_or_arrays_of_n() {
    let r = read_of(
        Kind::IntegerSequences,
        json!({"n": 2, "length": [5, 1], "min": 1, "max": [69, 26], "replacement": false}),
    )
    .unwrap();
    let Spec::IntegerSequences(seqs) = &r.spec else { panic!() };
    assert_eq!(seqs[0], Sequence { length: 5, min: 1, max: 69, replacement: false, base: 10 });
    assert_eq!(seqs[1], Sequence { length: 1, min: 1, max: 26, replacement: false, base: 10 });
    assert_eq!(r.echo[1], ("length", json!([5, 1])), "echoed in the form sent");
    assert_eq!(
        code(Kind::IntegerSequences, json!({"n": 3, "length": [1, 2, 3, 4], "min": 1, "max": 6})),
        203
    );
    assert_eq!(code(Kind::IntegerSequences, json!({"n": 4, "length": [1], "min": 1, "max": 6})), 204);
    assert_eq!(
        code(Kind::IntegerSequences, json!({"n": 2, "length": 6000, "min": 1, "max": 6})),
        304,
        "10,000 values at most"
    );
    assert_eq!(
        code(Kind::IntegerSequences, json!({"n": 1, "length": 7, "min": 1, "max": 6, "replacement": false})),
        301
    );
    assert_eq!(code(Kind::IntegerSequences, json!({"n": 2, "length": 1, "min": [1, 9], "max": [6, 2]})), 300);
    assert_eq!(code(Kind::IntegerSequences, json!({"n": 1001, "length": 1, "min": 1, "max": 6})), 202);
}

#[test]
fn the_other_kinds_are_bounded() {
    assert_eq!(code(Kind::DecimalFractions, json!({"n": 5, "decimalPlaces": 21})), 202);
    assert_eq!(code(Kind::DecimalFractions, json!({"n": 11, "decimalPlaces": 1, "replacement": false})), 301);
    assert_eq!(
        code(Kind::Gaussians, json!({"n": 5, "mean": 0, "standardDeviation": 1, "significantDigits": 1})),
        202
    );
    assert_eq!(
        code(Kind::Gaussians, json!({"n": 5, "mean": 2e6, "standardDeviation": 1, "significantDigits": 5})),
        202
    );
    assert_eq!(code(Kind::Strings, json!({"n": 5, "length": 21, "characters": "ab"})), 202);
    assert_eq!(code(Kind::Strings, json!({"n": 5, "length": 2, "characters": ""})), 204);
    assert_eq!(code(Kind::Strings, json!({"n": 5, "length": 2, "characters": "a".repeat(81)})), 203);
    assert_eq!(
        code(Kind::Strings, json!({"n": 5, "length": 2, "characters": "ab", "replacement": false})),
        301
    );
    assert_eq!(
        code(Kind::Strings, json!({"n": 4, "length": 2, "characters": "ab", "replacement": false})),
        0
    );
    // Without replacement each character once: two distinct strings of "aa" cannot be drawn
    // (counted over the characters as listed, the draw would redraw "a" for ever), and 79 a's
    // and a b would take a skewed collector for ever.
    let aa = json!({"n": 2, "length": 1, "characters": "aa", "replacement": false});
    assert_eq!(code(Kind::Strings, aa), 201);
    let skewed =
        json!({"n": 10000, "length": 14, "characters": format!("{}b", "a".repeat(79)), "replacement": false});
    assert_eq!(code(Kind::Strings, skewed), 201);
    assert_eq!(
        code(Kind::Strings, json!({"n": 4, "length": 2, "characters": "aab"})),
        0,
        "with replacement, as weights"
    );
    assert_eq!(code(Kind::Uuids, json!({"n": 1001})), 202);
    assert_eq!(code(Kind::Blobs, json!({"n": 1, "size": 12})), 201, "a whole number of bytes");
    assert_eq!(code(Kind::Blobs, json!({"n": 2, "size": 1_048_576})), 304);
    assert_eq!(code(Kind::Blobs, json!({"n": 1, "size": 8, "format": "raw"})), 201);
    assert_eq!(code(Kind::Blobs, json!({"n": 101, "size": 8})), 202);
    let r = read_of(Kind::Blobs, json!({"n": 2, "size": 16, "format": "hex"})).unwrap();
    assert_eq!(r.spec, Spec::Blobs { n: 2, bytes: 2, hex: true });
    assert_eq!(
        read_of(Kind::Blobs, json!({"n": 2, "size": 16})).unwrap().echo[2],
        ("format", json!("base64"))
    );
}

#[test]
fn methods_are_named_as_randomorg_names_them() {
    assert_eq!(
        Method::named("generateSignedUUIDs"),
        Some(Method::Generate { kind: Kind::Uuids, signed: true })
    );
    assert_eq!(Method::named("generateBlobs"), Some(Method::Generate { kind: Kind::Blobs, signed: false }));
    assert_eq!(Method::named("fooBar"), None);
    assert!(!Method::GetTicket.keyed() && !Method::VerifySignature.keyed() && Method::GetUsage.keyed());
    let signed = Method::Generate { kind: Kind::Integers, signed: true }.allowed();
    assert_eq!(signed.first(), Some(&"apiKey"));
    assert!(signed.ends_with(&["licenseData", "userData", "ticketId"]));
}
