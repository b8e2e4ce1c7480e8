use serde_json::{Value, json};

use super::*;
use crate::randomorg::request::Sequence;

/// A counter's words through SplitMix64: a fixed, well-mixed source.
fn source() -> impl FnMut() -> Result<u64, ()> {
    let mut state = 0u64;
    move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Ok(z ^ (z >> 31))
    }
}

fn seq(length: usize, min: i64, max: i64, replacement: bool, base: u32) -> Sequence {
    Sequence { length, min, max, replacement, base }
}

#[test]
fn integers_stay_in_range_and_distinct_without_replacement() {
    let spec = Spec::Integers(seq(10, 0, 9, false, 10));
    let Value::Array(values) = draw(&spec, &mut source()).unwrap() else { panic!() };
    let mut ints: Vec<i64> = values.iter().map(|v| v.as_i64().unwrap()).collect();
    ints.sort_unstable();
    assert_eq!(ints, (0..10).collect::<Vec<_>>(), "a permutation of the whole domain");
    let spec = Spec::Integers(seq(500, -3, 3, true, 10));
    let Value::Array(values) = draw(&spec, &mut source()).unwrap() else { panic!() };
    assert!(values.iter().all(|v| (-3..=3).contains(&v.as_i64().unwrap())));
}

#[test]
fn bases_are_lowercase_strings() {
    assert_eq!(in_base(255, 16), json!("ff"));
    assert_eq!(in_base(-5, 2), json!("-101"));
    assert_eq!(in_base(8, 8), json!("10"));
    assert_eq!(in_base(-7, 10), json!(-7));
}

#[test]
fn fractions_gaussians_strings_uuids_blobs() {
    let Value::Array(f) =
        draw(&Spec::DecimalFractions { n: 200, places: 3, replacement: false }, &mut source()).unwrap()
    else {
        panic!()
    };
    let texts: std::collections::HashSet<String> = f.iter().map(Value::to_string).collect();
    assert_eq!(texts.len(), 200, "distinct");
    assert!(f.iter().all(|v| {
        let x = v.as_f64().unwrap();
        (0.0..1.0).contains(&x) && ((x * 1000.0).round() - x * 1000.0).abs() < 1e-9
    }));
    let Value::Array(f) =
        draw(&Spec::DecimalFractions { n: 50, places: 20, replacement: true }, &mut source()).unwrap()
    else {
        panic!()
    };
    assert!(f.iter().all(|v| (0.0..1.0).contains(&v.as_f64().unwrap())));
    let Value::Array(g) =
        draw(&Spec::Gaussians { n: 7, mean: 10.0, deviation: 2.0, digits: 3 }, &mut source()).unwrap()
    else {
        panic!()
    };
    assert_eq!(g.len(), 7, "an odd count");
    for v in &g {
        let x = v.as_f64().unwrap();
        assert_eq!(significant(x, 3), x, "{x} has 3 significant digits");
    }
    assert_eq!(significant(123.456, 2), 120.0);
    assert_eq!(significant(-0.00123456, 3), -0.00123);
    let chars: Vec<char> = "aé€".chars().collect();
    let strings = Spec::Strings { n: 9, length: 2, characters: chars.clone(), replacement: false };
    let Value::Array(s) = draw(&strings, &mut source()).unwrap() else { panic!() };
    let distinct: std::collections::HashSet<&str> = s.iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(distinct.len(), 9, "all nine strings of the domain");
    assert!(distinct.iter().all(|s| s.chars().count() == 2 && s.chars().all(|c| chars.contains(&c))));
    let Value::Array(u) = draw(&Spec::Uuids(3), &mut source()).unwrap() else { panic!() };
    for v in u {
        let id = uuid::Uuid::parse_str(v.as_str().unwrap()).unwrap();
        assert_eq!(id.get_version_num(), 4);
        assert_eq!(id.to_string(), v.as_str().unwrap(), "lowercase, hyphenated");
    }
    let Value::Array(b) = draw(&Spec::Blobs { n: 2, bytes: 5, hex: true }, &mut source()).unwrap() else {
        panic!()
    };
    assert!(b.iter().all(|v| v.as_str().unwrap().len() == 10));
    let Value::Array(b) = draw(&Spec::Blobs { n: 1, bytes: 5, hex: false }, &mut source()).unwrap() else {
        panic!()
    };
    assert_eq!(data_encoding::BASE64.decode(b[0].as_str().unwrap().as_bytes()).unwrap().len(), 5);
}

#[test]
fn bits_used_fits_randomorgs_examples() {
    // RANDOM.ORG's documented examples (its Release 4 pages): 3 dice 8 bits; sequences
    // 5 × [1, 69] and 1 × [1, 26] 36; 10 fractions of 8 places 266; 4 Gaussians of 8 digits 106.
    assert_eq!(bits_used(&Spec::Integers(seq(3, 1, 6, true, 10))), 8);
    assert_eq!(
        bits_used(&Spec::IntegerSequences(vec![seq(5, 1, 69, false, 10), seq(1, 1, 26, false, 10)])),
        36
    );
    assert_eq!(bits_used(&Spec::DecimalFractions { n: 10, places: 8, replacement: true }), 266);
    assert_eq!(bits_used(&Spec::Gaussians { n: 4, mean: 0.0, deviation: 1.0, digits: 8 }), 106);
    assert_eq!(bits_used(&Spec::Uuids(2)), 244);
    assert_eq!(bits_used(&Spec::Blobs { n: 2, bytes: 16, hex: false }), 256);
}

#[test]
fn charges_cover_the_words() {
    assert_eq!(drawn_bits(&Spec::Blobs { n: 2, bytes: 9, hex: false }), 256);
    assert_eq!(drawn_bits(&Spec::Gaussians { n: 3, mean: 0.0, deviation: 1.0, digits: 5 }), 256, "two pairs");
    let distinct =
        Spec::Strings { n: 10, length: 4, characters: "0123456789".chars().collect(), replacement: false };
    assert_eq!(drawn_bits(&distinct), 640, "a shuffle of indices: a word a string");
    assert_eq!(drawn_bits(&Spec::DecimalFractions { n: 3, places: 19, replacement: true }), 384);
}

#[test]
fn distinct_draws_reach_their_whole_domain_in_n_words() {
    // Every string of 4 of 10 digits, and every fraction of 4 places: a shuffle of the domain,
    // not a collector's ~n ln n redraws.
    let words = std::cell::Cell::new(0u64);
    let mut inner = source();
    let mut counted = || {
        words.set(words.get() + 1);
        inner()
    };
    let all = Spec::Strings {
        n: 10_000,
        length: 4,
        characters: "0123456789".chars().collect(),
        replacement: false,
    };
    let Value::Array(s) = draw(&all, &mut counted).unwrap() else { panic!() };
    let distinct: std::collections::HashSet<&str> = s.iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(distinct.len(), 10_000);
    assert!(distinct.contains("0000") && distinct.contains("9999"));
    let Value::Array(f) =
        draw(&Spec::DecimalFractions { n: 10_000, places: 4, replacement: false }, &mut counted).unwrap()
    else {
        panic!()
    };
    let distinct: std::collections::HashSet<String> = f.iter().map(Value::to_string).collect();
    assert_eq!(distinct.len(), 10_000);
    assert!(words.get() < 20_100, "{} words for 20,000 distinct values", words.get());
    assert_eq!(nth_string(0, 3, &['a', 'b']), "aaa");
    assert_eq!(nth_string(6, 3, &['a', 'b']), "bba");
}

#[test]
fn a_failing_source_ends_the_draw() {
    let mut failing = || Err::<u64, &str>("refused");
    assert_eq!(draw(&Spec::Uuids(1), &mut failing), Err("refused"));
}
