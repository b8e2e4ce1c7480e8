//! The `blake3` generator (the keyed BLAKE3 XOF of the Rust DRBG benchmarking study): a keyed hasher over an incrementing
//! 64-bit counter whose extendable output is the keystream, behind fast key erasure.

use blake3::{Hasher, OutputReader};
use zeroize::Zeroize;

use super::algorithm_id::Algorithm;
use super::fast_key_erasure::{FastKeyErasure, KEY_LEN, KeystreamCore};

/// The `blake3` generator.
pub type Blake3Drbg = FastKeyErasure<Blake3Core>;

/// Keyed BLAKE3 XOF keystream: the output of `keyed_hash(key, counter as u64 LE)`, read on.
/// The counter increments at every rekey.
pub struct Blake3Core {
    reader: OutputReader,
    counter: u64,
}

impl Blake3Core {
    fn reader(key: &[u8; KEY_LEN], counter: u64) -> OutputReader {
        let mut hasher = Hasher::new_keyed(key);
        hasher.update(&counter.to_le_bytes());
        let reader = hasher.finalize_xof();
        hasher.zeroize();
        reader
    }
}

impl Drop for Blake3Core {
    fn drop(&mut self) {
        self.reader.zeroize();
    }
}

impl KeystreamCore for Blake3Core {
    const ALGORITHM: Algorithm = Algorithm::Blake3;
    const INSTANTIATE_CONTEXT: &'static str = "drbgd 2026-11 blake3-xof instantiate";
    const RESEED_CONTEXT: &'static str = "drbgd 2026-11 blake3-xof reseed";

    fn from_key(key: &[u8; KEY_LEN]) -> Self {
        Blake3Core { reader: Self::reader(key, 0), counter: 0 }
    }

    fn rekey(&mut self, key: &[u8; KEY_LEN]) {
        self.reader.zeroize();
        self.counter = self.counter.wrapping_add(1);
        self.reader = Self::reader(key, self.counter);
    }

    #[inline]
    fn keystream(&mut self, out: &mut [u8]) {
        self.reader.fill(out);
    }
}
