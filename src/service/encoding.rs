//! Output formats: [`Encoding`] for random bits (`/bits`, `/bytes`, streamed or whole) and
//! [`SecretFormat`] for tokens and nonces. Variants are types, not flags: a token cannot be
//! asked for in ASCII bits, and bits are never "encoded" into a string they do not fit.

use crate::drbg::bits;

/// How random bits are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Raw packed bytes, `application/octet-stream`.
    Binary,
    /// Lowercase hex.
    Hex,
    /// RFC 4648 base64 with padding.
    Base64,
    /// RFC 4648 URL-safe base64 without padding.
    Base64Url,
    /// ASCII `0`/`1`, one character per bit (the bit strings of the Rust DRBG benchmarking study).
    Bits,
    /// A JSON object with the data in hex and the count of ones.
    Json,
}

impl Encoding {
    /// Every bits encoding; the first is the default.
    pub const ALL: [Encoding; 6] = [
        Encoding::Hex,
        Encoding::Binary,
        Encoding::Base64,
        Encoding::Base64Url,
        Encoding::Bits,
        Encoding::Json,
    ];

    /// Parses a `format` parameter (case-insensitive; `raw`/`octet-stream` and `ascii` are
    /// aliases of `binary` and `bits`).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "binary" | "raw" | "octet-stream" => Encoding::Binary,
            "hex" => Encoding::Hex,
            "base64" => Encoding::Base64,
            "base64url" => Encoding::Base64Url,
            "bits" | "ascii" => Encoding::Bits,
            "json" => Encoding::Json,
            _ => return None,
        })
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Binary => "binary",
            Encoding::Hex => "hex",
            Encoding::Base64 => "base64",
            Encoding::Base64Url => "base64url",
            Encoding::Bits => "bits",
            Encoding::Json => "json",
        }
    }

    /// The response content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Binary => "application/octet-stream",
            Encoding::Json => "application/json",
            _ => "text/plain; charset=utf-8",
        }
    }

    /// The exact length of `n_bits` bits in this encoding, where it is known before the
    /// bits are (JSON ends with the count of ones, so its length is not).
    pub fn encoded_len(self, n_bits: u64) -> Option<u64> {
        let bytes = bits::byte_len(n_bits);
        Some(match self {
            Encoding::Binary => bytes,
            Encoding::Hex => 2 * bytes,
            Encoding::Bits => n_bits,
            Encoding::Base64 => data_encoding::BASE64.encode_len(usize::try_from(bytes).ok()?) as u64,
            Encoding::Base64Url => {
                data_encoding::BASE64URL_NOPAD.encode_len(usize::try_from(bytes).ok()?) as u64
            }
            Encoding::Json => return None,
        })
    }

    /// Output bytes per raw byte (an upper bound, for buffer sizes).
    pub fn expansion(self) -> usize {
        match self {
            Encoding::Binary => 1,
            Encoding::Hex | Encoding::Json | Encoding::Base64 | Encoding::Base64Url => 2,
            Encoding::Bits => 8,
        }
    }

    /// Appends `raw` (holding `n_bits` bits) to `out`. Pieces other than the last hold a
    /// multiple of 3 bytes, so base64 pieces concatenate into one valid encoding. For `Json`
    /// this writes the hex of the `data` member only (see [`json_prefix`], [`json_suffix`]).
    pub fn encode_into(self, raw: &[u8], n_bits: u64, out: &mut Vec<u8>) {
        let text = match self {
            Encoding::Binary => {
                out.extend_from_slice(raw);
                return;
            }
            Encoding::Bits => {
                let start = out.len();
                out.resize(start + n_bits as usize, 0);
                bits::write_ascii_bits(raw, n_bits as usize, &mut out[start..]);
                return;
            }
            Encoding::Hex | Encoding::Json => {
                let start = out.len();
                out.resize(start + 2 * raw.len(), 0);
                // (the output is exactly twice the input: the only error cannot happen)
                let encoded = const_hex::encode_to_slice(raw, &mut out[start..]);
                debug_assert!(encoded.is_ok());
                return;
            }
            Encoding::Base64 => &data_encoding::BASE64,
            Encoding::Base64Url => &data_encoding::BASE64URL_NOPAD,
        };
        let start = out.len();
        out.resize(start + text.encode_len(raw.len()), 0);
        text.encode_mut(raw, &mut out[start..]);
    }
}

/// The opening of a JSON bits body, up to the hex data.
pub fn json_prefix(alg: &str, n_bits: u64) -> String {
    format!("{{\"alg\":\"{alg}\",\"n\":{n_bits},\"encoding\":\"hex\",\"data\":\"")
}

/// The most bytes [`json_suffix`] writes (`","ones":` and 20 digits, `}`).
pub const JSON_SUFFIX_MAX: usize = 30;

/// The end of a JSON bits body, after the hex data.
pub fn json_suffix(ones: u64) -> String {
    format!("\",\"ones\":{ones}}}")
}

/// How a token or nonce is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretFormat {
    /// RFC 4648 URL-safe base64 without padding (the token default).
    Base64Url,
    /// Lowercase hex (the nonce default).
    Hex,
    /// RFC 4648 base32 without padding.
    Base32,
    /// RFC 4648 base64 with padding.
    Base64,
}

impl SecretFormat {
    /// Every secret format.
    pub const ALL: [SecretFormat; 4] =
        [SecretFormat::Base64Url, SecretFormat::Hex, SecretFormat::Base32, SecretFormat::Base64];

    /// Parses a `format` parameter (case-insensitive).
    pub fn parse(name: &str) -> Option<Self> {
        SecretFormat::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            SecretFormat::Base64Url => "base64url",
            SecretFormat::Hex => "hex",
            SecretFormat::Base32 => "base32",
            SecretFormat::Base64 => "base64",
        }
    }

    /// The encoded value.
    pub fn encode(self, raw: &[u8]) -> String {
        let encoding = match self {
            SecretFormat::Base64Url => &data_encoding::BASE64URL_NOPAD,
            SecretFormat::Hex => return const_hex::encode(raw),
            SecretFormat::Base32 => &data_encoding::BASE32_NOPAD,
            SecretFormat::Base64 => &data_encoding::BASE64,
        };
        // Appended to an empty string rather than `encode`d: that one allocates zeroed memory
        // (`calloc`, which glibc serves without its thread cache).
        let mut out = String::new();
        encoding.encode_append(raw, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Hex from `const_hex` (SIMD) is `data_encoding`'s lowercase hex, byte for byte, for
        /// bits bodies and secrets alike.
        #[test]
        fn hex_is_data_encodings(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let expected = data_encoding::HEXLOWER.encode(&raw);
            let mut out = b"prefix".to_vec();
            Encoding::Hex.encode_into(&raw, raw.len() as u64 * 8, &mut out);
            proptest::prop_assert_eq!(&out[6..], expected.as_bytes());
            proptest::prop_assert_eq!(SecretFormat::Hex.encode(&raw), expected);
        }
    }

    #[test]
    fn json_suffix_fits_its_bound() {
        assert_eq!(json_suffix(u64::MAX).len(), JSON_SUFFIX_MAX);
    }

    #[test]
    fn encoded_lengths_are_exact_for_odd_sizes() {
        for n_bits in [1u64, 7, 8, 9, 13, 23, 24, 25, 1000, 4097] {
            let raw = vec![0xa5u8; bits::byte_len(n_bits) as usize];
            for e in [Encoding::Hex, Encoding::Base64, Encoding::Base64Url, Encoding::Bits, Encoding::Binary]
            {
                let mut out = Vec::new();
                e.encode_into(&raw, n_bits, &mut out);
                assert_eq!(e.encoded_len(n_bits), Some(out.len() as u64), "{e:?} {n_bits}");
            }
        }
        assert_eq!(Encoding::Json.encoded_len(8), None);
    }

    #[test]
    fn names_round_trip() {
        for e in Encoding::ALL {
            assert_eq!(Encoding::parse(&e.name().to_uppercase()), Some(e));
        }
        for f in SecretFormat::ALL {
            assert_eq!(SecretFormat::parse(f.name()), Some(f));
        }
        assert_eq!(SecretFormat::parse("bits"), None);
    }

    #[test]
    fn pieces_concatenate() {
        let raw: Vec<u8> = (0..=255u8).collect();
        for e in [Encoding::Hex, Encoding::Base64, Encoding::Base64Url, Encoding::Bits, Encoding::Binary] {
            let mut whole = Vec::new();
            e.encode_into(&raw, raw.len() as u64 * 8, &mut whole);
            let mut pieces = Vec::new();
            for piece in raw.chunks(99) {
                e.encode_into(piece, piece.len() as u64 * 8, &mut pieces);
            }
            assert_eq!(whole, pieces, "{e:?}");
            assert!(whole.len() <= raw.len() * e.expansion());
            assert_eq!(e.encoded_len(raw.len() as u64 * 8), Some(whole.len() as u64), "{e:?}");
        }
    }
}
