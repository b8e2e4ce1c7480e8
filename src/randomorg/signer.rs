//! The RANDOM.ORG door's signing key: RSA, signatures PKCS #1 v1.5 with SHA-512 over a
//! `random` object's bytes, as RANDOM.ORG signs (a 4,096-bit key: its signatures are 512
//! bytes). AWS-LC through aws-lc-rs does the RSA (not the `rsa` crate: RUSTSEC-2023-0071, a
//! timing side channel); the key is read from a PKCS#8 PEM file (`drbgd keygen randomorg`
//! writes one) and its public half is published as an SPKI PEM (`GET
//! /json-rpc/4/public-key`). The file is read as [`crate::secret_file`] reads; AWS-LC frees
//! (and wipes) the private key with the signer.

use std::path::Path;

use anyhow::Context;
use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::{self, KeyPair as _, UnparsedPublicKey};
use ed25519_dalek::pkcs8::spki::der::pem::{self, LineEnding};
use zeroize::Zeroizing;

/// The smallest key read (RANDOM.ORG's is 4,096 bits; AWS-LC signs with 2,048 to 8,192).
const MIN_BITS: usize = 2048;

/// An RSA signing key.
pub struct Signer {
    key: KeyPair,
    /// Its public key, SPKI PEM.
    public_pem: String,
}

/// Shows the public key only.
impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("bits", &(self.key.public_modulus_len() * 8)).finish_non_exhaustive()
    }
}

impl Signer {
    /// The key in PKCS#8 PEM file `path`.
    ///
    /// # Errors
    /// The file cannot be read (or is not UTF-8, as no PEM file is), is no PEM `PRIVATE KEY`, no
    /// RSA key, or one under 2,048 bits.
    pub fn load(path: &Path) -> anyhow::Result<Signer> {
        let file =
            crate::secret_file::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        if file.open_to_others {
            tracing::warn!(
                "{} holds the RANDOM.ORG door's signing key and others than its owner may read it (chmod 600)",
                path.display()
            );
        }
        let (label, der) = pem::decode_vec(file.text.as_bytes())
            .map_err(|e| anyhow::anyhow!("{}: not PEM: {e}", path.display()))?;
        let der = Zeroizing::new(der);
        anyhow::ensure!(
            label == "PRIVATE KEY",
            "{}: a PKCS#8 \"PRIVATE KEY\" is expected, not {label:?}",
            path.display()
        );
        let key = KeyPair::from_pkcs8(&der)
            .map_err(|e| anyhow::anyhow!("{}: not an RSA key: {e}", path.display()))?;
        Signer::of(key)
    }

    fn of(key: KeyPair) -> anyhow::Result<Signer> {
        anyhow::ensure!(
            key.public_modulus_len() * 8 >= MIN_BITS,
            "an RSA key of {MIN_BITS} bits at least is needed"
        );
        let spki = AsDer::<PublicKeyX509Der>::as_der(key.public_key())
            .map_err(|_| anyhow::anyhow!("cannot encode the public key"))?;
        let public_pem = pem::encode_string("PUBLIC KEY", LineEnding::LF, spki.as_ref())
            .map_err(|e| anyhow::anyhow!("cannot encode the public key: {e}"))?;
        Ok(Signer { key, public_pem })
    }

    /// A new 4,096-bit key, as PKCS#8 PEM, and its signer. AWS-LC draws the primes from its
    /// own SP 800-90A CTR_DRBG (AES-256), seeded from the operating system.
    ///
    /// # Errors
    /// AWS-LC failed.
    pub fn generate() -> anyhow::Result<(Zeroizing<String>, Signer)> {
        let key =
            KeyPair::generate(KeySize::Rsa4096).map_err(|_| anyhow::anyhow!("RSA key generation failed"))?;
        let der = AsDer::<Pkcs8V1Der>::as_der(&key).map_err(|_| anyhow::anyhow!("cannot encode the key"))?;
        let pem = pem::encode_string("PRIVATE KEY", LineEnding::LF, der.as_ref())
            .map_err(|e| anyhow::anyhow!("cannot encode the key: {e}"))?;
        Ok((Zeroizing::new(pem), Signer::of(key)?))
    }

    /// The signature of `message`.
    ///
    /// # Errors
    /// AWS-LC failed.
    pub fn sign(&self, message: &[u8]) -> anyhow::Result<Vec<u8>> {
        let mut out = vec![0; self.key.public_modulus_len()];
        self.key
            .sign(&signature::RSA_PKCS1_SHA512, &aws_lc_rs::rand::SystemRandom::new(), message, &mut out)
            .map_err(|_| anyhow::anyhow!("RSA signing failed"))?;
        Ok(out)
    }

    /// Whether `signature` is this key's over `message`.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let public =
            UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA512, self.key.public_key().as_ref());
        public.verify(message, signature).is_ok()
    }

    /// The public key, SPKI PEM (`openssl dgst -sha512 -verify` reads it).
    pub fn public_pem(&self) -> &str {
        &self.public_pem
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_key_signs_what_it_verifies_and_reads_back() {
        let (pem, signer) = Signer::generate().unwrap();
        let signature = signer.sign(b"{\"n\":1}").unwrap();
        assert_eq!(signature.len(), 512, "RSA-4096, as RANDOM.ORG's");
        assert!(signer.verify(b"{\"n\":1}", &signature));
        assert!(!signer.verify(b"{\"n\":2}", &signature));
        let dir = std::env::temp_dir().join(format!("drbgd-rsa-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key.pem");
        std::fs::write(&path, pem.as_bytes()).unwrap();
        let read = Signer::load(&path).unwrap();
        assert_eq!(read.public_pem(), signer.public_pem());
        assert!(read.verify(b"{\"n\":1}", &signature), "PKCS #1 v1.5 is deterministic: one key");
        assert_eq!(read.sign(b"{\"n\":1}").unwrap(), signature);
        assert!(format!("{read:?}").contains("4096") && !format!("{read:?}").contains("PRIVATE"));
        std::fs::write(&path, signer.public_pem()).unwrap();
        assert!(Signer::load(&path).unwrap_err().to_string().contains("PKCS#8"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
