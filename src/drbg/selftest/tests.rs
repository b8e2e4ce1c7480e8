//! The self-tests pass on the real mechanisms, and fail, naming the test, on faulty ones.

use super::mutation::{Careless, Revived, mutated};
use super::{Outcome, Report, SelfTestError, run, run_all, sp800_90a, vectors};
use crate::drbg::Algorithm;
use crate::drbg::ctr_drbg::Aes256CtrDrbg;
use crate::drbg::hash_drbg::HashSha256Drbg;
use crate::drbg::hmac_drbg::HmacSha256Drbg;

/// The SP 800-90A tests, in the order they run.
const SP800_90A: [&str; 6] = [
    "instantiate+generate",
    "reseed",
    "prediction resistance",
    "uninstantiate",
    "reseed counter limit",
    "generate before instantiate",
];

fn names(report: &Report) -> Vec<&'static str> {
    report.outcomes.iter().map(|o| o.name).collect()
}

#[test]
fn all_pass() {
    run_all().unwrap();
}

/// Each SP 800-90A mechanism runs the whole list (CTR_DRBG its keystream paths too), every
/// algorithm the seeded round trip last, and every test passes.
#[test]
fn every_algorithm_runs_its_tests_and_passes_them() {
    for alg in Algorithm::ALL {
        let report = run(alg);
        assert!(report.passed(), "{report:?}");
        assert_eq!(report.check(), Ok(()));
        let mut expected: Vec<&str> = if alg.approved() { SP800_90A.to_vec() } else { vec!["known answer"] };
        if alg.info().standard.contains("CTR_DRBG") {
            expected.extend(["keystream batches", "own keystream loops"]);
        }
        expected.push("seeded round trip");
        assert_eq!(names(&report), expected, "{alg}");
    }
}

/// A flipped bit of V after every Generate (a fault in the state update) fails the three
/// known-answer tests of every SP 800-90A mechanism, and only them: the report names them,
/// and the first is what `check` (the command line's refusal) says.
#[test]
fn a_flipped_bit_in_the_state_update_fails_the_known_answer_tests() {
    for alg in Algorithm::ALL.into_iter().filter(|a| a.approved()) {
        let report = mutated(alg);
        let failed: Vec<&str> = report.failures().iter().map(|f| f.what).collect();
        assert_eq!(failed, ["instantiate+generate", "reseed", "prediction resistance"], "{alg}");
        assert_eq!(report.check(), Err(SelfTestError { alg, what: "instantiate+generate" }));
        assert_eq!(
            report.check().unwrap_err().to_string(),
            format!("{alg} self-test failed: instantiate+generate")
        );
    }
}

/// An Uninstantiate that zeroizes nothing and a reseed interval that is not enforced fail
/// their own tests (which are therefore not vacuous), and nothing else.
#[test]
fn a_careless_uninstantiate_and_reseed_interval_fail_their_tests() {
    let outcomes = sp800_90a::run::<Careless<HmacSha256Drbg>>(&vectors::HMAC_SHA256);
    let report = Report { alg: Algorithm::HmacSha256, outcomes };
    let failed: Vec<&str> = report.failures().iter().map(|f| f.what).collect();
    assert_eq!(failed, ["uninstantiate", "reseed counter limit"]);
}

/// A reseed that brings an uninstantiated instance back fails the uninstantiate test, and
/// nothing else.
#[test]
fn a_reseed_reviving_an_uninstantiated_instance_fails_its_test() {
    for report in [
        Report {
            alg: Algorithm::HmacSha256,
            outcomes: sp800_90a::run::<Revived<HmacSha256Drbg>>(&vectors::HMAC_SHA256),
        },
        Report {
            alg: Algorithm::HashSha256,
            outcomes: sp800_90a::run::<Revived<HashSha256Drbg>>(&vectors::HASH_SHA256),
        },
        Report {
            alg: Algorithm::Aes256Ctr,
            outcomes: sp800_90a::run::<Revived<Aes256CtrDrbg>>(&vectors::AES256),
        },
    ] {
        let failed: Vec<&str> = report.failures().iter().map(|f| f.what).collect();
        assert_eq!(failed, ["uninstantiate"], "{}", report.alg);
    }
}

#[test]
fn a_report_passes_only_if_every_test_passed() {
    let report = Report {
        alg: Algorithm::Blake3,
        outcomes: vec![Outcome::of("known answer", true), Outcome::of("seeded round trip", false)],
    };
    assert!(!report.passed());
    assert_eq!(report.failures(), [SelfTestError { alg: Algorithm::Blake3, what: "seeded round trip" }]);
}

/// The start-up check of drbgd's own keystream loops passes on each path the CPU can
/// run, whatever its class (the path is passed in: no process-wide choice is touched).
#[cfg(target_arch = "x86_64")]
#[test]
fn the_own_keystreams_are_checked_at_start_up() {
    use super::primitives::own_path_agrees;
    use crate::drbg::ctr_drbg::x86::Path;
    for path in Path::ALL {
        if !path.supported() {
            eprintln!("SKIPPED ({path:?}): this CPU lacks its features");
            continue;
        }
        assert!(own_path_agrees::<aes::Aes128Enc>(path), "{path:?}");
        assert!(own_path_agrees::<aes::Aes192Enc>(path), "{path:?}");
        assert!(own_path_agrees::<aes::Aes256Enc>(path), "{path:?}");
    }
}

/// The start-up check of the eight-block AVX2 ChaCha20 keystream runs (and passes)
/// wherever the CPU has AVX2, AVX-512 or not.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_avx2_chacha20_keystream_is_checked_at_start_up() {
    use crate::drbg::chacha20::avx2;
    if !avx2::supported() {
        eprintln!("SKIPPED: this CPU lacks AVX2");
        return;
    }
    avx2::set_use(avx2::Use::Always);
    assert!(super::primitives::chacha_avx2_agrees());
    avx2::set_use(avx2::Use::Auto);
}
