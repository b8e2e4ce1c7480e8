//! Tickets: a draw under a ticket is used once and kept; the same request again gets the
//! stored answer byte for byte, any other use 409; concurrent uses leave exactly one result; a
//! chain links each use to the one before; anyone sees a shown or revealed result, which
//! verifies with nothing of drbgd's; each refusal has its code. Each on SQLite, and on
//! PostgreSQL when `DRBGD_TEST_POSTGRES_URL` names a server (a database of its own per test;
//! `scripts/postgres.sh` makes one; CI sets `DRBGD_REQUIRE_POSTGRES`, where a missing server is
//! a failure): two replicas on one database then race for one ticket too.

use std::sync::Arc;

use drbgd::config::Settings;
use drbgd::drbg::entropy::OsEntropy;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{Value, json};
use sha2::Digest;

use crate::helpers::{TestApp, assert_problem, eventually, spawn_with, test_settings};

/// A fresh directory for one test.
pub(crate) fn dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("drbgd-tickets-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Where a test keeps its tickets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Store {
    Sqlite,
    Postgres,
}

/// The URL of a new, empty PostgreSQL database for test `tag` (`DRBGD_TEST_POSTGRES_URL`'s
/// server, password in `DRBGD_TEST_POSTGRES_PASSWORD_FILE`), or `None` without a server.
async fn postgres_database(tag: &str) -> Option<(String, std::path::PathBuf)> {
    let Some(url) = std::env::var("DRBGD_TEST_POSTGRES_URL").ok().filter(|u| !u.is_empty()) else {
        assert!(std::env::var_os("DRBGD_REQUIRE_POSTGRES").is_none(), "a PostgreSQL server is required");
        println!("SKIPPED: no PostgreSQL server (DRBGD_TEST_POSTGRES_URL)");
        return None;
    };
    let password_file = std::path::PathBuf::from(std::env::var("DRBGD_TEST_POSTGRES_PASSWORD_FILE").unwrap());
    let password = std::fs::read_to_string(&password_file).unwrap();
    let mut config: tokio_postgres::Config = url.parse().unwrap();
    config.password(password.trim_end());
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let name = format!("drbgd_{tag}_{}", std::process::id());
    client.batch_execute(&format!("DROP DATABASE IF EXISTS {name}")).await.unwrap();
    client.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
    let (base, _) = url.rsplit_once('/').unwrap();
    Some((format!("{base}/{name}"), password_file))
}

/// [`ticket_settings`] kept in `store` (`None`: no PostgreSQL server here).
pub(crate) async fn settings_on(store: Store, tag: &str) -> Option<Settings> {
    let mut settings = ticket_settings(&dir(&format!("{tag}-{store:?}")));
    if store == Store::Postgres {
        let (url, password_file) = postgres_database(tag).await?;
        settings.results.store = drbgd::config::results::ResultsStore::Postgres;
        settings.results.url = url;
        settings.results.password_file = Some(password_file);
        settings.results.allow_plaintext_password = true;
    }
    Some(settings)
}

/// Each test once per store: `name` on SQLite and on PostgreSQL.
macro_rules! on_both_stores {
    ($name:ident, $sqlite:ident, $postgres:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $sqlite() {
            $name(Store::Sqlite).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $postgres() {
            $name(Store::Postgres).await;
        }
    };
}
pub(crate) use on_both_stores;

/// Settings with receipts (a key of `seed`) and tickets on, their file in `dir`.
pub(crate) fn ticket_settings(dir: &std::path::Path) -> Settings {
    use std::os::unix::fs::PermissionsExt;
    let (pem, _) = drbgd::receipts::keys::private_pem(&[5; 32]).unwrap();
    let key = dir.join("signing.pem");
    std::fs::write(&key, pem.as_bytes()).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut settings = test_settings();
    settings.receipts.enabled = true;
    settings.receipts.signing_keys = vec![key.display().to_string()];
    // A ticket is its caller's: two callers, named by their keys.
    settings.auth.enabled = true;
    for (name, key) in [("alice", ALICE), ("bob", BOB)] {
        let digest = data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(key.as_bytes()));
        let caller =
            drbgd::config::callers::CallerSettings { key_sha256: vec![digest], ..Default::default() };
        settings.callers.insert(name.into(), caller);
    }
    settings.tickets.enabled = true;
    settings.results.path = dir.join("tickets.sqlite3").display().to_string();
    settings
}

/// The callers' keys.
const ALICE: &str = "alice-key";
const BOB: &str = "bob-key";

/// A server keeping its tickets in `store` (`None`: no PostgreSQL server here).
async fn spawn(store: Store, tag: &str) -> Option<TestApp> {
    Some(spawn_with(settings_on(store, tag).await?, Arc::new(OsEntropy)).await)
}

pub(crate) async fn create(app: &TestApp, body: Value) -> Vec<Value> {
    let r = post(app, "/tickets", &body).await;
    assert_eq!(r.status(), 201);
    let page: Value = r.json().await.unwrap();
    page["tickets"].as_array().unwrap().clone()
}

/// A POST of alice's.
pub(crate) async fn post(app: &TestApp, path: &str, body: &Value) -> reqwest::Response {
    post_as(app, ALICE, path, body).await
}

async fn post_as(app: &TestApp, key: &str, path: &str, body: &Value) -> reqwest::Response {
    app.client.post(app.url(path)).bearer_auth(key).json(body).send().await.unwrap()
}

/// A GET of alice's.
async fn get(app: &TestApp, path: &str) -> reqwest::Response {
    app.client.get(app.url(path)).bearer_auth(ALICE).send().await.unwrap()
}

/// The receipt `answer` verifies with the key `GET /keys` publishes (RFC 8785 and Ed25519).
pub(crate) async fn verifies(app: &TestApp, answer: &Value) -> bool {
    let keys: Value = app.get("/keys").await.json().await.unwrap();
    let x = data_encoding::BASE64URL_NOPAD.decode(keys["keys"][0]["x"].as_str().unwrap().as_bytes()).unwrap();
    let key = VerifyingKey::from_bytes(&x.try_into().unwrap()).unwrap();
    let canonical = serde_json_canonicalizer::to_vec(&answer["random"]).unwrap();
    let sig =
        data_encoding::BASE64URL_NOPAD.decode(answer["signature"].as_str().unwrap().as_bytes()).unwrap();
    key.verify_strict(&canonical, &Signature::from_slice(&sig).unwrap()).is_ok()
}

on_both_stores!(used_once, used_once_on_sqlite, used_once_on_postgres);

/// A ticket is used once; its retry is the same answer, byte for byte.
async fn used_once(store: Store) {
    let Some(app) = spawn(store, "once").await else { return };
    let ticket = create(&app, json!({"n": 1})).await.remove(0);
    let id = ticket["ticket_id"].as_str().unwrap().to_owned();
    assert!(ticket["used_at"].is_null() && ticket["previous_ticket"].is_null(), "{ticket}");
    let draw = json!({"min": 1, "max": 49, "count": 6, "ticket": id});
    let first = post(&app, "/sequence", &draw).await;
    assert_eq!(first.status(), 200);
    let next = first.headers()["drbgd-next-ticket"].to_str().unwrap().to_owned();
    let body = first.bytes().await.unwrap();
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert!(verifies(&app, &answer).await, "{answer}");
    assert_eq!(answer["random"]["ticket"], id.as_str());
    assert!(answer["random"].get("previous_ticket").is_none(), "a first ticket has none");
    // The same request again, its members in another order: the stored answer, byte for byte.
    let again = post(&app, "/sequence", &json!({"ticket": id, "count": 6, "max": 49, "min": 1})).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["drbgd-next-ticket"], next.as_str());
    assert_eq!(again.bytes().await.unwrap(), body);
    // Any other use: 409, naming the serial.
    let other = post(&app, "/sequence", &json!({"min": 1, "max": 49, "count": 7, "ticket": id})).await;
    let problem = assert_problem(other, 409, "ticket_used").await;
    let serial = answer["random"]["serial"].as_str().unwrap();
    assert!(problem["detail"].as_str().unwrap().contains(serial), "{problem}");
    let elsewhere = post(&app, "/int", &json!({"min": 1, "max": 49, "count": 6, "ticket": id})).await;
    assert_problem(elsewhere, 409, "ticket_used").await;
    // The kept result, by serial, is the answer sent.
    let kept = get(&app, &format!("/results/{serial}")).await;
    // Not bob's to read, nor his ticket to use.
    assert_problem(
        app.client.get(app.url(&format!("/results/{serial}"))).bearer_auth(BOB).send().await.unwrap(),
        404,
        "result_not_found",
    )
    .await;
    assert_problem(post_as(&app, BOB, "/sequence", &draw).await, 403, "ticket_not_yours").await;
    assert_eq!(kept.status(), 200);
    assert_eq!(kept.bytes().await.unwrap(), body);
    // The chain: the next ticket's draw names this one as its predecessor.
    let second = post(&app, "/bits", &json!({"n": 256, "ticket": next})).await;
    assert_eq!(second.status(), 200);
    let second: Value = second.json().await.unwrap();
    assert_eq!(second["random"]["previous_ticket"], id.as_str());
    assert!(verifies(&app, &second).await);
}

on_both_stores!(revealed, revealed_on_sqlite, revealed_on_postgres);

/// Anyone sees a shown or revealed result, and it verifies.
async fn revealed(store: Store) {
    let Some(app) = spawn(store, "reveal").await else { return };
    let hidden = create(&app, json!({"n": 1, "show_result": false})).await.remove(0);
    let shown = create(&app, json!({"n": 1, "show_result": true})).await.remove(0);
    let (hidden, shown) = (hidden["ticket_id"].as_str().unwrap(), shown["ticket_id"].as_str().unwrap());
    // Unused and shown: `result` is null; hidden: no `result` at all.
    let view: Value = app.get(&format!("/tickets/{shown}")).await.json().await.unwrap();
    assert!(view["result"].is_null() && view.get("result").is_some(), "{view}");
    // A chain of three uses of the hidden one, the last revealed.
    let mut id = hidden.to_owned();
    let mut chain = Vec::new();
    for _ in 0..3 {
        let r = post(&app, "/uuid", &json!({"count": 2, "ticket": id})).await;
        assert_eq!(r.status(), 200);
        let next = r.headers()["drbgd-next-ticket"].to_str().unwrap().to_owned();
        chain.push(std::mem::replace(&mut id, next));
    }
    for used in &chain {
        let view: Value = app.get(&format!("/tickets/{used}")).await.json().await.unwrap();
        assert!(view.get("result").is_none(), "hidden until revealed: {view}");
        assert!(view["used_at"].is_string() && view["serial"].is_string(), "{view}");
        assert!(view.get("caller").is_none() && view["caller_hash"].is_string(), "{view}");
    }
    let revealed: Value =
        post(&app, &format!("/tickets/{}/reveal", chain[2]), &json!({})).await.json().await.unwrap();
    assert_eq!(revealed["revealed"], 3);
    for (i, used) in chain.iter().enumerate() {
        let view: Value = app.get(&format!("/tickets/{used}")).await.json().await.unwrap();
        assert!(verifies(&app, &view["result"]).await, "{view}");
        assert_eq!(view["result"]["random"]["ticket"], used.as_str());
        let previous = if i == 0 { Value::Null } else { Value::from(chain[i - 1].as_str()) };
        assert_eq!(view["previous_ticket"], previous);
        assert_eq!(view["result"]["random"].get("previous_ticket").cloned().unwrap_or(Value::Null), previous);
    }
    // The newest is unused: nothing to reveal.
    assert_problem(post(&app, &format!("/tickets/{id}/reveal"), &json!({})).await, 409, "ticket_unused")
        .await;
    // Listing: the first of the chain is a head, the newest a tail.
    let heads: Value = get(&app, "/tickets?type=head").await.json().await.unwrap();
    assert!(heads["tickets"].as_array().unwrap().iter().any(|t| t["ticket_id"] == chain[0].as_str()));
    let tails: Value = get(&app, "/tickets?type=tail").await.json().await.unwrap();
    let bobs: Value = app
        .client
        .get(app.url("/tickets?type=tail"))
        .bearer_auth(BOB)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(bobs["tickets"], json!([]), "bob lists his own: none");
    assert!(tails["tickets"].as_array().unwrap().iter().any(|t| t["ticket_id"] == id.as_str()));
}

on_both_stores!(race, race_on_sqlite, race_on_postgres);

/// 200 uses of one ticket at once, half of them the same request and half another: one result
/// is kept; every identical request gets it, every other one 409.
async fn race(store: Store) {
    let Some(app) = spawn(store, "race").await else { return };
    race_between(&[&app, &app]).await;
}

/// Two replicas on one PostgreSQL database: 200 uses of one ticket, from both, half of them the
/// same request: one result is kept, every identical request gets it, every other one 409.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_on_one_database_keep_exactly_one_result() {
    let Some(settings) = settings_on(Store::Postgres, "replicas").await else { return };
    let one = spawn_with(settings.clone(), Arc::new(OsEntropy)).await;
    let two = spawn_with(settings, Arc::new(OsEntropy)).await;
    for _ in 0..3 {
        race_between(&[&one, &two]).await;
    }
}

/// 200 uses of one new ticket, alternately on each of `apps`.
async fn race_between(apps: &[&TestApp]) {
    let app = apps[0];
    let id = create(app, json!({"n": 1})).await.remove(0)["ticket_id"].as_str().unwrap().to_owned();
    let mut tasks = Vec::new();
    for i in 0..200 {
        let on = apps[(i / 2) % apps.len()];
        let (client, url) = (on.client.clone(), on.url("/int"));
        let body = json!({"min": 1, "max": 1000, "count": if i % 2 == 0 { 5 } else { 6 }, "ticket": id});
        tasks.push(tokio::spawn(async move {
            let r = client.post(url).bearer_auth(ALICE).json(&body).send().await.unwrap();
            (i % 2, r.status().as_u16(), r.bytes().await.unwrap())
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    let winner =
        answers.iter().find(|(_, status, _)| *status == 200).map(|(kind, _, body)| (*kind, body.clone()));
    let (kind, body) = winner.expect("one use succeeded");
    for (k, status, b) in &answers {
        if *k == kind {
            assert_eq!((*status, b), (200, &body), "the same request gets the stored answer");
        } else {
            assert_eq!(*status, 409, "another request is refused");
        }
    }
    let serial =
        serde_json::from_slice::<Value>(&body).unwrap()["random"]["serial"].as_str().unwrap().to_owned();
    for on in apps {
        assert_eq!(get(on, &format!("/results/{serial}")).await.bytes().await.unwrap(), body);
    }
}

on_both_stores!(refusals, refusals_on_sqlite, refusals_on_postgres);

/// Each refusal has its code.
async fn refusals(store: Store) {
    let Some(mut settings) = settings_on(store, "refusals").await else { return };
    settings.tickets.max_unused = 3;
    settings.tickets.ttl_seconds = 1;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let id = create(&app, json!({"n": 2})).await.remove(0)["ticket_id"].as_str().unwrap().to_owned();
    let unknown = "018f0000-0000-7000-8000-000000000000";
    for (path, body, status, code) in [
        ("/int", json!({"min": 1, "max": 6, "ticket": unknown}), 404, "ticket_not_found"),
        ("/int", json!({"min": 1, "max": 6, "ticket": "nope"}), 400, "invalid_ticket"),
        ("/token", json!({"ticket": id}), 400, "ticket_not_allowed"),
        ("/nonce", json!({"ticket": id}), 400, "ticket_not_allowed"),
        ("/tickets", json!({"n": 0}), 400, "invalid_count"),
        ("/tickets", json!({"n": 51}), 400, "invalid_count"),
        ("/tickets", json!({"n": 2}), 409, "too_many_tickets"),
        ("/tickets", json!({"n": 1, "x": "1"}), 400, "unknown_parameter"),
    ] {
        assert_problem(post(&app, path, &body).await, status, code).await;
    }
    let by_get = get(&app, &format!("/int?min=1&max=6&ticket={id}")).await;
    assert_problem(by_get, 400, "ticket_needs_post").await;
    assert_problem(app.get(&format!("/tickets/{unknown}")).await, 404, "ticket_not_found").await;
    assert_problem(get(&app, "/results/nope").await, 404, "result_not_found").await;
    assert_problem(get(&app, "/tickets?type=x").await, 400, "invalid_type").await;
    assert_problem(app.get("/tickets/not-an-id").await, 404, "ticket_not_found").await;
    // Without credentials: no caller to hold a ticket.
    let anonymous = app.client.post(app.url("/tickets")).json(&json!({"n": 1})).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    // An unused ticket past its ttl: 410 (its expiry is the wall clock's: polled until past).
    let view: Value = app.get(&format!("/tickets/{id}")).await.json().await.unwrap();
    let expires = view["expires_at"].as_str().unwrap().to_owned();
    let at = time::OffsetDateTime::parse(&expires, &time::format_description::well_known::Rfc3339).unwrap();
    let past =
        eventually(std::time::Duration::from_secs(10), || async { time::OffsetDateTime::now_utc() > at })
            .await;
    assert!(past, "the clock passed {expires}");
    assert_problem(
        post(&app, "/int", &json!({"min": 1, "max": 6, "ticket": id})).await,
        410,
        "ticket_expired",
    )
    .await;
}

on_both_stores!(swept_and_full, swept_and_full_on_sqlite, swept_and_full_on_postgres);

/// A result past its retention is swept: its ticket stays used, the same request again is 410
/// `result_expired`, another 409; a store at `results.max_bytes` refuses new tickets and
/// ticketed draws 503 `store_full`, leaving the ticket unused.
async fn swept_and_full(store: Store) {
    let Some(mut settings) = settings_on(store, "swept").await else { return };
    settings.results.max_bytes = 1 << 20;
    settings.tickets.max_unused = 100_000;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let tickets = app.state.tickets.clone().unwrap();
    let ids: Vec<String> = create(&app, json!({"n": 2, "show_result": true}))
        .await
        .iter()
        .map(|t| t["ticket_id"].as_str().unwrap().to_owned())
        .collect();
    let draw = json!({"min": 1, "max": 6, "ticket": ids[0]});
    let answer: Value = post(&app, "/int", &draw).await.json().await.unwrap();
    let serial = answer["random"]["serial"].as_str().unwrap().to_owned();
    assert_eq!(tickets.sweep().await, 0, "nothing is past a year");
    assert_eq!(tickets.sweep_before(i64::MAX).await, 1, "the one result kept");
    assert_problem(post(&app, "/int", &draw).await, 410, "result_expired").await;
    let other = json!({"min": 1, "max": 7, "ticket": ids[0]});
    assert_problem(post(&app, "/int", &other).await, 409, "ticket_used").await;
    assert_problem(get(&app, &format!("/results/{serial}")).await, 404, "result_not_found").await;
    let view: Value = app.get(&format!("/tickets/{}", ids[0])).await.json().await.unwrap();
    assert!(
        view["used_at"].is_string() && view["result"].is_null() && view["result_expired"] == true,
        "{view}"
    );
    // Filled past 1 MiB with tickets: refused once measured.
    while {
        tickets.measure().await;
        app.state.metrics.tickets.bytes.get() < 1 << 20
    } {
        for _ in 0..20 {
            create(&app, json!({"n": 50})).await;
        }
    }
    assert_eq!(app.state.metrics.tickets.full.get(), 1);
    assert_problem(post(&app, "/tickets", &json!({"n": 1})).await, 503, "store_full").await;
    let refused = post(&app, "/int", &json!({"min": 1, "max": 6, "ticket": ids[1]})).await;
    assert_problem(refused, 503, "store_full").await;
    let view: Value = app.get(&format!("/tickets/{}", ids[1])).await.json().await.unwrap();
    assert!(view["used_at"].is_null(), "refused before it was touched: {view}");
}

#[test]
fn tickets_need_receipts_and_auth() {
    let dir = dir("settings");
    let mut settings = ticket_settings(&dir);
    settings.auth.enabled = false;
    let e = settings.validate().unwrap_err().to_string();
    assert!(e.contains("tickets.enabled") && e.contains("auth.enabled"), "{e}");
    let mut settings = ticket_settings(&dir);
    settings.receipts.enabled = false;
    assert!(settings.validate().unwrap_err().to_string().contains("receipts.enabled"));
}

#[tokio::test]
async fn without_tickets_a_ticketed_draw_is_refused() {
    let app = crate::helpers::spawn_app().await;
    let r =
        post(&app, "/int", &json!({"min": 1, "max": 6, "ticket": "018f0000-0000-7000-8000-000000000000"}))
            .await;
    assert_problem(r, 400, "tickets_disabled").await;
    assert_eq!(app.get("/tickets/x").await.status(), 404);
    // gRPC's methods exist whatever the settings: refused, naming why.
    let mut c = drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient::connect(app.api.clone())
        .await
        .unwrap();
    let ticket =
        drbgd::grpc::pb::GetTicketRequest { ticket_id: "018f0000-0000-7000-8000-000000000000".into() };
    let refused = c.get_ticket(ticket).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::NotFound);
    assert!(refused.message().starts_with("tickets_disabled: "), "{refused:?}");
}

on_both_stores!(over_grpc, over_grpc_on_sqlite, over_grpc_on_postgres);

/// Tickets over gRPC as over REST: created, used by a message with its ticket (the reply read
/// from the receipt, which verifies), the same message again the same reply, REST's POST of
/// the same draw the same kept answer (one digest), another use ALREADY_EXISTS; shown to
/// anyone without credentials, revealed, listed, its kept answer by serial.
async fn over_grpc(store: Store) {
    use drbgd::grpc::pb;
    use drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient;
    let Some(app) = spawn(store, "grpc").await else { return };
    let channel = tonic::transport::Endpoint::from_shared(app.api.clone()).unwrap().connect().await.unwrap();
    let mut anyone = RandomnessServiceClient::new(channel.clone());
    let mut alice = RandomnessServiceClient::with_interceptor(channel, |mut r: tonic::Request<()>| {
        r.metadata_mut().insert("authorization", format!("Bearer {ALICE}").parse().unwrap());
        Ok(r)
    });
    let created = alice.create_tickets(pb::CreateTicketsRequest { n: 4, show_result: false }).await.unwrap();
    let ids: Vec<String> = created.into_inner().tickets.into_iter().map(|t| t.ticket_id).collect();
    assert_eq!(ids.len(), 4);
    let ints = pb::GetIntsRequest { min: 1, max: 49, count: 6, ticket: ids[0].clone(), ..Default::default() };
    let first = alice.get_ints(ints.clone()).await.unwrap().into_inner();
    assert_eq!(first.values.len(), 6);
    assert!(first.values.iter().all(|v| (1..=49).contains(v)));
    assert!(!first.next_ticket.is_empty());
    let random: Value = serde_json::from_str(&first.receipt_json).unwrap();
    assert_eq!(random["ticket"], ids[0].as_str());
    let answer = json!({"random": random, "signature": first.receipt_signature});
    assert!(verifies(&app, &answer).await);
    let data: Vec<i64> =
        random["data"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().parse().unwrap()).collect();
    assert_eq!(data, first.values, "the reply is the receipt's");
    // The same message again: the same reply. REST's POST of the same draw: the kept answer.
    assert_eq!(alice.get_ints(ints.clone()).await.unwrap().into_inner(), first);
    let rest = post(&app, "/int", &json!({"min": 1, "max": 49, "count": 6, "ticket": ids[0]})).await;
    assert_eq!(rest.status(), 200);
    let rest: Value = rest.json().await.unwrap();
    assert_eq!(serde_json::to_string(&rest["random"]).unwrap(), serde_json::to_string(&random).unwrap());
    let other = alice.get_ints(pb::GetIntsRequest { count: 5, ..ints.clone() }).await.unwrap_err();
    assert_eq!(other.code(), tonic::Code::AlreadyExists, "{other:?}");
    assert!(other.message().starts_with("ticket_used: "), "{other:?}");
    // A REST use, retried over gRPC: the kept answer, as a reply.
    let rest_first = post(&app, "/bits", &json!({"n": 20, "ticket": ids[1]})).await;
    assert_eq!(rest_first.status(), 200);
    let rest_first: Value = rest_first.json().await.unwrap();
    let bits =
        alice.get_bits(pb::GetBitsRequest { n: 20, ticket: ids[1].clone(), ..Default::default() }).await;
    let bits = bits.unwrap().into_inner();
    assert_eq!(bits.receipt_json, serde_json::to_string(&rest_first["random"]).unwrap());
    assert_eq!(bits.receipt_signature, rest_first["signature"].as_str().unwrap());
    assert_eq!((bits.n, bits.data.len()), (20, 3));
    let hex = rest_first["random"]["data"].as_str().unwrap();
    assert_eq!(data_encoding::HEXLOWER.encode(&bits.data), hex, "the reply's data is the receipt's");
    assert_eq!(bits.ones, bits.data.iter().map(|b| u64::from(b.count_ones())).sum::<u64>());
    // A REST use without `receipt`, retried over gRPC with receipt = true and an empty
    // user_data: one draw (a ticket implies its receipt; unset is unset), one kept answer.
    let rest_bytes = post(&app, "/bytes", &json!({"n": 5, "ticket": ids[3]})).await;
    assert_eq!(rest_bytes.status(), 200);
    let rest_bytes: Value = rest_bytes.json().await.unwrap();
    let again = pb::GetBytesRequest { n: 5, receipt: true, ticket: ids[3].clone(), ..Default::default() };
    let bytes = alice.get_bytes(again).await.unwrap().into_inner();
    assert_eq!(bytes.receipt_json, serde_json::to_string(&rest_bytes["random"]).unwrap());
    let hex = rest_bytes["random"]["data"].as_str().unwrap();
    assert_eq!((bytes.n, data_encoding::HEXLOWER.encode(&bytes.data)), (5, hex.to_owned()));
    // Every draw that takes a ticket, over gRPC.
    let uuids = alice
        .get_uuids(pb::GetUuidsRequest { count: 2, version: 7, ticket: ids[2].clone(), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((uuids.uuids.len(), uuids.version), (2, 7));
    let sequence =
        pb::GetSequenceRequest { min: 1, max: 10, ticket: uuids.next_ticket.clone(), ..Default::default() };
    let mut shuffled = alice.get_sequence(sequence).await.unwrap().into_inner().values;
    shuffled.sort_unstable();
    assert_eq!(shuffled, (1..=10).collect::<Vec<_>>());
    // Shown to anyone once revealed (without credentials); listed; kept by serial.
    // A ticket as anyone sees it (no credentials).
    let view = async |anyone: &mut RandomnessServiceClient<tonic::transport::Channel>, id: &str| {
        let request = pb::GetTicketRequest { ticket_id: id.to_owned() };
        anyone.get_ticket(request).await.unwrap().into_inner().ticket.unwrap()
    };
    let hidden = view(&mut anyone, &ids[0]).await;
    assert!(hidden.result_json.is_empty() && !hidden.used_at.is_empty(), "{hidden:?}");
    let revealed = alice.reveal_ticket(pb::RevealTicketRequest { ticket_id: ids[0].clone() }).await.unwrap();
    assert_eq!(revealed.into_inner().revealed, 1);
    let shown = view(&mut anyone, &ids[0]).await;
    let kept: Value = serde_json::from_str(&shown.result_json).unwrap();
    assert!(verifies(&app, &kept).await, "{kept}");
    let serial = random["serial"].as_str().unwrap().to_owned();
    let result =
        alice.get_result(pb::GetResultRequest { serial: serial.clone() }).await.unwrap().into_inner();
    assert_eq!(result.result_json, shown.result_json);
    let heads =
        alice.list_tickets(pb::ListTicketsRequest { r#type: "head".into(), ..Default::default() }).await;
    let heads = heads.unwrap().into_inner().tickets;
    assert_eq!(heads.len(), 4, "four chains begun");
    let listed = heads.iter().find(|t| t.ticket_id == ids[0]).unwrap();
    assert!(listed.revealed && listed.result_json.is_empty() && !listed.result_expired, "{listed:?}");
    // Refusals as REST's: no caller, another's, a secret's route.
    let unauthenticated = anyone.create_tickets(pb::CreateTicketsRequest::default()).await.unwrap_err();
    assert_eq!(unauthenticated.code(), tonic::Code::Unauthenticated);
    let missing = anyone.get_ticket(pb::GetTicketRequest { ticket_id: "nope".into() }).await.unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);
    let bad = alice.list_tickets(pb::ListTicketsRequest { r#type: "x".into(), ..Default::default() }).await;
    assert!(bad.unwrap_err().message().starts_with("invalid_type: "));
}

on_both_stores!(keep_all, keep_all_on_sqlite, keep_all_on_postgres);

/// `[results] keep_all`: every receipt of a draw that could take a ticket is kept before it
/// is answered, over REST (GET and POST) and gRPC, and fetched again by its serial, byte for
/// byte; a token's receipt (a secret) is never kept.
async fn keep_all(store: Store) {
    use drbgd::grpc::pb;
    let Some(mut settings) = settings_on(store, "keepall").await else { return };
    settings.results.keep_all = true;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let app = &app;
    let kept = |body: bytes::Bytes| async move {
        let random = &serde_json::from_slice::<Value>(&body).unwrap()["random"];
        let again = get(app, &format!("/results/{}", random["serial"].as_str().unwrap())).await;
        (again.status().as_u16(), again.bytes().await.unwrap() == body)
    };
    let by_get = get(app, "/int?min=1&max=6&count=3&receipt=true").await;
    assert_eq!(by_get.status(), 200);
    assert_eq!(kept(by_get.bytes().await.unwrap()).await, (200, true), "a GET's receipt");
    let by_post = post(app, "/bits", &json!({"n": 64, "receipt": true})).await;
    assert_eq!(by_post.status(), 200);
    assert_eq!(kept(by_post.bytes().await.unwrap()).await, (200, true), "a POST's receipt");
    let token = get(app, "/token?receipt=true").await;
    assert_eq!(token.status(), 200);
    assert_eq!(kept(token.bytes().await.unwrap()).await.0, 404, "a token's receipt is never kept");
    let channel = tonic::transport::Endpoint::from_shared(app.api.clone()).unwrap().connect().await.unwrap();
    let mut alice = pb::randomness_service_client::RandomnessServiceClient::with_interceptor(
        channel,
        |mut r: tonic::Request<()>| {
            r.metadata_mut().insert("authorization", format!("Bearer {ALICE}").parse().unwrap());
            Ok(r)
        },
    );
    let ints = pb::GetIntsRequest { min: 1, max: 6, count: 2, receipt: true, ..Default::default() };
    let reply = alice.get_ints(ints).await.unwrap().into_inner();
    let body = format!(r#"{{"random":{},"signature":"{}"}}"#, reply.receipt_json, reply.receipt_signature);
    assert_eq!(kept(body.into()).await, (200, true), "a gRPC receipt, as REST answers it");
    assert_eq!(app.state.metrics.tickets.kept.get(), 3);
}

/// TLS to PostgreSQL (`sslmode=require`): the server's certificate verified against
/// `results.ca_file`, the connection encrypted (as the server reports it), the password sent
/// without `allow_plaintext_password`; a certificate no configured root signs stops start-up at
/// once, naming it, rather than being retried as a database not up yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tls_to_postgres_is_verified() {
    let Some(mut settings) = settings_on(Store::Postgres, "tls").await else { return };
    let password_file = settings.results.password_file.clone().unwrap();
    let ca = password_file.parent().unwrap().join("ca.crt");
    assert!(ca.exists(), "scripts/postgres.sh writes the server's CA beside the password");
    settings.results.url = format!("{}?sslmode=require", settings.results.url);
    settings.results.allow_plaintext_password = false;
    let mut untrusted = settings.clone();
    settings.results.ca_file = Some(ca);
    let app = spawn_with(settings.clone(), Arc::new(OsEntropy)).await;
    assert_eq!(create(&app, json!({"n": 1})).await.len(), 1);
    // The server's own view of drbgd's connections: encrypted.
    let mut config: tokio_postgres::Config =
        settings.results.url.replace("?sslmode=require", "").parse().unwrap();
    config.password(std::fs::read_to_string(&password_file).unwrap().trim_end());
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
             WHERE a.application_name = 'drbgd' AND a.datname = current_database()",
            &[],
        )
        .await
        .unwrap();
    let (encrypted, all): (i64, i64) = (row.get(0), row.get(1));
    assert!(all > 0 && encrypted == all, "{encrypted} of {all} connections encrypted");
    // The public roots do not sign this server's certificate: refused at once.
    untrusted.results.ca_file = None;
    let start = std::time::Instant::now();
    let refused = drbgd::app::App::build_with_entropy(untrusted, Arc::new(OsEntropy)).await.err().unwrap();
    let chain = format!("{refused:#}");
    assert!(chain.to_lowercase().contains("certificate"), "{chain}");
    assert!(start.elapsed() < std::time::Duration::from_secs(10), "not retried for {:?}", start.elapsed());
}
