//! Draws bound to a round of a followed network (`POST /tickets` with `round` and `draw`): a
//! drbgd following a network (a drbgd with its own key, period 1 s, as in `beacon_follow.rs`)
//! through a gate, keeping tickets in SQLite and in PostgreSQL. The values are recomputed here
//! from the documented derivation with the `hmac` crate alone (HMAC_DRBG and Lemire's sampler
//! written out), not with drbgd's code; `scripts/round-draw-check.py` does the same in Python
//! against a real drand network in CI.

use std::sync::Arc;
use std::time::Duration;

use drbgd::config::Settings;
use drbgd::config::beacon::BeaconSource;
use drbgd::drbg::entropy::OsEntropy;
use hmac::{KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Digest;

use crate::beacon_follow::{Gate, PASS, chain_hash, latest, network, unix_now};
use crate::helpers::{TestApp, assert_problem, eventually, spawn_with};
use crate::tickets::{Store, create, on_both_stores, post, settings_on, verifies};

/// The example key's public key (the network's).
const EXAMPLE_PUBLIC_KEY: &str = "81ef98fb75fff9705e51d57870319ce0eb94b07601ddc5747fe13807c1429008090c5436cb2d68b6e6bf2e9d8ca428da109154aedc9bf7764f5bf9a41dbc24815b594b647246540964692ab3294c83327193c4b3bbf6ecdb7cac469c1a6f9b10";

/// A network, a gate, and a drbgd with tickets in `store` following it (none without PostgreSQL).
async fn following(store: Store, tag: &str) -> Option<(TestApp, Gate, TestApp, String)> {
    let net = network(unix_now() - 2).await;
    let gate = Gate::new(format!("{}/beacon", net.api), PASS).await;
    let mut s: Settings = settings_on(store, tag).await?;
    s.beacon.enabled = true;
    s.beacon.source = BeaconSource::Drand;
    s.beacon.upstreams = vec![gate.base.clone()];
    s.beacon.allow_http = true;
    s.beacon.chain_hash = chain_hash(&net).await;
    s.beacon.public_key = EXAMPLE_PUBLIC_KEY.to_string();
    s.beacon.upstream_timeout_ms = 500;
    s.server.peer_requests_per_second = 1000.0;
    s.server.peer_burst = 1000;
    let path = s.results.path.clone();
    let app = spawn_with(s, Arc::new(OsEntropy)).await;
    assert!(eventually(Duration::from_secs(10), || async { latest(&app).await.is_some() }).await);
    Some((net, gate, app, path))
}

/// HMAC-SHA-256 of the parts, joined.
fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
    parts.iter().for_each(|p| mac.update(p));
    mac.finalize().into_bytes().into()
}

/// The derivation's stream, as docs/verifiable.md writes it: HMAC_DRBG (SHA-256, SP 800-90A
/// 10.1.2) seeded with the length-prefixed fields, 32 bytes a Generate.
struct Reference {
    k: [u8; 32],
    v: [u8; 32],
    out: Vec<u8>,
}

impl Reference {
    fn new(fields: &[&[u8]]) -> Reference {
        let mut seed = Vec::new();
        for f in fields {
            seed.extend_from_slice(&(f.len() as u64).to_be_bytes());
            seed.extend_from_slice(f);
        }
        let mut r = Reference { k: [0; 32], v: [1; 32], out: Vec::new() };
        r.update(&seed);
        r
    }

    fn update(&mut self, data: &[u8]) {
        self.k = hmac(&self.k, &[&self.v, &[0], data]);
        self.v = hmac(&self.k, &[&self.v]);
        if !data.is_empty() {
            self.k = hmac(&self.k, &[&self.v, &[1], data]);
            self.v = hmac(&self.k, &[&self.v]);
        }
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        while self.out.len() < n {
            self.v = hmac(&self.k, &[&self.v]);
            let block = self.v;
            self.out.extend_from_slice(&block);
            self.update(&[]);
        }
        self.out.drain(..n).collect()
    }

    fn word(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes(8).try_into().unwrap())
    }

    /// Lemire's widening multiply with rejection, on `[min, max]`.
    fn int(&mut self, min: i64, max: i64) -> i64 {
        let range = (max.wrapping_sub(min) as u64).wrapping_add(1);
        if range == 0 {
            return self.word() as i64;
        }
        let thresh = range.wrapping_neg() % range;
        loop {
            let product = u128::from(self.word()) * u128::from(range);
            if product as u64 >= thresh {
                return min.wrapping_add((product >> 64) as u64 as i64);
            }
        }
    }
}

/// The values of `answer` (a receipt of `endpoint`) recomputed from its round and parameters.
fn recomputed(answer: &Value, endpoint: &str) -> Value {
    let r = &answer["random"];
    let randomness = const_hex::decode(r["round_randomness"].as_str().unwrap()).unwrap();
    let signature = const_hex::decode(r["round_signature"].as_str().unwrap()).unwrap();
    assert_eq!(randomness, sha2::Sha256::digest(&signature).to_vec(), "randomness is sha256(signature)");
    let ticket = r["ticket"].as_str().unwrap();
    let text = |v: &Value| v.as_i64().map_or_else(|| v.as_str().unwrap().to_owned(), |n| n.to_string());
    let names: &[&str] = if endpoint == "/bits" { &["n"] } else { &["count", "max", "min"] };
    let values: Vec<String> = names.iter().map(|n| text(&r[*n])).collect();
    let mut fields: Vec<&[u8]> = vec![b"drbgd-round-v1", &randomness, ticket.as_bytes(), endpoint.as_bytes()];
    for (name, value) in names.iter().zip(&values) {
        fields.push(name.as_bytes());
        fields.push(value.as_bytes());
    }
    let mut stream = Reference::new(&fields);
    if endpoint == "/bits" {
        let n: usize = values[0].parse().unwrap();
        return json!(const_hex::encode(stream.bytes(n / 8)));
    }
    let (count, max, min): (u64, i64, i64) =
        (values[0].parse().unwrap(), values[1].parse().unwrap(), values[2].parse().unwrap());
    let drawn: Vec<String> = if endpoint == "/int" {
        (0..count).map(|_| stream.int(min, max).to_string()).collect()
    } else {
        // Partial Fisher–Yates over positions named by their values.
        let mut moved = std::collections::HashMap::new();
        (0..count as i64)
            .map(|i| {
                let here = min + i;
                let pick = stream.int(here, max);
                let at_here = moved.remove(&here).unwrap_or(here);
                let at_pick =
                    if pick == here { at_here } else { moved.insert(pick, at_here).unwrap_or(pick) };
                at_pick.to_string()
            })
            .collect()
    };
    json!(drawn)
}

on_both_stores!(bound_draws, bound_draws_on_sqlite, bound_draws_on_postgres);

/// Tickets bound to a round three ahead: signed commitments; 425 until the round is verified,
/// then the derivation's values, recomputed here; refusals each with its code.
async fn bound_draws(store: Store) {
    let Some((net, _gate, app, path)) = following(store, "bound").await else { return };
    let round = latest(&app).await.unwrap() + 3;
    let draws = [
        ("/int", json!({"endpoint": "/int", "min": 1, "max": 6, "count": 5})),
        ("/sequence", json!({"endpoint": "/sequence", "min": 1, "max": 10})),
        ("/bits", json!({"endpoint": "/bits", "n": 64})),
    ];
    let mut ids = Vec::new();
    let mut commitments = std::collections::HashMap::new();
    for (endpoint, draw) in &draws {
        let ticket = create(
            &app,
            json!({"round": round, "label": format!("test {endpoint}"), "show_result": true, "draw": draw}),
        )
        .await
        .remove(0);
        assert_eq!(ticket["round"], round, "{ticket}");
        let commitment = &ticket["commitment"];
        assert!(verifies(&app, commitment).await, "{commitment}");
        let c = &commitment["random"];
        assert_eq!(
            (c["endpoint"].as_str(), c["draw_endpoint"].as_str()),
            (Some("/tickets"), Some(*endpoint))
        );
        assert_eq!(
            (&c["round"], &c["ticket"], &c["alg"]),
            (&json!(round), &ticket["ticket_id"], &json!("drbgd-round-v1"))
        );
        assert_eq!(c["chain_hash"].as_str().unwrap(), chain_hash(&net).await);
        assert_eq!(c["label"], json!(format!("test {endpoint}")));
        commitments.insert(ticket["ticket_id"].as_str().unwrap().to_owned(), c.clone());
        ids.push(ticket["ticket_id"].as_str().unwrap().to_owned());
    }
    let mut by_grpc = Vec::new();
    for (endpoint, draw) in &draws {
        let body = json!({"round": round, "label": format!("test grpc {endpoint}"), "draw": draw});
        by_grpc.push(create(&app, body).await.remove(0)["ticket_id"].as_str().unwrap().to_owned());
    }
    let early = post(&app, "/int", &json!({"ticket": ids[0]})).await;
    assert_eq!(early.status(), 425);
    assert!(early.headers().contains_key("retry-after"));
    let other = post(&app, "/int", &json!({"ticket": ids[0], "min": 1, "max": 7, "count": 5})).await;
    assert_problem(other, 409, "ticket_bound_to_other_params").await;
    assert_problem(
        post(&app, "/bytes", &json!({"ticket": ids[0], "n": 8})).await,
        409,
        "ticket_bound_elsewhere",
    )
    .await;
    assert_problem(post(&app, "/token", &json!({"ticket": ids[0]})).await, 400, "round_draw_not_allowed")
        .await;
    // `/token?ticket=` (a GET): refused as the endpoint of secrets refuses any ticket.
    let query = app.client.get(app.url(&format!("/token?ticket={}", ids[0]))).bearer_auth("alice-key");
    assert_problem(query.send().await.unwrap(), 400, "ticket_not_allowed").await;
    assert!(
        eventually(Duration::from_secs(10), || async { latest(&app).await.is_some_and(|l| l >= round) })
            .await
    );
    let theirs: Value = net.get(&format!("/beacon/public/{round}")).await.json().await.unwrap();
    for ((endpoint, _), id) in draws.iter().zip(&ids) {
        let first = post(&app, endpoint, &json!({"ticket": id})).await;
        assert_eq!(first.status(), 200, "{endpoint}");
        let bytes = first.bytes().await.unwrap();
        let answer: Value = serde_json::from_slice(&bytes).unwrap();
        let r = &answer["random"];
        assert_eq!(
            (&r["round"], &r["alg"], &r["ticket"]),
            (&json!(round), &json!("drbgd-round-v1"), &json!(id))
        );
        assert_eq!(r["round_signature"], theirs["signature"], "the network's own round");
        assert_eq!(r["label"], json!(format!("test {endpoint}")));
        assert_eq!(r["committed_at"], commitments[&id[..]]["issued_at"]);
        let names: &[&str] = if *endpoint == "/bits" { &["n"] } else { &["min", "max", "count"] };
        for name in names {
            assert_eq!(r[*name], commitments[&id[..]][*name], "{endpoint} {name}: as committed");
        }
        assert_eq!(r["data"], recomputed(&answer, endpoint), "{endpoint}: {answer}");
        assert!(verifies(&app, &answer).await);
        // A changed parameter: the signature fails, and the derivation gives other values.
        let mut changed = answer.clone();
        let key = if *endpoint == "/bits" { "n" } else { "max" };
        changed["random"][key] = json!(r[key].as_i64().unwrap() + 8);
        assert!(!verifies(&app, &changed).await);
        assert_ne!(recomputed(&changed, endpoint), r["data"]);
        cli_verdicts(&app, &net, &answer, &changed).await;
        // The same request again: the kept answer, byte for byte; another: used.
        let again = post(&app, endpoint, &json!({"ticket": id})).await;
        assert_eq!(again.bytes().await.unwrap(), bytes);
        let with_params = if *endpoint == "/bits" {
            json!({"ticket": id, "n": 64})
        } else {
            json!({"ticket": id, "min": 1})
        };
        assert_problem(post(&app, endpoint, &with_params).await, 409, "ticket_used").await;
    }
    over_grpc(&app, &by_grpc).await;
    refusals(&app, round).await;
    if store == Store::Sqlite {
        half_kept(&app, &ids[0], &path).await;
    }
}

/// A bound ticket whose draw column was lost (a store not whole) is refused, never drawn as a
/// plain ticket.
async fn half_kept(app: &TestApp, id: &str, path: &str) {
    let ticket = create(app, json!({"n": 1})).await.remove(0);
    let plain = ticket["ticket_id"].as_str().unwrap();
    let file = rusqlite::Connection::open(path).unwrap();
    file.execute("UPDATE tickets SET round = 9, draw = NULL WHERE id = ?1", [plain]).unwrap();
    let draw = json!({"ticket": plain, "min": 1, "max": 6});
    assert_problem(post(app, "/int", &draw).await, 503, "store_unavailable").await;
    // A bound ticket whose commitment is another's (signed, but not for it): refused too.
    let latest = latest(app).await.unwrap();
    let body =
        json!({"round": latest + 100, "label": "forged", "draw": {"endpoint": "/int", "min": 1, "max": 6}});
    let forged = create(app, body).await.remove(0)["ticket_id"].as_str().unwrap().to_owned();
    file.execute(
        "UPDATE tickets SET commitment = (SELECT commitment FROM tickets WHERE id = ?1) WHERE id = ?2",
        [id, forged.as_str()],
    )
    .unwrap();
    assert_problem(post(app, "/int", &json!({"ticket": forged})).await, 503, "store_unavailable").await;
    // One moved to another round, in its column and in its commitment alike (which then no
    // longer verifies: it was signed for its own round): refused at once, not 425 until then.
    let body =
        json!({"round": latest + 100, "label": "moved", "draw": {"endpoint": "/int", "min": 1, "max": 6}});
    let moved = create(app, body).await.remove(0)["ticket_id"].as_str().unwrap().to_owned();
    let (from, to) = (format!("\"round\":{}", latest + 100), format!("\"round\":{}", latest + 200));
    let changed = file
        .execute(
            "UPDATE tickets SET round = ?1, commitment = CAST(replace(CAST(commitment AS TEXT), ?2, ?3) AS BLOB) \
             WHERE id = ?4",
            rusqlite::params![i64::try_from(latest + 200).unwrap(), from, to, moved],
        )
        .unwrap();
    assert_eq!(changed, 1);
    let stored: String = file
        .query_row("SELECT CAST(commitment AS TEXT) FROM tickets WHERE id = ?1", [&moved], |r| r.get(0))
        .unwrap();
    assert!(stored.contains(&to), "{stored}");
    assert_problem(post(app, "/int", &json!({"ticket": moved})).await, 503, "store_unavailable").await;
    assert_eq!(
        post(app, "/int", &json!({"ticket": id})).await.status(),
        200,
        "the used ticket's answer, again"
    );
}

/// `drbgd verify --beacon-info` passes `answer` and refuses `changed`, and refuses `answer`
/// against another chain's `/info`.
async fn cli_verdicts(app: &TestApp, net: &TestApp, answer: &Value, changed: &Value) {
    // One directory a receipt: the tests on each store run at once.
    let dir = crate::tickets::dir(&format!("cli-{}", answer["random"]["serial"].as_str().unwrap()));
    let info = dir.join("info.json");
    std::fs::write(&info, net.get("/beacon/info").await.bytes().await.unwrap()).unwrap();
    let keys = app.url("/keys");
    let pinned = answer["random"]["chain_hash"].as_str().unwrap().to_owned();
    let verify = |receipt: &Value, info: &std::path::Path, chain: &str| {
        let file = dir.join("receipt.json");
        std::fs::write(&file, receipt.to_string()).unwrap();
        let args =
            ["verify", file.to_str().unwrap(), "--jwks", &keys, "--beacon-info", info.to_str().unwrap()];
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_drbgd"));
        command.args(args);
        if !chain.is_empty() {
            command.args(["--chain-hash", chain]);
        }
        let out = command.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, said) = verify(answer, &info, &pinned);
    assert!(ok && said.contains("verified, the values are its derivation"), "{said}");
    assert!(said.contains(&format!("label {:?}", answer["random"]["label"].as_str().unwrap())), "{said}");
    let (ok, said) = verify(answer, &info, "");
    assert!(ok && said.contains("pin the network you trust"), "{said}");
    let (ok, said) = verify(answer, &info, &"0".repeat(64));
    assert!(!ok && said.contains("not --chain-hash"), "{said}");
    let (ok, said) = verify(changed, &info, &pinned);
    assert!(!ok && said.contains("invalid"), "{said}");
    let mut other: Value = serde_json::from_slice(&std::fs::read(&info).unwrap()).unwrap();
    other["period"] = json!(2);
    let other_file = dir.join("other.json");
    std::fs::write(&other_file, other.to_string()).unwrap();
    let (ok, said) = verify(answer, &other_file, "");
    assert!(!ok && said.contains("not the chain the receipt names"), "{said}");
}

/// Bound tickets used over gRPC (`GetInts`, `GetSequence`, `GetBits` with the committed
/// parameters, `ids` in that order): the derivation's values, their receipts the round's; other
/// parameters refused.
async fn over_grpc(app: &TestApp, ids: &[String]) {
    use drbgd::grpc::pb;
    use drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient;
    let channel = tonic::transport::Endpoint::from_shared(app.api.clone()).unwrap().connect().await.unwrap();
    let mut alice = RandomnessServiceClient::with_interceptor(channel, |mut r: tonic::Request<()>| {
        r.metadata_mut().insert("authorization", "Bearer alice-key".parse().unwrap());
        Ok(r)
    });
    let ticket = ids[0].clone();
    let other = pb::GetIntsRequest { min: 1, max: 7, count: 5, ticket: ticket.clone(), ..Default::default() };
    let refused = alice.get_ints(other).await.unwrap_err();
    assert!(refused.message().starts_with("ticket_bound_to_other_params: "), "{refused:?}");
    let ints = pb::GetIntsRequest { min: 1, max: 6, count: 5, ticket, ..Default::default() };
    let reply = alice.get_ints(ints).await.unwrap().into_inner();
    let values: Vec<String> = reply.values.iter().map(ToString::to_string).collect();
    let answer = checked(app, &reply.receipt_json, &reply.receipt_signature, &ids[0]).await;
    assert_eq!(json!(values), recomputed(&answer, "/int"));
    let sequence = pb::GetSequenceRequest { min: 1, max: 10, ticket: ids[1].clone(), ..Default::default() };
    let reply = alice.get_sequence(sequence).await.unwrap().into_inner();
    let values: Vec<String> = reply.values.iter().map(ToString::to_string).collect();
    let answer = checked(app, &reply.receipt_json, &reply.receipt_signature, &ids[1]).await;
    assert_eq!(json!(values), recomputed(&answer, "/sequence"));
    let bits = pb::GetBitsRequest { n: 64, ticket: ids[2].clone(), ..Default::default() };
    let reply = alice.get_bits(bits).await.unwrap().into_inner();
    let answer = checked(app, &reply.receipt_json, &reply.receipt_signature, &ids[2]).await;
    assert_eq!(json!(const_hex::encode(&reply.data)), recomputed(&answer, "/bits"));
}

/// A gRPC reply's receipt (`receipt_json`, `signature`) of ticket `id`, checked: the
/// derivation's, and it verifies. The answer as REST would show it.
async fn checked(app: &TestApp, receipt_json: &str, signature: &str, id: &str) -> Value {
    let random: Value = serde_json::from_str(receipt_json).unwrap();
    assert_eq!((&random["alg"], &random["ticket"]), (&json!("drbgd-round-v1"), &json!(id)));
    let answer = json!({"random": random, "signature": signature});
    assert!(verifies(app, &answer).await);
    answer
}

/// Creation's refusals, each with its code.
async fn refusals(app: &TestApp, out: u64) {
    let int = json!({"endpoint": "/int", "min": 1, "max": 6});
    let ahead = out + 5;
    let taken = json!({"round": ahead, "label": "test /int", "draw": int});
    assert_problem(post(app, "/tickets", &taken).await, 409, "label_taken").await;
    let taken = json!({"round": ahead, "label": "TEST /INT", "draw": int});
    assert_problem(post(app, "/tickets", &taken).await, 409, "label_taken").await;
    // The endpoint's defaults are committed: one integer.
    let one = create(app, json!({"round": ahead, "label": "defaults", "draw": int})).await.remove(0);
    assert_eq!(one["commitment"]["random"]["count"], 1, "{one}");
    let cases = [
        (json!({"round": out, "label": "x", "draw": int}), "round_not_future"),
        (json!({"round": ahead, "label": "x", "draw": {"endpoint": "/token"}}), "round_draw_not_allowed"),
        (json!({"round": ahead, "label": "x", "draw": {"endpoint": "/uuid"}}), "round_draw_not_allowed"),
        (
            json!({"round": ahead, "label": "x", "draw": {"endpoint": "/int", "min": 1, "max": 6, "alg": "chacha20"}}),
            "round_draw_not_allowed",
        ),
        (
            json!({"round": ahead, "label": "x", "draw": {"endpoint": "/int", "min": 6, "max": 1}}),
            "invalid_range",
        ),
        (json!({"round": ahead, "label": "x", "draw": {"endpoint": "/bits", "n": 12}}), "invalid_n"),
        (
            json!({"round": ahead, "label": "x", "draw": {"endpoint": "/int", "min": "1x", "max": 6}}),
            "invalid_integer",
        ),
        (
            json!({"round": ahead, "label": "x", "draw": {"endpoint": "/sequence", "min": 1, "max": 3, "count": 4}}),
            "count_exceeds_range",
        ),
        (
            json!({"round": ahead, "label": "x", "draw": {"endpoint": "/bits", "n": 8 * 65_537}}),
            "receipt_too_large",
        ),
        (json!({"round": ahead, "label": "x", "draw": {"min": 1}}), "invalid_draw"),
        (json!({"round": ahead, "label": "x"}), "invalid_draw"),
        (json!({"round": ahead, "draw": int}), "invalid_label"),
        (json!({"round": ahead, "label": "", "draw": int}), "invalid_label"),
        (json!({"round": ahead, "label": "a\nb", "draw": int}), "invalid_label"),
        (json!({"round": ahead, "label": " x", "draw": int}), "invalid_label"),
        (json!({"round": ahead, "label": "a  b", "draw": int}), "invalid_label"),
        (json!({"round": ahead, "label": "caf\u{e9}", "draw": int}), "invalid_label"),
        (json!({"round": ahead, "label": "a\u{200b}b", "draw": int}), "invalid_label"),
        (json!({"round": ahead, "label": "x".repeat(129), "draw": int}), "invalid_label"),
        (json!({"n": 2, "round": ahead, "label": "x", "draw": int}), "invalid_count"),
        (json!({"label": "x"}), "invalid_round"),
        (json!({"draw": int}), "invalid_round"),
        (json!({"round": u64::MAX, "label": "x", "draw": int}), "round_too_far"),
    ];
    for (body, code) in cases {
        assert_problem(post(app, "/tickets", &body).await, 400, code).await;
    }
}

#[tokio::test]
async fn without_a_followed_network_no_ticket_is_bound() {
    let settings = crate::tickets::ticket_settings(&crate::tickets::dir("unbound"));
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let body =
        json!({"round": 1_000_000_000u64, "label": "x", "draw": {"endpoint": "/int", "min": 1, "max": 6}});
    assert_problem(post(&app, "/tickets", &body).await, 400, "round_needs_drand").await;
}

/// The tickets' tables as drbgd wrote them before tickets could be bound to a round (SQLite's
/// version; PostgreSQL's differs in its types and names, below).
const SQLITE_V1: &str = "
CREATE TABLE tickets (id TEXT PRIMARY KEY, caller TEXT NOT NULL, show_result INTEGER NOT NULL,
    created_ms INTEGER NOT NULL, expires_ms INTEGER, previous_id TEXT, next_id TEXT, used_ms INTEGER,
    digest BLOB, serial TEXT, revealed INTEGER NOT NULL DEFAULT 0) STRICT;
INSERT INTO tickets (id, caller, show_result, created_ms) VALUES ('old', 'alice', 0, 1);
";

const POSTGRES_V1: &str = "
CREATE TABLE drbgd_tickets (id TEXT PRIMARY KEY, caller TEXT NOT NULL, show_result BOOLEAN NOT NULL,
    created_ms BIGINT NOT NULL, expires_ms BIGINT, previous_id TEXT, next_id TEXT, used_ms BIGINT,
    digest BYTEA, serial TEXT, revealed BOOLEAN NOT NULL DEFAULT FALSE);
CREATE TABLE drbgd_meta (name TEXT PRIMARY KEY, value BYTEA NOT NULL);
INSERT INTO drbgd_meta VALUES ('schema_version', '\\x0000000000000001');
INSERT INTO drbgd_tickets (id, caller, show_result, created_ms) VALUES ('old', 'alice', FALSE, 1);
";

/// Version 2 as a build of one day wrote it: bound tickets without their label.
const POSTGRES_V2_UNLABELLED: &str = "
CREATE TABLE drbgd_tickets (id TEXT PRIMARY KEY, caller TEXT NOT NULL, show_result BOOLEAN NOT NULL,
    created_ms BIGINT NOT NULL, expires_ms BIGINT, previous_id TEXT, next_id TEXT, used_ms BIGINT,
    digest BYTEA, serial TEXT, revealed BOOLEAN NOT NULL DEFAULT FALSE, round BIGINT, draw TEXT,
    commitment BYTEA);
CREATE TABLE drbgd_meta (name TEXT PRIMARY KEY, value BYTEA NOT NULL);
INSERT INTO drbgd_meta VALUES ('schema_version', '\\x0000000000000002');
INSERT INTO drbgd_tickets (id, caller, show_result, created_ms) VALUES ('old', 'alice', FALSE, 1);
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_of_before_bound_tickets_is_migrated_on_sqlite() {
    migrated(Store::Sqlite, SQLITE_V1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_of_before_bound_tickets_is_migrated_on_postgres() {
    migrated(Store::Postgres, POSTGRES_V1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_version_2_store_without_labels_gains_them_on_postgres() {
    migrated(Store::Postgres, POSTGRES_V2_UNLABELLED).await;
}

/// A store made by the drbgd before (its tickets, and PostgreSQL's schema version 1) gains the
/// columns of bound tickets at start-up, keeps its tickets, and serves tickets as before.
async fn migrated(store: Store, before: &str) {
    let tag = if before == POSTGRES_V2_UNLABELLED { "migrated2" } else { "migrated" };
    let Some(settings) = settings_on(store, tag).await else { return };
    let columns = match store {
        Store::Sqlite => {
            let file = rusqlite::Connection::open(&settings.results.path).unwrap();
            file.execute_batch(before).unwrap();
            "SELECT round, draw, commitment, label, id FROM tickets"
        }
        Store::Postgres => {
            postgres(&settings).await.batch_execute(before).await.unwrap();
            "SELECT round, draw, commitment, label, id FROM drbgd_tickets"
        }
    };
    let app = spawn_with(settings.clone(), Arc::new(OsEntropy)).await;
    let ticket = create(&app, json!({"n": 1})).await.remove(0);
    let used = post(&app, "/int", &json!({"min": 1, "max": 6, "ticket": ticket["ticket_id"]})).await;
    assert_eq!(used.status(), 200);
    let ids: Vec<String> = match store {
        Store::Sqlite => {
            let file = rusqlite::Connection::open(&settings.results.path).unwrap();
            let mut rows = file.prepare(columns).unwrap();
            rows.query_map([], |r| r.get::<_, String>(4)).unwrap().map(Result::unwrap).collect()
        }
        Store::Postgres => {
            let client = postgres(&settings).await;
            client.query(columns, &[]).await.unwrap().iter().map(|r| r.get::<_, String>(4)).collect()
        }
    };
    assert!(ids.contains(&"old".to_owned()) && ids.len() == 3, "{ids:?}");
}

/// A connection to `settings`' PostgreSQL database.
async fn postgres(settings: &Settings) -> tokio_postgres::Client {
    let mut config: tokio_postgres::Config = settings.results.url.parse().unwrap();
    let password = std::fs::read_to_string(settings.results.password_file.as_ref().unwrap()).unwrap();
    config.password(password.trim_end());
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

#[tokio::test]
async fn approved_only_binds_no_ticket() {
    let mut settings = crate::tickets::ticket_settings(&crate::tickets::dir("approved-unbound"));
    settings.drbg.approved_only = true;
    settings.drbg.default_alg = drbgd::drbg::Algorithm::Aes256Ctr;
    settings.drbg.enabled.retain(|a| a.approved());
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let body =
        json!({"round": 1_000_000_000u64, "label": "x", "draw": {"endpoint": "/int", "min": 1, "max": 6}});
    assert_problem(post(&app, "/tickets", &body).await, 400, "round_draw_not_approved").await;
}
