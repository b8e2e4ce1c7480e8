//! /token, /nonce, /uuid, /int: formats, bounds, UUID bits, and a chi-square test of /int.

use crate::helpers::spawn_app;

#[tokio::test]
async fn tokens_and_nonces() {
    let app = spawn_app().await;
    let t = app.get("/token").await.text().await.unwrap();
    assert_eq!(data_encoding::BASE64URL_NOPAD.decode(t.as_bytes()).unwrap().len(), 32);
    let t = app.get("/token?bytes=20&format=base32").await.text().await.unwrap();
    assert_eq!(data_encoding::BASE32_NOPAD.decode(t.as_bytes()).unwrap().len(), 20);
    let t = app.get("/token?bytes=16&format=hex&alg=aes256ctr").await;
    assert_eq!(t.headers()["x-drbg-alg"], "aes256ctr");
    assert_eq!(t.headers()["x-drbg-bits"], "128");
    assert_eq!(data_encoding::HEXLOWER.decode(t.text().await.unwrap().as_bytes()).unwrap().len(), 16);
    for (query, len) in [("", 12), ("?bytes=24", 24), ("?bytes=16", 16), ("?bytes=64", 64)] {
        let n = app.get(&format!("/nonce{query}")).await.text().await.unwrap();
        assert_eq!(data_encoding::HEXLOWER.decode(n.as_bytes()).unwrap().len(), len);
    }
    let v: serde_json::Value = app
        .client
        .get(app.url("/nonce"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["bytes"], 12);
    assert_eq!(v["format"], "hex");
    let a = app.get("/token").await.text().await.unwrap();
    assert_ne!(a, app.get("/token").await.text().await.unwrap());
}

#[tokio::test]
async fn uuids_have_version_and_variant_bits() {
    let app = spawn_app().await;
    for version in [4u8, 7] {
        let text = app.get(&format!("/uuid?count=1000&version={version}")).await.text().await.unwrap();
        let ids: Vec<&str> = text.lines().collect();
        assert_eq!(ids.len(), 1000);
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), 1000);
        for id in ids {
            let bytes = data_encoding::HEXLOWER.decode(id.replace('-', "").as_bytes()).unwrap();
            assert_eq!(id.len(), 36);
            assert_eq!(bytes[6] >> 4, version, "{id}");
            assert_eq!(bytes[8] >> 6, 0b10, "RFC 9562 variant: {id}");
        }
    }
    let v: serde_json::Value = app
        .client
        .get(app.url("/uuid?count=3"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["uuids"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn ints_stay_in_bounds_including_extremes() {
    let app = spawn_app().await;
    for (min, max) in [(1i64, 6i64), (-5, 5), (7, 7), (i64::MIN, i64::MAX), (i64::MAX - 1, i64::MAX)] {
        let text = app.get(&format!("/int?min={min}&max={max}&count=1000")).await.text().await.unwrap();
        let values: Vec<i64> = text.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(values.len(), 1000);
        assert!(values.iter().all(|v| (min..=max).contains(v)), "[{min}, {max}]");
    }
}

/// Chi-square with 99 degrees of freedom; fail above the p = 1e-6 quantile (181.1, from the
/// Wilson-Hilferty approximation), so a correct sampler fails about once in a million runs.
const CHI2_99_P1E6: f64 = 181.1;

fn chi_square(counts: &[u64; 100], draws: u64) -> f64 {
    let expected = draws as f64 / 100.0;
    counts.iter().map(|&c| (c as f64 - expected).powi(2) / expected).sum()
}

#[tokio::test]
async fn int_passes_chi_square_and_a_modulo_biased_sampler_fails_it() {
    let app = spawn_app().await;
    let mut counts = [0u64; 100];
    let mut draws = 0;
    for alg in ["chacha20", "aes256ctr", "blake3"].iter().cycle().take(120) {
        let text = app.get(&format!("/int?min=0&max=99&count=1000&alg={alg}")).await.text().await.unwrap();
        for v in text.lines() {
            counts[v.parse::<usize>().unwrap()] += 1;
            draws += 1;
        }
    }
    let stat = chi_square(&counts, draws);
    assert!(stat < CHI2_99_P1E6, "chi-square {stat:.1} over {draws} draws");
    // Negative control: the same number of bytes reduced modulo 100 (the bias /int avoids).
    let raw = app.get(&format!("/bytes?n={draws}&format=binary")).await.bytes().await.unwrap();
    let mut biased = [0u64; 100];
    for b in raw.iter() {
        biased[usize::from(*b) % 100] += 1;
    }
    let stat = chi_square(&biased, draws);
    assert!(stat > CHI2_99_P1E6, "the modulo-biased control should fail: {stat:.1}");
}
