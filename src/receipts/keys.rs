//! The receipt keys: Ed25519 (RFC 8032) keys read from PEM files, PKCS#8 private keys
//! (`BEGIN PRIVATE KEY`, as `openssl genpkey -algorithm ed25519` and `drbgd keygen receipt`
//! write them) or, after the first, SPKI public keys (`BEGIN PUBLIC KEY`: a retired key whose
//! receipts still verify). The first key signs; its secret is held by AWS-LC (aws-lc-rs signs
//! in about half ed25519-dalek's time), in AWS-LC's own allocation, cleansed when the ring is
//! dropped: not in generator state's locked, dump-excluded pages (docs/security.md says so).
//! It is never shown: `Debug` prints key ids. A key's id is the first 16 hex digits of the
//! SHA-256 of its raw 32-byte public key.

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow, bail, ensure};
use aws_lc_rs::signature::Ed25519KeyPair;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{
    DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, KeypairBytes,
};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, Zeroizing};

/// Bytes of the public key's SHA-256 a key id shows (16 hex digits).
const KEY_ID_BYTES: usize = 8;

/// A verification key and its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    /// [`key_id`] of the key (a JWK's `kid`, a receipt's `key_id`).
    pub id: String,
    /// The Ed25519 public key.
    pub key: VerifyingKey,
}

impl PublicKey {
    /// The key with its id.
    pub fn new(key: VerifyingKey) -> Self {
        PublicKey { id: key_id(&key), key }
    }
}

/// The keys in force: the signing key (the first of `[receipts] signing_keys`) and every key's
/// public half, the signer's first.
#[derive(Default)]
pub struct KeyRing {
    /// The signing key, as aws-lc holds it (its own allocation, cleansed when freed); `None`:
    /// no key signs. aws-lc-rs signs in about half ed25519-dalek's time (benches/README.md,
    /// "Receipts"); the key is read and checked, and receipts verified, with ed25519-dalek.
    signer: Option<Ed25519KeyPair>,
    public: Vec<PublicKey>,
    files: Vec<PathBuf>,
}

/// Shows the key ids and which signs, never a key.
impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing")
            .field("key_ids", &self.ids())
            .field("signs", &self.signing_key_id())
            .finish_non_exhaustive()
    }
}

impl KeyRing {
    /// The keys of `paths` (as `[receipts] signing_keys` names them): the first must be a
    /// private key, and signs. Returns warnings to log (a private key file others may read).
    ///
    /// # Errors
    /// A file that cannot be read or holds no Ed25519 key, a first key that is public only,
    /// the same key twice.
    pub fn load(paths: &[String]) -> anyhow::Result<(Self, Vec<String>)> {
        let mut warnings = Vec::new();
        let mut ring = KeyRing { signer: None, public: Vec::new(), files: Vec::new() };
        for (i, name) in paths.iter().enumerate() {
            let path = Path::new(name);
            let context = || format!("receipts.signing_keys: {}", path.display());
            let file = read(path, &mut warnings).with_context(context)?;
            let key = match file {
                KeyFile::Private(keypair) if i == 0 => {
                    let signing = SigningKey::try_from(&keypair.0)
                        .map_err(|e| anyhow!("{}: not an Ed25519 key: {e}", context()))?;
                    let key = signing.verifying_key();
                    ring.signer = Some(signer(&signing).with_context(context)?);
                    key
                }
                KeyFile::Private(keypair) => SigningKey::try_from(&keypair.0)
                    .map(|k| k.verifying_key())
                    .map_err(|e| anyhow!("{}: not an Ed25519 key: {e}", context()))?,
                KeyFile::Public(_) if i == 0 => {
                    bail!(
                        "{}: the first key signs, so it must be a private key (BEGIN PRIVATE KEY)",
                        context()
                    )
                }
                KeyFile::Public(key) => key,
            };
            let key = PublicKey::new(key);
            ensure!(
                !ring.public.iter().any(|k| k.id == key.id),
                "{}: the same key as an earlier one ({})",
                context(),
                key.id
            );
            ring.public.push(key);
            ring.files.push(path.to_path_buf());
        }
        Ok((ring, warnings))
    }

    /// Every key's public half, the signer's first.
    pub fn public_keys(&self) -> &[PublicKey] {
        &self.public
    }

    /// The key of id `id`.
    pub fn find(&self, id: &str) -> Option<&PublicKey> {
        self.public.iter().find(|k| k.id == id)
    }

    /// The key ids, the signer's first.
    pub fn ids(&self) -> Vec<&str> {
        self.public.iter().map(|k| k.id.as_str()).collect()
    }

    /// The id of the key that signs, if one does.
    pub fn signing_key_id(&self) -> Option<&str> {
        self.signer.as_ref().and(self.public.first()).map(|k| k.id.as_str())
    }

    /// The files the keys were read from.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The Ed25519 signature of `message` by the signing key; `None` when no key signs.
    pub fn sign(&self, message: &[u8]) -> Option<[u8; Signature::BYTE_SIZE]> {
        let signature = self.signer.as_ref()?.try_sign(message).ok()?;
        signature.as_ref().try_into().ok()
    }
}

/// `signing` as aws-lc's key pair, checked: its public key must be dalek's, and a signature of
/// each must be the other's (Ed25519 signatures are deterministic) and verify strictly.
fn signer(signing: &SigningKey) -> anyhow::Result<Ed25519KeyPair> {
    let seed = Zeroizing::new(signing.to_bytes());
    let public = signing.verifying_key();
    let pair = Ed25519KeyPair::from_seed_and_public_key(&seed[..], public.as_bytes())
        .map_err(|e| anyhow!("aws-lc refused the key: {e}"))?;
    let probe = b"drbgd receipt signing key check";
    let theirs = pair.try_sign(probe).map_err(|e| anyhow!("aws-lc cannot sign with the key: {e}"))?;
    let ours = signing.sign(probe).to_bytes();
    ensure!(theirs.as_ref() == ours.as_slice(), "aws-lc and ed25519-dalek sign differently with this key");
    public
        .verify_strict(probe, &Signature::from_bytes(&ours))
        .context("the key's own signature does not verify")?;
    Ok(pair)
}

/// A key's id: the first 16 hex digits of the SHA-256 of its raw 32-byte public key.
pub fn key_id(key: &VerifyingKey) -> String {
    let digest = Sha256::digest(key.as_bytes());
    let digest: &[u8] = &digest;
    const_hex::encode(&digest[..KEY_ID_BYTES])
}

/// What a key file holds.
enum KeyFile {
    /// A private key.
    Private(Secret),
    /// A public key alone.
    Public(VerifyingKey),
}

/// A private key's bytes, wiped on drop (the `ed25519` crate wipes them itself only with a
/// feature of its own that nothing here turns on).
struct Secret(KeypairBytes);

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.secret_key.zeroize();
    }
}

/// The key in the PEM file `path` (read as [`crate::secret_file`] reads). A file whose first
/// PEM block is a public key holds that alone; any file holding a private key that others than
/// its owner may read is warned of (as the KMS front-end's secret files are), not refused.
fn read(path: &Path, warnings: &mut Vec<String>) -> anyhow::Result<KeyFile> {
    let crate::secret_file::SecretFile { text, open_to_others } = crate::secret_file::read(path)?;
    let private = text.contains("PRIVATE KEY-----");
    let first_label = text.find("-----BEGIN ").map(|at| &text[at..]);
    if first_label.is_some_and(|block| block.starts_with("-----BEGIN PUBLIC KEY-----")) {
        ensure!(!private, "a public key file also holds a private key: keep them apart");
        let key = VerifyingKey::from_public_key_pem(&text)
            .map_err(|e| anyhow!("not an Ed25519 public key (SPKI PEM): {e}"))?;
        return Ok(KeyFile::Public(key));
    }
    if open_to_others {
        warnings.push(format!(
            "{} holds a receipt signing key and others than its owner may read it (chmod 600)",
            path.display()
        ));
    }
    let keypair = KeypairBytes::from_pkcs8_pem(&text)
        .map_err(|e| anyhow!("not an Ed25519 private key (PKCS#8 PEM, BEGIN PRIVATE KEY): {e}"))?;
    Ok(KeyFile::Private(Secret(keypair)))
}

/// The public key in the PEM file `path`: a public key's, or a private key's public half
/// (`drbgd verify --key`).
///
/// # Errors
/// A file that cannot be read or holds no Ed25519 key.
pub fn public_key_file(path: &Path) -> anyhow::Result<PublicKey> {
    let key = match read(path, &mut Vec::new())? {
        KeyFile::Public(key) => key,
        KeyFile::Private(keypair) => SigningKey::try_from(&keypair.0)
            .map(|k| k.verifying_key())
            .map_err(|e| anyhow!("not an Ed25519 key: {e}"))?,
    };
    Ok(PublicKey::new(key))
}

/// A private key of 32 secret bytes as PKCS#8 PEM (version 1, the form `openssl genpkey
/// -algorithm ed25519` writes), with its public key.
///
/// # Errors
/// Never for 32 bytes (the encoder's own errors are passed on).
pub fn private_pem(secret: &[u8; 32]) -> anyhow::Result<(Zeroizing<String>, PublicKey)> {
    let keypair = Secret(KeypairBytes { secret_key: *secret, public_key: None });
    let pem = keypair.0.to_pkcs8_pem(LineEnding::LF).map_err(|e| anyhow!("cannot encode the key: {e}"))?;
    let public =
        SigningKey::try_from(&keypair.0).map_err(|e| anyhow!("not an Ed25519 key: {e}"))?.verifying_key();
    Ok((pem, PublicKey::new(public)))
}

/// A public key as SPKI PEM (`BEGIN PUBLIC KEY`), as `openssl pkey -pubout` writes it.
///
/// # Errors
/// Never for a valid key (the encoder's own errors are passed on).
pub fn public_pem(key: &VerifyingKey) -> anyhow::Result<String> {
    key.to_public_key_pem(LineEnding::LF).map_err(|e| anyhow!("cannot encode the key: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8032 §7.1, test 1: the secret key, its public key, and the signature of the empty
    /// message.
    const SECRET: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    const PUBLIC: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    const SIGNATURE: &str = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155\
                             5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";

    fn secret() -> [u8; 32] {
        const_hex::decode_to_array(SECRET).unwrap()
    }

    fn temp(name: &str, text: &str, mode: u32) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("drbgd-receipt-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn a_pem_key_signs_as_rfc_8032_says() {
        let (pem, public) = private_pem(&secret()).unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{}", &*pem);
        assert_eq!(const_hex::encode(public.key.as_bytes()), PUBLIC);
        let path = temp("rfc8032.pem", &pem, 0o600);
        let (ring, warnings) = KeyRing::load(&[path.display().to_string()]).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(ring.signing_key_id(), Some(public.id.as_str()));
        assert_eq!(ring.sign(b"").map(const_hex::encode).as_deref(), Some(SIGNATURE));
        assert_eq!(public.id, key_id(&public.key));
        assert_eq!(public.id.len(), 16);
        // Debug shows ids, never the key.
        let shown = format!("{ring:?}");
        assert!(shown.contains(&public.id) && !shown.contains(&SECRET[..16]), "{shown}");
    }

    #[test]
    fn the_first_key_signs_and_the_rest_verify() {
        let (first, a) = private_pem(&[1; 32]).unwrap();
        let (_, b) = private_pem(&[2; 32]).unwrap();
        let first = temp("first.pem", &first, 0o644);
        let public = temp("retired.pub.pem", &public_pem(&b.key).unwrap(), 0o644);
        let (ring, warnings) =
            KeyRing::load(&[first.display().to_string(), public.display().to_string()]).unwrap();
        assert_eq!(warnings.len(), 1, "the readable private key is warned of: {warnings:?}");
        assert_eq!(ring.ids(), [a.id.as_str(), b.id.as_str()]);
        assert_eq!(ring.find(&b.id), Some(&b));
        assert_eq!(public_key_file(&public).unwrap(), b);
        // A public key cannot sign; the same key twice is a mistake.
        let e = KeyRing::load(&[public.display().to_string()]).unwrap_err();
        assert!(format!("{e:#}").contains("must be a private key"), "{e:#}");
        let e = KeyRing::load(&[first.display().to_string(), first.display().to_string()]).unwrap_err();
        assert!(format!("{e:#}").contains("the same key"), "{e:#}");
        let garbage =
            temp("garbage.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", 0o600);
        assert!(KeyRing::load(&[garbage.display().to_string()]).is_err());
    }
}
