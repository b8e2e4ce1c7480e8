//! The DRBG domain: algorithms, the generator trait, bit strings, seeding and the shard pool.
//!
//! Nothing in here knows about HTTP, gRPC or tokio. The only I/O is the OS entropy source
//! behind [`entropy::EntropySource`].
//!
//! Layout:
//! - [`Algorithm`] and its table ([`AlgorithmInfo`]): every algorithm's name, aliases,
//!   standard, strength and mechanism type, in one place (`drbg/algorithm.rs`); the enum alone
//!   (`drbg/algorithm_id.rs`) is what each mechanism names itself by.
//! - [`Drbg`] and [`ApprovedDrbg`]: the mechanism traits, with [`ReseedRequired`] and
//!   [`DrbgError`] (`drbg/generator.rs`).
//! - [`ctr_drbg`]: NIST SP 800-90A CTR_DRBG (AES, with and without the derivation function).
//! - [`hash_drbg`] and [`hmac_drbg`]: NIST SP 800-90A Hash_DRBG and HMAC_DRBG, served over
//!   SHA-256 and SHA-512.
//! - [`chacha20`] and [`blake3_xof`]: keystream generators behind the shared
//!   fast-key-erasure buffer of [`fast_key_erasure`].
//! - [`reseed`]: thresholds (bytes with arc4random-style jitter, age), prediction resistance,
//!   fork detection and the continuous health test around any [`Drbg`].
//! - [`fork`]: the fork generation counter (`unsafe`, with `secret_mem` and the SIMD
//!   keystreams `randen::aesni`, `ctr_drbg::x86` and `chacha20::avx2`).
//! - [`secret_mem`]: dump-excluded, locked pages for the generator state.
//! - [`entropy`]: where seed material comes from.
//! - [`pool`]: per-core shards, each with one managed instance of every algorithm.
//! - [`randen`]: Randen (Abseil's engine, verified against its goldens) as a fourth generator;
//!   its AES-NI permutation is the other `unsafe`.
//! - [`bits`]: packing and counting of bit strings.
//! - [`uniform`]: unbiased integers on a range from a fallible word source.
//! - [`selftest`]: the start-up self-tests: known answers, and for the SP 800-90A mechanisms
//!   (through [`ApprovedDrbg`]) reseed, prediction resistance, uninstantiate and the error paths.
//! - [`stats`]: lifecycle counters (reseeds by [`ReseedReason`], failures).

mod algorithm;
mod algorithm_id;
pub mod bits;
pub mod blake3_xof;
pub mod chacha20;
pub mod ctr_drbg;
pub mod entropy;
pub mod fast_key_erasure;
pub mod fork;
mod generator;
pub mod hash_drbg;
pub mod hmac_drbg;
pub mod pool;
pub mod randen;
mod randen_keys;
pub mod reseed;
pub mod secret_mem;
pub mod selftest;
pub mod simd_path;
pub mod stats;
pub mod uniform;

pub use algorithm::{AlgorithmInfo, UnknownAlgorithm, WithMechanism, names};
pub use algorithm_id::Algorithm;
pub use generator::{ApprovedDrbg, Drbg, DrbgError, ReseedRequired};
pub use pool::{Pool, PoolConfig, Words};
pub use reseed::ReseedPolicy;
pub use stats::ReseedReason;
