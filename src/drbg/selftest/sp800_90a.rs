//! The self-tests of one SP 800-90A mechanism, generic over its type (FIPS 140-3 IG 10.3.A's
//! known-answer tests, SP 800-90A 11.3's health tests): the three CAVP procedures of
//! `tests/kat.rs` on one record each (no_reseed, pr_false, pr_true), Uninstantiate, and the two
//! error paths (the reseed counter limit, generate before instantiate).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use data_encoding::HEXLOWER;

use super::outcome::Outcome;
use super::vectors::{MechanismKats, NoReseedKat, PrKat, ReseedKat};
use crate::drbg::entropy::{EntropyError, EntropySource};
use crate::drbg::generator::{ApprovedDrbg, Drbg, DrbgError, ReseedRequired};
use crate::drbg::reseed::{Managed, ReseedPolicy};
use crate::drbg::stats::Stats;

/// Entropy input (up to 48 bytes) and nonce (up to 16) of the tests with no known answer.
const ENTROPY: [u8; 48] = [0x11; 48];
const NONCE: [u8; 16] = [0x22; 16];
/// A buffer's content before a Generate that must not write to it.
const UNTOUCHED: [u8; 32] = [0x5a; 32];

/// Runs every test of mechanism `G`, with `kats` its known answers.
pub(super) fn run<G: ApprovedDrbg>(kats: &MechanismKats) -> Vec<Outcome> {
    vec![
        Outcome::of("instantiate+generate", no_reseed::<G>(&kats.no_reseed)),
        Outcome::of("reseed", reseed::<G>(&kats.reseed)),
        Outcome::of("prediction resistance", prediction_resistance::<G>(&kats.pr)),
        Outcome::of("uninstantiate", uninstantiate::<G>()),
        Outcome::of("reseed counter limit", reseed_counter_limit::<G>()),
        Outcome::of("generate before instantiate", generate_before_instantiate::<G>()),
    ]
}

/// The bytes of hex strings; `None` if one is not hex.
fn decode<const N: usize>(hex: [&str; N]) -> Option<[Vec<u8>; N]> {
    let mut out: [Vec<u8>; N] = std::array::from_fn(|_| Vec::new());
    for (bytes, text) in out.iter_mut().zip(hex) {
        *bytes = HEXLOWER.decode(text.as_bytes()).ok()?;
    }
    Some(out)
}

/// The CAVP procedure for a no_reseed record, through the [`Drbg`] trait the pool drives:
/// instantiate, generate twice, the second output compared with the record's.
fn no_reseed<G: Drbg>(kat: &NoReseedKat) -> bool {
    let Some([entropy, nonce, returned]) = decode([kat.entropy, kat.nonce, kat.returned]) else {
        return false;
    };
    let mut drbg = G::instantiate(&entropy, &nonce, &[]);
    let mut out = vec![0u8; returned.len()];
    let ok = drbg.generate(&mut out, &[]).is_ok() && drbg.generate(&mut out, &[]).is_ok();
    ok && out == returned
}

/// The CAVP procedure for a pr_false record: instantiate, reseed with the record's entropy and
/// additional input, generate twice with additional input, the second output compared.
fn reseed<G: Drbg>(kat: &ReseedKat) -> bool {
    let [first, second] = kat.additional;
    let hex =
        [kat.entropy, kat.nonce, kat.entropy_reseed, kat.additional_reseed, first, second, kat.returned];
    let Some([entropy, nonce, entropy_reseed, additional_reseed, first, second, returned]) = decode(hex)
    else {
        return false;
    };
    let mut drbg = G::instantiate(&entropy, &nonce, &[]);
    drbg.reseed(&entropy_reseed, &additional_reseed);
    let mut out = vec![0u8; returned.len()];
    let ok = drbg.generate(&mut out, &first).is_ok() && drbg.generate(&mut out, &second).is_ok();
    ok && out == returned
}

/// The CAVP procedure for a pr_true record: each Generate preceded by the reseed prediction
/// resistance forces, with the record's EntropyInputPR and the request's additional input (SP
/// 800-90A 9.3.1), the Generate then without additional input; the second output compared.
fn prediction_resistance<G: Drbg>(kat: &PrKat) -> bool {
    let ([pr_first, pr_second], [first, second]) = (kat.entropy_pr, kat.additional);
    let hex = [kat.entropy, kat.nonce, pr_first, pr_second, first, second, kat.returned];
    let Some([entropy, nonce, pr_first, pr_second, first, second, returned]) = decode(hex) else {
        return false;
    };
    let mut drbg = G::instantiate(&entropy, &nonce, &[]);
    let mut out = vec![0u8; returned.len()];
    for (pr_entropy, additional) in [(&pr_first, &first), (&pr_second, &second)] {
        drbg.reseed(pr_entropy, additional);
        if drbg.generate(&mut out, &[]).is_err() {
            return false;
        }
    }
    out == returned
}

/// An instance of `G` from fixed inputs, for the tests that compare with no known answer.
fn fixed<G: Drbg>() -> G {
    G::instantiate(&ENTROPY[..G::ENTROPY_LEN], &NONCE[..G::NONCE_LEN], b"drbgd self-test")
}

/// Uninstantiate (SP 800-90A 9.4): the state of an instance that has generated is not zero
/// before and is after, and Generate is then refused without writing, still after a reseed
/// (9.2 step 1: an invalid state is not reseeded), which leaves the state zero.
fn uninstantiate<G: ApprovedDrbg>() -> bool {
    let mut drbg = fixed::<G>();
    let mut out = UNTOUCHED;
    let used = drbg.generate(&mut out, &[]).is_ok() && !drbg.is_zeroized();
    drbg.uninstantiate();
    let zeroized = drbg.is_zeroized();
    out = UNTOUCHED;
    let refused = drbg.generate(&mut out, &[]) == Err(ReseedRequired) && out == UNTOUCHED;
    drbg.reseed(&ENTROPY[..G::ENTROPY_LEN], b"additional");
    let stays_refused =
        drbg.generate(&mut out, &[]) == Err(ReseedRequired) && out == UNTOUCHED && drbg.is_zeroized();
    used && zeroized && refused && stays_refused
}

/// The reseed counter's error path (step 1 of each Generate algorithm: 10.1.1.4, 10.1.2.5,
/// 10.2.1.5), with the interval lowered to 2: two Generates served, the third refused with
/// [`ReseedRequired`] without writing, and after a reseed Generate serves again.
fn reseed_counter_limit<G: ApprovedDrbg>() -> bool {
    let mut drbg = fixed::<G>();
    drbg.set_reseed_interval(2);
    let mut out = UNTOUCHED;
    let served = drbg.generate(&mut out, &[]).is_ok() && drbg.generate(&mut out, b"additional").is_ok();
    out = UNTOUCHED;
    let refused = drbg.generate(&mut out, &[]) == Err(ReseedRequired) && out == UNTOUCHED;
    drbg.reseed(&ENTROPY[..G::ENTROPY_LEN], &[]);
    let resumed = drbg.generate(&mut out, &[]).is_ok() && out != UNTOUCHED;
    served && refused && resumed
}

/// A fixed seed that can be switched off, for [`generate_before_instantiate`] (whose output is
/// never served).
#[derive(Debug)]
struct Switched(AtomicBool);

impl EntropySource for Switched {
    fn fill(&self, buf: &mut [u8]) -> Result<(), EntropyError> {
        if !self.0.load(Ordering::Relaxed) {
            return Err(EntropyError);
        }
        buf.fill(0x33);
        Ok(())
    }
}

/// SP 800-90A 11.3's "generate before instantiate". A mechanism value exists only once
/// instantiated (`instantiate` is its one constructor), so the call cannot be written against
/// it. What can be without an instantiated state is the managed shard around it, which the
/// pool serves from: it cannot be built without a seed, and once its state is gone (dropped
/// after a health-test failure or a panic) it must refuse, handing out nothing (the buffer
/// zeroed), until it has instantiated again. Both are checked with the entropy source off,
/// then the recovery with it on.
fn generate_before_instantiate<G: Drbg>() -> bool {
    let source = Arc::new(Switched(AtomicBool::new(false)));
    let (stats, label): (Arc<Stats>, Arc<[u8]>) = (Arc::default(), Arc::from(&b"drbgd self-test"[..]));
    let shard = |source: &Arc<Switched>| {
        Managed::<G>::new(source.clone(), stats.clone(), label.clone(), ReseedPolicy::default())
    };
    let unbuilt = matches!(shard(&source), Err(DrbgError::EntropyUnavailable));
    source.0.store(true, Ordering::Relaxed);
    let Ok(mut managed) = shard(&source) else { return false };
    managed.discard();
    source.0.store(false, Ordering::Relaxed);
    let mut out = UNTOUCHED;
    let refused = managed.fill(&mut out, false) == Err(DrbgError::EntropyUnavailable)
        && out == [0u8; 32]
        && !managed.ready();
    source.0.store(true, Ordering::Relaxed);
    let recovered = managed.fill(&mut out, false).is_ok() && out != [0u8; 32];
    unbuilt && refused && recovered
}
