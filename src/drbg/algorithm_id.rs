//! The algorithms as names: the enum each mechanism names itself by ([`super::Drbg::ALGORITHM`])
//! and its fixed order. What each one is (name, aliases, standard, strength, mechanism type,
//! self-tests) is its row of the table in `algorithm.rs`, which names the mechanisms; this file
//! names nothing, so that they can name it.

/// The generator algorithms drbgd serves. The canonical names are used by the API, the
/// metrics labels and the config file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// ChaCha20 (20 rounds) with fast key erasure.
    ChaCha20,
    /// NIST SP 800-90A CTR_DRBG with AES-256 and the derivation function.
    Aes256Ctr,
    /// Keyed BLAKE3 in extendable-output mode with fast key erasure.
    Blake3,
    /// Randen: an AES-round Feistel sponge; fast, backtracking-resistant, not a NIST design.
    Randen,
    /// NIST SP 800-90A CTR_DRBG with AES-128 and the derivation function.
    Aes128Ctr,
    /// NIST SP 800-90A CTR_DRBG with AES-192 and the derivation function.
    Aes192Ctr,
    /// NIST SP 800-90A Hash_DRBG with SHA-256.
    HashSha256,
    /// NIST SP 800-90A Hash_DRBG with SHA-512.
    HashSha512,
    /// NIST SP 800-90A HMAC_DRBG with SHA-256.
    HmacSha256,
    /// NIST SP 800-90A HMAC_DRBG with SHA-512.
    HmacSha512,
}

impl Algorithm {
    /// Every algorithm, in a fixed order (the order of the pool's instances and of metric
    /// arrays).
    pub const ALL: [Algorithm; 10] = [
        Algorithm::ChaCha20,
        Algorithm::Aes256Ctr,
        Algorithm::Blake3,
        Algorithm::Randen,
        Algorithm::Aes128Ctr,
        Algorithm::Aes192Ctr,
        Algorithm::HashSha256,
        Algorithm::HashSha512,
        Algorithm::HmacSha256,
        Algorithm::HmacSha512,
    ];

    /// The number of algorithms.
    pub const COUNT: usize = Algorithm::ALL.len();

    /// Position in [`Algorithm::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}
