//! The verification keys as a JSON Web Key Set (RFC 7517), each an RFC 8037 octet key pair:
//! `{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": <base64url of the raw public key>, "kid":
//! <key id>, "use": "sig", "alg": "EdDSA"}]}`, what `GET /keys` serves; and such a set read
//! back (`drbgd verify --jwks`).

use anyhow::{Context, anyhow};
use ed25519_dalek::VerifyingKey;
use serde_json::{Value, json};

use super::PublicKey;
use super::keys::key_id;

/// The JWK set of `keys`, in their order (the signing key's first).
pub fn document(keys: &[PublicKey]) -> Value {
    let keys: Vec<Value> = keys
        .iter()
        .map(|k| {
            json!({
                "kty": "OKP",
                "crv": "Ed25519",
                "x": data_encoding::BASE64URL_NOPAD.encode(k.key.as_bytes()),
                "kid": k.id,
                "use": "sig",
                "alg": "EdDSA",
            })
        })
        .collect();
    json!({ "keys": keys })
}

/// The Ed25519 keys of a JWK set (keys of other types are skipped), each under its key id,
/// computed from the key: a `kid` is never taken on trust, so a set whose `kid` names another
/// key, or that has one key twice, is refused.
///
/// # Errors
/// Not a JWK set, an Ed25519 key whose `x` is not base64url of a valid public key, a `kid`
/// that is not the key's id, the same key twice.
pub fn parse(set: &Value) -> anyhow::Result<Vec<PublicKey>> {
    let keys = set.get("keys").and_then(Value::as_array).context("a JWK set has a \"keys\" list")?;
    let ed25519 = |k: &&Value| k.get("kty") == Some(&json!("OKP")) && k.get("crv") == Some(&json!("Ed25519"));
    let keys: Vec<PublicKey> = keys.iter().filter(ed25519).map(parse_key).collect::<anyhow::Result<_>>()?;
    for (i, key) in keys.iter().enumerate() {
        anyhow::ensure!(!keys[..i].contains(key), "the JWK set has the key {} twice", key.id);
    }
    Ok(keys)
}

fn parse_key(jwk: &Value) -> anyhow::Result<PublicKey> {
    let x = jwk.get("x").and_then(Value::as_str).context("an Ed25519 JWK has an \"x\"")?;
    let raw = data_encoding::BASE64URL_NOPAD
        .decode(x.trim_end_matches('=').as_bytes())
        .map_err(|e| anyhow!("an Ed25519 JWK's x is not base64url: {e}"))?;
    let raw: [u8; 32] = raw.as_slice().try_into().context("an Ed25519 JWK's x is 32 bytes")?;
    let key = VerifyingKey::from_bytes(&raw).map_err(|e| anyhow!("not an Ed25519 public key: {e}"))?;
    let id = key_id(&key);
    if let Some(kid) = jwk.get("kid") {
        anyhow::ensure!(
            kid.as_str() == Some(id.as_str()),
            "a JWK's kid {kid} is not its key's id {id} (the SHA-256 of x, 16 hex digits)"
        );
    }
    Ok(PublicKey { id, key })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_reads_back_as_written() {
        let keys: Vec<PublicKey> = [[1u8; 32], [2; 32]]
            .iter()
            .map(|s| ed25519_dalek::SigningKey::from_bytes(s).verifying_key())
            .map(PublicKey::new)
            .collect();
        let set = document(&keys);
        assert_eq!(set["keys"][0]["kty"], "OKP");
        assert_eq!(set["keys"][0]["crv"], "Ed25519");
        assert_eq!(set["keys"][1]["kid"], keys[1].id.as_str());
        assert_eq!(set["keys"][0]["x"].as_str().map(str::len), Some(43), "32 bytes, unpadded");
        assert_eq!(parse(&set).unwrap(), keys);
        let mut other = set.clone();
        other["keys"][0]["kty"] = "RSA".into();
        assert_eq!(parse(&other).unwrap(), keys[1..]);
        assert!(parse(&json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "AAAA"}]})).is_err());
        assert!(parse(&json!([])).is_err());
        // A kid naming another key, or one key twice, is refused; no kid is the key's id.
        let mut lying = set.clone();
        lying["keys"][0]["kid"] = keys[1].id.as_str().into();
        assert!(parse(&lying).is_err());
        let mut twice = set.clone();
        twice["keys"][1] = twice["keys"][0].clone();
        assert!(parse(&twice).is_err());
        let mut bare = set.clone();
        bare["keys"][0].as_object_mut().unwrap().remove("kid");
        assert_eq!(parse(&bare).unwrap(), keys);
    }
}
