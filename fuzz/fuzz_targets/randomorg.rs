//! Arbitrary JSON-RPC bodies through the RANDOM.ORG door's domain: the framing, the method
//! table, every method's parameters, the values drawn for a generating method (from a fixed
//! word source), and the signed `random` object's bytes: an answer or an error object, never a
//! panic; a `random` object's bytes re-made from their own parse are the same bytes; a
//! generating request's values are as many as asked for.
// libFuzzer's main; built as a test (`cargo test --all-targets`), libtest's, with no tests.
#![cfg_attr(not(test), no_main)]

use drbgd::randomorg::envelope::Envelope;
use drbgd::randomorg::params::Params;
use drbgd::randomorg::request::{self, Method, Spec};
use drbgd::randomorg::{canonical, values};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The draws' words: SHA-256 of a counter, the first 8 bytes of each.
fn words() -> impl FnMut() -> Result<u64, ()> {
    use sha2::Digest;
    let mut counter = 0u64;
    move || {
        counter += 1;
        let digest = sha2::Sha256::digest(counter.to_le_bytes());
        Ok(u64::from_le_bytes(digest[..8].try_into().unwrap_or_default()))
    }
}

/// How many values `spec` asks for (sequences: how many sequences).
fn count(spec: &Spec) -> usize {
    match spec {
        Spec::Integers(each) => each.length,
        Spec::DecimalFractions { n, .. } | Spec::Gaussians { n, .. } => *n,
        Spec::Strings { n, .. } | Spec::Uuids(n) | Spec::Blobs { n, .. } => *n,
        Spec::IntegerSequences(seqs) => seqs.len(),
    }
}

/// The bytes of a `random` object are a fixed point: parsed and written again, the same.
fn fixed_point(random: &serde_json::Map<String, Value>) {
    let Some(bytes) = canonical::canonical(random) else { return };
    let parsed: Value = serde_json::from_slice(&bytes).expect("canonical bytes are JSON");
    let again = canonical::canonical(parsed.as_object().expect("an object")).expect("still a random object");
    assert_eq!(again, bytes, "canonical bytes re-made from their parse");
}

fuzz_target!(|data: &[u8]| {
    let Ok(call) = Envelope::read(data) else { return };
    let Some(method) = Method::named(&call.method) else { return };
    let allowed = method.allowed();
    let Ok(params) = Params::of(call.params.as_ref(), &allowed) else { return };
    match method {
        Method::Generate { kind, .. } => {
            let Ok(req) = request::read(kind, &params) else { return };
            let _ = values::bits_used(&req.spec);
            let Ok(Value::Array(data)) = values::draw(&req.spec, &mut words()) else {
                panic!("a draw from an infallible source failed")
            };
            assert_eq!(data.len(), count(&req.spec));
            let mut random: serde_json::Map<String, Value> =
                req.echo.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
            let names = [kind.names().1, "hash", "", "", "", "", ""];
            for (name, value) in [
                "method",
                "hashedApiKey",
                "license",
                "licenseData",
                "userData",
                "ticketData",
                "completionTime",
            ]
            .into_iter()
            .zip(names)
            {
                random.insert(name.into(), Value::from(value));
            }
            random.insert("data".into(), Value::Array(data));
            random.insert("serialNumber".into(), Value::from(7));
            assert!(canonical::canonical(&random).is_some(), "every member of a signed random");
            fixed_point(&random);
        }
        Method::VerifySignature => {
            if let Some(Value::Object(random)) = params.get("random") {
                fixed_point(random);
            }
        }
        _ => {}
    }
});
