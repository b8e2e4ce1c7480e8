//! The algorithms drbgd serves, described once.
//!
//! Everything that differs between algorithms lives in this file: the [`AlgorithmInfo`] table
//! (name, aliases, standard, whether SP 800-90A approves it, security strength, construction,
//! the self-tests) and [`Algorithm::with_mechanism`], the one `match` from an algorithm to the
//! [`Drbg`] type implementing it. The [`Algorithm`] enum itself is declared alone beside it
//! (`algorithm_id.rs`), so that each mechanism names its algorithm without naming this table,
//! which names every mechanism. The pool, the self-tests, the command line, the config file,
//! the metrics and `GET /algorithms` all read from here; adding an algorithm means adding a
//! variant (in `algorithm_id.rs`), a table row and a match arm, and the compiler points at
//! each.

use std::fmt;
use std::str::FromStr;

use super::algorithm_id::Algorithm;
use super::blake3_xof::Blake3Drbg;
use super::chacha20::ChaCha20Drbg;
use super::ctr_drbg::{Aes128CtrDrbg, Aes192CtrDrbg, Aes256CtrDrbg};
use super::generator::Drbg;
use super::hash_drbg::{HashSha256Drbg, HashSha512Drbg};
use super::hmac_drbg::{HmacSha256Drbg, HmacSha512Drbg};
use super::randen::RandenDrbg;
use super::selftest::outcome::Outcome;
use super::selftest::suites;

/// What an algorithm is: one row of the table, one row per [`Algorithm`] ([`Algorithm::info`]).
#[derive(Debug)]
pub struct AlgorithmInfo {
    /// The algorithm this row describes.
    pub algorithm: Algorithm,
    /// The canonical name: API parameter, metrics label, `[drbg.<name>]` config table.
    pub name: &'static str,
    /// Other names accepted wherever an algorithm is parsed (case-insensitive).
    pub aliases: &'static [&'static str],
    /// The standard or specification the mechanism follows.
    pub standard: &'static str,
    /// Whether it is an SP 800-90A Rev. 1 mechanism (CTR_DRBG, Hash_DRBG, HMAC_DRBG): the only
    /// ones served with `drbg.approved_only`.
    pub approved: bool,
    /// How the mechanism produces output and erases what produced it.
    pub construction: &'static str,
    /// Security strength in bits: the AES key size for CTR_DRBG (SP 800-90A table 3), the
    /// hash's highest strength for Hash_DRBG and HMAC_DRBG (table 2: 256 for SHA-256 and
    /// SHA-512), the key size for ChaCha20 and keyed BLAKE3, and the 128-bit capacity for Randen.
    pub security_strength_bits: u32,
    /// The algorithm's start-up self-tests, defined in [`super::selftest`] (which adds a seeded round
    /// trip of the full mechanism): for an SP 800-90A mechanism, known answers of instantiate,
    /// generate, reseed and prediction resistance, uninstantiate and the error paths; for the
    /// others, a known answer of the primitive.
    pub self_tests: fn() -> Vec<Outcome>,
}

const CTR_CONSTRUCTION: &str = "Update step after every Generate; at most 2^19 bits per internal Generate";
const HASH_CONSTRUCTION: &str = "V = V + Hash(0x03 || V) + C + reseed_counter after every Generate; \
                                 at most 2^19 bits per internal Generate";
const HMAC_CONSTRUCTION: &str = "HMAC_DRBG_Update (new Key and V) after every Generate; \
                                 at most 2^19 bits per internal Generate";

/// The algorithms, in the order of [`Algorithm::ALL`] (a compile-time check below keeps the
/// two aligned).
static TABLE: [AlgorithmInfo; Algorithm::COUNT] = [
    AlgorithmInfo {
        algorithm: Algorithm::ChaCha20,
        name: "chacha20",
        aliases: &["chacha", "chacha20rng"],
        standard: "ChaCha20 (RFC 8439 block function, 20 rounds); not a NIST DRBG",
        approved: false,
        construction: "fast key erasure: each 1 KiB keystream batch yields the next key",
        security_strength_bits: 256,
        self_tests: suites::chacha20,
    },
    AlgorithmInfo {
        algorithm: Algorithm::Aes256Ctr,
        name: "aes256ctr",
        aliases: &["aes", "aes256", "aes-256-ctr", "aes256-ctr", "ctr_drbg", "ctr-drbg", "ctrdrbg"],
        standard: "NIST SP 800-90A Rev. 1 CTR_DRBG (10.2.1) with AES-256 and the derivation function",
        approved: true,
        construction: CTR_CONSTRUCTION,
        security_strength_bits: 256,
        self_tests: suites::aes256ctr,
    },
    AlgorithmInfo {
        algorithm: Algorithm::Blake3,
        name: "blake3",
        aliases: &["blake3xof", "blake3-xof", "blake3_xof"],
        standard: "keyed BLAKE3 XOF (BLAKE3 specification); not a NIST DRBG",
        approved: false,
        construction: "fast key erasure over a keyed hash of a 64-bit counter",
        security_strength_bits: 256,
        self_tests: suites::blake3,
    },
    AlgorithmInfo {
        algorithm: Algorithm::Randen,
        name: "randen",
        aliases: &[],
        standard: "Randen (Google, arXiv:1810.02227; Abseil's engine); not a NIST DRBG",
        approved: false,
        construction: "sponge over a 16-branch Feistel permutation of 2-round AES functions; \
                       handed-out bytes wiped",
        security_strength_bits: 128,
        self_tests: suites::randen,
    },
    AlgorithmInfo {
        algorithm: Algorithm::Aes128Ctr,
        name: "aes128ctr",
        aliases: &["aes128", "aes-128-ctr", "aes128-ctr"],
        standard: "NIST SP 800-90A Rev. 1 CTR_DRBG (10.2.1) with AES-128 and the derivation function",
        approved: true,
        construction: CTR_CONSTRUCTION,
        security_strength_bits: 128,
        self_tests: suites::aes128ctr,
    },
    AlgorithmInfo {
        algorithm: Algorithm::Aes192Ctr,
        name: "aes192ctr",
        aliases: &["aes192", "aes-192-ctr", "aes192-ctr"],
        standard: "NIST SP 800-90A Rev. 1 CTR_DRBG (10.2.1) with AES-192 and the derivation function",
        approved: true,
        construction: CTR_CONSTRUCTION,
        security_strength_bits: 192,
        self_tests: suites::aes192ctr,
    },
    AlgorithmInfo {
        algorithm: Algorithm::HashSha256,
        name: "hash_sha256",
        aliases: &["hash-sha256", "hash_drbg", "hash-drbg"],
        standard: "NIST SP 800-90A Rev. 1 Hash_DRBG (10.1.1) with SHA-256",
        approved: true,
        construction: HASH_CONSTRUCTION,
        security_strength_bits: 256,
        self_tests: suites::hash_sha256,
    },
    AlgorithmInfo {
        algorithm: Algorithm::HashSha512,
        name: "hash_sha512",
        aliases: &["hash-sha512"],
        standard: "NIST SP 800-90A Rev. 1 Hash_DRBG (10.1.1) with SHA-512",
        approved: true,
        construction: HASH_CONSTRUCTION,
        security_strength_bits: 256,
        self_tests: suites::hash_sha512,
    },
    AlgorithmInfo {
        algorithm: Algorithm::HmacSha256,
        name: "hmac_sha256",
        aliases: &["hmac-sha256", "hmac_drbg", "hmac-drbg"],
        standard: "NIST SP 800-90A Rev. 1 HMAC_DRBG (10.1.2) with SHA-256",
        approved: true,
        construction: HMAC_CONSTRUCTION,
        security_strength_bits: 256,
        self_tests: suites::hmac_sha256,
    },
    AlgorithmInfo {
        algorithm: Algorithm::HmacSha512,
        name: "hmac_sha512",
        aliases: &["hmac-sha512"],
        standard: "NIST SP 800-90A Rev. 1 HMAC_DRBG (10.1.2) with SHA-512",
        approved: true,
        construction: HMAC_CONSTRUCTION,
        security_strength_bits: 256,
        self_tests: suites::hmac_sha512,
    },
];

// Row i of the table describes ALL[i], and ALL[i] has index i.
const _: () = {
    let mut i = 0;
    while i < Algorithm::COUNT {
        assert!(TABLE[i].algorithm as usize == i && Algorithm::ALL[i] as usize == i);
        i += 1;
    }
};

/// Code generic over the mechanism type, run for an algorithm chosen at run time by
/// [`Algorithm::with_mechanism`] (building the pool's instances, the self-tests' round trip,
/// `drbgd generate --seed`).
pub trait WithMechanism {
    /// What the code returns.
    type Output;
    /// Runs the code for mechanism `G`.
    fn run<G: Drbg>(self) -> Self::Output;
}

impl Algorithm {
    /// This algorithm's row of the table.
    pub const fn info(self) -> &'static AlgorithmInfo {
        &TABLE[self.index()]
    }

    /// Runs `code` with the mechanism type that implements this algorithm.
    pub fn with_mechanism<C: WithMechanism>(self, code: C) -> C::Output {
        match self {
            Algorithm::ChaCha20 => code.run::<ChaCha20Drbg>(),
            Algorithm::Aes256Ctr => code.run::<Aes256CtrDrbg>(),
            Algorithm::Blake3 => code.run::<Blake3Drbg>(),
            Algorithm::Randen => code.run::<RandenDrbg>(),
            Algorithm::Aes128Ctr => code.run::<Aes128CtrDrbg>(),
            Algorithm::Aes192Ctr => code.run::<Aes192CtrDrbg>(),
            Algorithm::HashSha256 => code.run::<HashSha256Drbg>(),
            Algorithm::HashSha512 => code.run::<HashSha512Drbg>(),
            Algorithm::HmacSha256 => code.run::<HmacSha256Drbg>(),
            Algorithm::HmacSha512 => code.run::<HmacSha512Drbg>(),
        }
    }

    /// The canonical name: `chacha20`, `aes256ctr`, `blake3`, `randen`, `aes128ctr`,
    /// `aes192ctr`, `hash_sha256`, `hash_sha512`, `hmac_sha256` or `hmac_sha512`.
    pub const fn name(self) -> &'static str {
        self.info().name
    }

    /// Whether it is an SP 800-90A mechanism (see [`AlgorithmInfo::approved`]).
    pub const fn approved(self) -> bool {
        self.info().approved
    }

    /// Security strength in bits (see [`AlgorithmInfo::security_strength_bits`]).
    pub const fn security_strength_bits(self) -> u32 {
        self.info().security_strength_bits
    }

    /// The algorithm with this canonical name (exact: no aliases, no case folding), as used
    /// for the `[drbg.<name>]` config tables.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|alg| alg.name() == name)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The canonical names, comma-separated (for messages).
pub fn names() -> String {
    Algorithm::ALL.map(Algorithm::name).join(", ")
}

/// The name given is not one of the algorithms or their aliases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown algorithm (expected one of {})", names())]
pub struct UnknownAlgorithm;

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    /// Case-insensitive; accepts the canonical names and the aliases of [`AlgorithmInfo`]
    /// (`chacha`, `aes`, `aes256`, `ctr_drbg`, `ctr-drbg`, `blake3-xof`, `hash-drbg`, ...).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        TABLE
            .iter()
            .find(|info| {
                info.name.eq_ignore_ascii_case(s) || info.aliases.iter().any(|a| a.eq_ignore_ascii_case(s))
            })
            .map(|info| info.algorithm)
            .ok_or(UnknownAlgorithm)
    }
}

/// Written as the canonical name.
impl serde::Serialize for Algorithm {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Read from a name or alias, as [`FromStr`] parses it.
impl<'de> serde::Deserialize<'de> for Algorithm {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Algorithm;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "an algorithm name ({})", names())
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Algorithm, E> {
                s.parse().map_err(|_| E::invalid_value(serde::de::Unexpected::Str(s), &self))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_parse_to_their_algorithm_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for alg in Algorithm::ALL {
            let info = alg.info();
            assert_eq!(info.algorithm, alg);
            for name in std::iter::once(&info.name).chain(info.aliases) {
                assert!(seen.insert(*name), "{name} is listed twice");
                assert_eq!(name.parse::<Algorithm>(), Ok(alg));
                assert_eq!(name.to_ascii_uppercase().parse::<Algorithm>(), Ok(alg));
            }
            assert_eq!(Algorithm::from_name(info.name), Some(alg));
        }
        assert_eq!(" AES ".parse::<Algorithm>(), Ok(Algorithm::Aes256Ctr));
        assert_eq!("hash_drbg".parse::<Algorithm>(), Ok(Algorithm::HashSha256));
        assert_eq!("HMAC-DRBG".parse::<Algorithm>(), Ok(Algorithm::HmacSha256));
        assert_eq!("rc4".parse::<Algorithm>(), Err(UnknownAlgorithm));
        assert_eq!(Algorithm::from_name("aes"), None);
    }

    #[test]
    fn the_sp800_90a_mechanisms_and_only_they_are_approved() {
        let approved: Vec<Algorithm> = Algorithm::ALL.into_iter().filter(|a| a.approved()).collect();
        assert_eq!(
            approved,
            [
                Algorithm::Aes256Ctr,
                Algorithm::Aes128Ctr,
                Algorithm::Aes192Ctr,
                Algorithm::HashSha256,
                Algorithm::HashSha512,
                Algorithm::HmacSha256,
                Algorithm::HmacSha512,
            ]
        );
        for alg in Algorithm::ALL {
            assert_eq!(alg.approved(), alg.info().standard.starts_with("NIST SP 800-90A"), "{alg}");
        }
    }

    #[test]
    fn each_mechanism_implements_its_algorithm() {
        struct Named;
        impl WithMechanism for Named {
            type Output = Algorithm;
            fn run<G: Drbg>(self) -> Algorithm {
                G::ALGORITHM
            }
        }
        for alg in Algorithm::ALL {
            assert_eq!(alg.with_mechanism(Named), alg);
        }
    }

    #[test]
    fn serde_uses_the_canonical_name_and_accepts_aliases() {
        assert_eq!(serde_json::to_string(&Algorithm::Aes192Ctr).unwrap(), "\"aes192ctr\"");
        assert_eq!(serde_json::from_str::<Algorithm>("\"ctr-drbg\"").unwrap(), Algorithm::Aes256Ctr);
        let e = serde_json::from_str::<Algorithm>("\"rc4\"").unwrap_err().to_string();
        assert!(e.contains("rc4") && e.contains("chacha20"), "{e}");
    }
}
