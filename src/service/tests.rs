//! The service without a transport: validation by the typed constructors, whole versus
//! streamed output, defaults, and failure while the entropy source is down.

use std::sync::Arc;

use super::*;
use crate::drbg::entropy::{EntropySource, OsEntropy, ScriptedEntropy};
use crate::drbg::{PoolConfig, bits};

fn rules() -> Rules {
    Rules {
        max_bits: 1 << 20,
        max_unary_bits: 1 << 16,
        max_token_bytes: 64,
        max_count: 100,
        stream_threshold_bytes: 1024,
        stream_chunk_bytes: 300,
        stream_buffer_bytes: 1 << 20,
        default_alg: Algorithm::ChaCha20,
        enabled: vec![Algorithm::ChaCha20, Algorithm::Aes256Ctr],
        approved_only: false,
    }
}

fn service_with(entropy: Arc<dyn EntropySource>) -> Service {
    let pool = Pool::new(&PoolConfig { shards: 1, ..PoolConfig::default() }, entropy).unwrap();
    let metrics = Arc::new(Metrics::new(pool.stats().clone()));
    Service::new(Arc::new(pool), metrics, rules())
}

fn service() -> Service {
    service_with(Arc::new(OsEntropy))
}

/// The caller of unauthenticated requests with the default settings: no policy, no quota.
fn anyone() -> Arc<Caller> {
    let metrics = Metrics::new(Arc::default());
    let (registry, _) = crate::callers::Registry::build(&Settings::defaults(), &metrics, None).unwrap();
    registry.anonymous().clone()
}

/// A caller named `name`, with no credentials or limits.
fn named(name: &str) -> Arc<Caller> {
    let metrics = Metrics::new(Arc::default());
    let mut settings = Settings::defaults();
    settings.callers.insert(name.into(), Default::default());
    let (registry, _) = crate::callers::Registry::build(&settings, &metrics, None).unwrap();
    registry.all().find(|c| c.name() == name).unwrap().clone()
}

fn code<T: std::fmt::Debug>(r: Result<T, ApiError>) -> &'static str {
    r.unwrap_err().code()
}

#[test]
fn constructors_apply_the_rules_once() {
    let r = rules();
    let bits = |n, alg| BitsRequest::new(&r, n, alg, Encoding::Hex, false);
    assert_eq!(code(bits(None, None)), "invalid_n");
    assert_eq!(code(bits(Some(0), None)), "invalid_n");
    assert_eq!(code(bits(Some((1 << 20) + 1), None)), "n_too_large");
    assert_eq!(code(bits(Some(8), Some("rc4"))), "unknown_alg");
    assert_eq!(code(bits(Some(8), Some("blake3"))), "alg_disabled");
    assert_eq!(bits(Some(8), Some("AES")).unwrap().alg(), Algorithm::Aes256Ctr);
    assert_eq!(bits(Some(8), None).unwrap().alg(), Algorithm::ChaCha20, "the configured default");
    // Approved-only: a non-approved algorithm is refused as such, enabled (chacha20) or not
    // (blake3); an approved one that is disabled is still alg_disabled.
    let approved = Rules { approved_only: true, default_alg: Algorithm::Aes256Ctr, ..rules() };
    let bits = |alg| BitsRequest::new(&approved, Some(8), alg, Encoding::Hex, false);
    assert_eq!(code(bits(Some("chacha20"))), "alg_not_approved");
    assert_eq!(code(bits(Some("blake3"))), "alg_not_approved");
    assert_eq!(code(bits(Some("hmac_sha256"))), "alg_disabled");
    assert_eq!(code(bits(Some("rc4"))), "unknown_alg");
    assert_eq!(bits(Some("aes")).unwrap().alg(), Algorithm::Aes256Ctr);
    assert_eq!(bits(None).unwrap().alg(), Algorithm::Aes256Ctr);
    assert_eq!(code(BitsRequest::unary(&r, Some((1 << 16) + 1), None, false)), "n_too_large");
    assert_eq!(code(BytesRequest::new(&r, Some((1 << 17) + 1), None, Encoding::Hex, false)), "n_too_large");
    assert_eq!(BytesRequest::new(&r, Some(3), None, Encoding::Hex, false).unwrap().into_bits().n_bits(), 24);

    let token = SecretRequest::new(&r, SecretKind::Token, None, None, None).unwrap();
    assert_eq!((token.bytes(), token.format()), (32, SecretFormat::Base64Url));
    let nonce = SecretRequest::new(&r, SecretKind::Nonce, None, None, None).unwrap();
    assert_eq!((nonce.bytes(), nonce.format()), (12, SecretFormat::Hex));
    assert_eq!(code(SecretRequest::new(&r, SecretKind::Token, Some(65), None, None)), "invalid_bytes");
    assert_eq!(code(SecretRequest::new(&r, SecretKind::Nonce, Some(0), None, None)), "invalid_bytes");
    assert_eq!(code(UuidRequest::new(&r, Some(101), None, None)), "invalid_count");
    assert_eq!(code(UuidRequest::new(&r, None, Some(5), None)), "invalid_version");
    assert_eq!(UuidRequest::new(&r, None, None, None).unwrap().count(), 1);
    assert_eq!(code(IntRequest::new(&r, Some(5), Some(1), None, None)), "invalid_range");
    assert_eq!(code(IntRequest::new(&r, None, Some(1), None, None)), "invalid_integer");
}

#[test]
fn small_outputs_are_whole_and_large_ones_stream_with_the_same_bits_semantics() {
    let s = service();
    let small = BitsRequest::new(s.rules(), Some(8 * 1024 - 3), None, Encoding::Binary, false).unwrap();
    let BitsOutput::Whole(g) = s.bits(&anyone(), None, small).unwrap() else { panic!("1 KiB must be whole") };
    assert_eq!(g.body.len(), 1024);
    assert_eq!(g.body[1023] & 0b111, 0, "unused tail bits are zero");
    assert_eq!(g.ones, bits::count_ones(&g.body));
    // On the stack (64 bytes and fewer) as on the heap, the same semantics.
    let tiny = BitsRequest::new(s.rules(), Some(8 * 64 - 1), None, Encoding::Binary, false).unwrap();
    let BitsOutput::Whole(g) = s.bits(&anyone(), None, tiny).unwrap() else { panic!("64 B must be whole") };
    assert_eq!(g.body.len(), 64);
    assert_eq!(g.body[63] & 1, 0, "the unused tail bit is zero");
    assert_eq!(g.ones, bits::count_ones(&g.body));
    assert_ne!(&g.body[..], &[0u8; 64][..], "the stack buffer was filled");

    let n = 8 * 5000 + 5;
    let large = BitsRequest::new(s.rules(), Some(n), None, Encoding::Json, false).unwrap();
    let BitsOutput::Stream { first, mut rest } = s.bits(&anyone(), None, large).unwrap() else {
        panic!("must stream")
    };
    let mut body = first.expect("the budget has room").to_vec();
    let mut pieces = 1;
    while let Some(chunk) = rest.next_chunk().unwrap() {
        body.extend_from_slice(&chunk.encoded);
        pieces += 1;
    }
    assert!(pieces > 10, "300-byte chunks: {pieces}");
    let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let data = data_encoding::HEXLOWER.decode(doc["data"].as_str().unwrap().as_bytes()).unwrap();
    assert_eq!(data.len() as u64, bits::byte_len(n));
    assert_eq!(doc["ones"].as_u64().unwrap(), bits::count_ones(&data));
    assert_eq!((doc["alg"].as_str().unwrap(), doc["n"].as_u64().unwrap()), ("chacha20", n));
}

#[test]
fn a_binary_stream_reuses_one_recycled_buffer_and_never_repeats_output() {
    let s = service();
    let n = 8 * 300 * 20;
    let req = BitsRequest::new(s.rules(), Some(n), None, Encoding::Binary, false).unwrap();
    let BitsOutput::Stream { first, mut rest } = s.bits(&anyone(), None, req).unwrap() else {
        panic!("must stream")
    };
    let mut seen = std::collections::HashSet::new();
    let mut addresses = std::collections::HashSet::new();
    let mut total = first.as_ref().map_or(0, bytes::Bytes::len);
    while let Some(chunk) = rest.next_chunk().unwrap() {
        // Sent (here: read) and dropped, as hyper does, before the next one is asked for.
        assert!(seen.insert(chunk.encoded.to_vec()), "a chunk repeated an earlier one");
        assert!(chunk.encoded.iter().any(|b| *b != 0));
        addresses.insert(chunk.encoded.as_ptr() as usize);
        total += chunk.encoded.len();
    }
    assert_eq!(total as u64, n / 8);
    assert_eq!(addresses.len(), 1, "every chunk after the first in the same recycled buffer");
    assert_eq!(s.buffers().free(), 1);
}

#[test]
fn streamed_chunks_hold_the_stream_budget_until_they_are_dropped() {
    let s = service();
    let req = || BitsRequest::new(s.rules(), Some(8 * 300 * 20), None, Encoding::Hex, false).unwrap();
    let cost = budget::chunk_cost(s.rules().stream_chunk_bytes);
    let total = s.rules().stream_buffer_bytes;
    let BitsOutput::Stream { first, mut rest } = s.bits(&anyone(), None, req()).unwrap() else {
        panic!("must stream")
    };
    assert_eq!(s.0.budget.available(), total - cost, "the first chunk holds its cost");
    // A chunk generated under a permit holds it until the transport drops it, and every slice.
    let permit = rest.shares().unwrap().try_take().unwrap();
    rest.grant(permit);
    let chunk = rest.next_chunk().unwrap().unwrap().encoded;
    let slice = chunk.slice(1..10);
    drop((chunk, first));
    assert_eq!(s.0.budget.available(), total - cost);
    drop(slice);
    assert_eq!(s.0.budget.available(), total);
    // The caller's share spent by its own chunks: its next stream's first chunk waits, and
    // another caller's is generated at once.
    let shares = rest.shares().unwrap().clone();
    let held: Vec<_> = std::iter::from_fn(|| shares.try_take()).collect();
    assert_eq!(held.len(), total / budget::CALLER_SHARE / cost);
    let Ok(BitsOutput::Stream { first: waiting, .. }) = s.bits(&anyone(), None, req()) else {
        panic!("a stream")
    };
    assert!(waiting.is_none(), "no chunk generated without its permit: the transport waits");
    let other = named("other");
    let Ok(BitsOutput::Stream { first: served, .. }) = s.bits(&other, None, req()) else {
        panic!("a stream")
    };
    assert!(served.is_some(), "another caller's stream finds the rest of the budget");
    drop((held, served));
    assert_eq!(s.0.budget.available(), total);
}

#[test]
fn values_follow_their_requests() {
    let s = service();
    let r = s.rules().clone();
    let req = SecretRequest::new(&r, SecretKind::Token, Some(48), Some(SecretFormat::Hex), Some("aes256ctr"));
    let t = s.secret(&anyone(), &req.unwrap()).unwrap();
    assert_eq!((t.value.len(), t.alg), (96, Algorithm::Aes256Ctr));
    let u = s.uuids(&anyone(), UuidRequest::new(&r, Some(50), Some(7), None).unwrap()).unwrap();
    assert!(u.uuids.iter().all(|id| id.get_version_num() == 7));
    let i = s.ints(&anyone(), IntRequest::new(&r, Some(-3), Some(3), Some(100), None).unwrap()).unwrap();
    assert!(i.values.len() == 100 && i.values.iter().all(|v| (-3..=3).contains(v)));
}

/// An algorithm withheld for a failed start-up self-test is refused before anything is sent:
/// no stream opens for it, with prediction resistance or without.
#[test]
fn a_withheld_algorithm_is_refused_before_a_stream_opens() {
    let config = PoolConfig { shards: 1, withheld: vec![Algorithm::Aes256Ctr], ..PoolConfig::default() };
    let pool = Pool::new(&config, Arc::new(OsEntropy)).unwrap();
    let metrics = Arc::new(Metrics::new(pool.stats().clone()));
    let s = Service::new(Arc::new(pool), metrics, rules());
    let r = s.rules().clone();
    for pr in [true, false] {
        let req = |alg| BitsRequest::new(&r, Some(1 << 16), alg, Encoding::Hex, pr).unwrap();
        let refused = Some("selftest_failed");
        assert_eq!(
            s.stream(&anyone(), req(Some("aes256ctr")), 300).err().map(|e| e.code()),
            refused,
            "pr {pr}"
        );
        assert_eq!(
            s.bits(&anyone(), None, req(Some("aes256ctr"))).err().map(|e| e.code()),
            refused,
            "pr {pr}"
        );
        assert_eq!(s.whole(&anyone(), &req(Some("aes256ctr"))).err().map(|e| e.code()), refused, "pr {pr}");
        assert!(s.stream(&anyone(), req(None), 300).is_ok(), "the others serve");
    }
}

#[test]
fn a_generator_that_cannot_reseed_refuses_every_kind_of_output() {
    let entropy = Arc::new(ScriptedEntropy::default());
    let s = service_with(entropy.clone());
    let r = s.rules().clone();
    entropy.set_failing(true);
    let pr = BitsRequest::new(&r, Some(256), None, Encoding::Hex, true).unwrap();
    assert_eq!(code(s.bits(&anyone(), None, pr)), "entropy_unavailable");
    // The single shard's chacha20 now waits for a reseed: everything from it is refused.
    assert_eq!(
        code(s.bits(&anyone(), None, BitsRequest::new(&r, Some(256), None, Encoding::Hex, false).unwrap())),
        "entropy_unavailable"
    );
    assert_eq!(
        code(s.bits(
            &anyone(),
            None,
            BitsRequest::new(&r, Some(1 << 16), None, Encoding::Hex, false).unwrap()
        )),
        "entropy_unavailable"
    );
    assert_eq!(
        code(s.secret(&anyone(), &SecretRequest::new(&r, SecretKind::Token, None, None, None).unwrap())),
        "entropy_unavailable"
    );
    assert_eq!(
        code(s.uuids(&anyone(), UuidRequest::new(&r, None, None, None).unwrap())),
        "entropy_unavailable"
    );
    assert_eq!(
        code(s.ints(&anyone(), IntRequest::new(&r, Some(1), Some(6), Some(100), None).unwrap())),
        "entropy_unavailable"
    );
    entropy.set_failing(false);
    assert!(s.ints(&anyone(), IntRequest::new(&r, Some(1), Some(6), Some(100), None).unwrap()).is_ok());
}
