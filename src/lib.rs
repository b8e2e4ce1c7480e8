//! drbgd: a networked randomness service.
//!
//! # Layout
//! - [`drbg`]: the generators, their seeding, reseeding, fork safety and the shard pool. No
//!   I/O except the OS entropy source.
//! - [`cli`]: the command-line front (`generate`, `selftest`).

pub mod cli;
pub mod drbg;
