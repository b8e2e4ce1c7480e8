//! The callers' configuration: start-up refusals naming the key, reloads of the config file
//! (valid, invalid, beside edits that need a restart) by call, by SIGHUP to the real binary
//! and by the file watcher.

use std::sync::Arc;
use std::time::Duration;

use drbgd::config::{ConfigSource, Settings};

use crate::callers::{EXAMPLE, example, get, on_free_ports, temp_dir, write_config};
use crate::helpers::{Binary, assert_problem, spawn_binary};

/// The example written to a fresh directory (named by `tag`), an app built from it and
/// running, and its reloader.
async fn reloadable_example(
    tag: &str,
) -> (std::path::PathBuf, std::path::PathBuf, drbgd::reload::Reloader, crate::helpers::TestApp) {
    let dir = std::env::temp_dir().join(format!(
        "drbgd-callers-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("callers.toml");
    write_config(&file, |t| t);
    let source = ConfigSource { file: Some(file.clone()), overrides: on_free_ports() };
    let app = drbgd::app::App::build(source.load().unwrap()).await.unwrap().with_config_source(source);
    let reloader = app.reloader();
    (dir, file, reloader, crate::helpers::run(app))
}

#[tokio::test]
async fn a_reload_applies_a_valid_file_and_refuses_an_invalid_one() {
    let (dir, file, reloader, test) = reloadable_example("valid").await;
    assert_eq!(get(&test, "web-example-key", "/bits?n=256&alg=aes256ctr").await.status(), 403);

    // Valid: web may now use aes256ctr too; the new policy applies to the next request.
    write_config(&file, |t| t.replace("algs = [\"chacha20\"]", "algs = [\"chacha20\", \"aes\"]"));
    assert!(reloader.reload_all());
    assert_eq!(get(&test, "web-example-key", "/bits?n=256&alg=aes256ctr").await.status(), 200);

    // Invalid (two callers with one key): refused, counted, and the callers in force stay.
    write_config(&file, |t| {
        t.replace(
            "c52e30ad968976c3269f64540428a5a7668aa81c3757563b65c89f2675b26d7a",
            "085e30d4e4784e45666914568005e07773f8fea65fb46e28b17698781b7520b1",
        )
    });
    assert!(!reloader.reload_all());
    assert_eq!(get(&test, "web-example-key", "/bits?n=256&alg=aes256ctr").await.status(), 200);
    let usage: serde_json::Value = get(&test, "web-example-key", "/usage").await.json().await.unwrap();
    assert_eq!(usage["caller"], "web");
    // Malformed TOML: refused too.
    std::fs::write(&file, "[callers.web\n").unwrap();
    assert!(!reloader.reload_all());
    // Emptied (or truncated to its callers): it parses, but auth would be off; refused, and
    // requests without a key are still 401.
    std::fs::write(&file, "").unwrap();
    assert!(!reloader.reload_all());
    write_config(&file, |t| t.replace("enabled = true", "enabled = false"));
    assert!(!reloader.reload_all());
    assert_eq!(test.get("/token").await.status(), 401);
    let metrics =
        test.client.get(format!("{}/metrics", test.admin)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("drbgd_reloads_total{result=\"error\",what=\"callers\"} 4"), "{metrics}");
    assert!(metrics.contains("drbgd_reloads_total{result=\"ok\",what=\"callers\"} 1"));
    // The counters survived the reloads: the 403 before the first one is still there.
    assert_eq!(usage["counters"]["denied"]["alg_not_allowed"], 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An edit outside `[callers]` (here `[log]`) needs a restart to apply, but it does not block
/// later `[callers]` changes (a key rotation or revocation must not wait for a restart); only
/// `[auth]` and `[tls]` changes refuse the reload.
#[tokio::test]
async fn a_reload_applies_callers_beside_an_edit_that_needs_a_restart() {
    let (dir, file, reloader, test) = reloadable_example("other").await;
    let aes = || get(&test, "web-example-key", "/bits?n=256&alg=aes256ctr");
    assert_eq!(aes().await.status(), 403);
    // An unrelated edit alone: applied as far as `[callers]` goes (nothing changed there).
    let audit_off = |t: String| t.replace("audit = true", "audit = false");
    write_config(&file, audit_off);
    assert!(reloader.reload_all(), "an edit of [log] alone refuses nothing");
    // With it still in the file, a later `[callers]` change applies.
    write_config(&file, |t| audit_off(t).replace("algs = [\"chacha20\"]", "algs = [\"chacha20\", \"aes\"]"));
    assert!(reloader.reload_all());
    assert_eq!(aes().await.status(), 200, "the [callers] change applies beside the [log] edit");
    // The web caller's key revoked (its digest replaced by a new key's) in the same file.
    write_config(&file, |t| {
        audit_off(t).replace(
            "c52e30ad968976c3269f64540428a5a7668aa81c3757563b65c89f2675b26d7a",
            "0000000000000000000000000000000000000000000000000000000000000000",
        )
    });
    assert!(reloader.reload_all());
    assert_problem(aes().await, 401, "unauthorized").await;
    // `[auth]` or `[tls]` changed: refused, whatever else changed.
    write_config(&file, |t| audit_off(t).replace("enabled = true", "enabled = true\napi_key_sha256 = []"));
    assert!(reloader.reload_all(), "[auth] as it was (api_key_sha256 = [] is the default)");
    write_config(&file, |t| t.replace("[auth]\nenabled = true", "[auth]\nenabled = false"));
    assert!(!reloader.reload_all(), "auth turned off by a reload");
    write_config(&file, |t| t.replace("[auth]\n", "[tls]\ncert_file = \"/elsewhere.pem\"\n\n[auth]\n"));
    assert!(!reloader.reload_all(), "[tls] changed by a reload");
    assert_problem(test.get("/token").await, 401, "unauthorized").await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Keys without a caller name belong to `default`; beside named callers, that (open, unlimited)
/// caller made implicitly is most likely a mistake, and is said.
#[test]
fn a_bare_digest_beside_named_callers_is_warned() {
    let metrics = drbgd::metrics::Metrics::new(Arc::default());
    let dir = std::env::temp_dir().join(format!("drbgd-bare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("api_keys");
    let bare = "1111111111111111111111111111111111111111111111111111111111111111";
    let build = |text: &str, edit: &dyn Fn(&mut Settings)| {
        std::fs::write(&keys, text).unwrap();
        let mut s = example();
        s.auth.api_keys_file = Some(keys.clone());
        edit(&mut s);
        let (registry, warnings) = drbgd::callers::Registry::build(&s, &metrics, None).unwrap();
        let names: Vec<String> = registry.callers().iter().map(|c| c.name().to_string()).collect();
        (names, warnings)
    };
    let implicit =
        |w: &[String]| w.iter().any(|w| w.contains("`default`") && w.contains("[callers.default]"));
    let (names, warnings) = build(&format!("# a bare digest\n{bare}\n"), &|_| ());
    assert!(names.contains(&"default".to_string()), "{names:?}");
    assert!(implicit(&warnings), "{warnings:?}");
    assert!(!warnings.iter().any(|w| w.contains(bare)), "digests are not echoed: {warnings:?}");
    // Named lines only: no `default`, nothing to say.
    let (names, warnings) = build(&format!("web {bare}\n"), &|_| ());
    assert!(!names.contains(&"default".to_string()) && !implicit(&warnings), "{names:?} {warnings:?}");
    // `[callers.default]` configured: the bare digest is its key, as written.
    let (_, warnings) = build(&format!("{bare}\n"), &|s| {
        s.callers.insert("default".into(), Default::default());
    });
    assert!(!implicit(&warnings), "{warnings:?}");
    // No named callers at all (the single-tenant set-up): bare digests are the usual thing.
    let (_, warnings) = build(&format!("{bare}\n"), &|s| s.callers.clear());
    assert!(!implicit(&warnings), "{warnings:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_caller_configs_stop_start_up_naming_the_key() {
    let metrics = drbgd::metrics::Metrics::new(Arc::default());
    let build = |edit: &dyn Fn(&mut Settings)| {
        let mut s = example();
        edit(&mut s);
        drbgd::callers::Registry::build(&s, &metrics, None).map(|(_, warnings)| warnings)
    };
    let err = |edit: &dyn Fn(&mut Settings)| format!("{:#}", build(edit).unwrap_err());
    let e = err(&|s| s.callers.get_mut("web").unwrap().key_sha256 = s.callers["batch"].key_sha256.clone());
    assert!(e.contains("callers.web.key_sha256") && e.contains("batch"), "{e}");
    let e = err(&|s| s.callers.get_mut("web").unwrap().key_sha256 = vec!["abc".into()]);
    assert!(e.contains("callers.web.key_sha256"), "{e}");
    let e = err(&|s| s.callers.get_mut("web").unwrap().identities = vec!["web".into()]);
    assert!(e.contains("callers.web.identities"), "{e}");
    // The same credential twice in one caller: an error naming it, not a panic.
    let e = err(&|s| s.callers.get_mut("web").unwrap().identities = vec!["cn:web".into(), "cn:web".into()]);
    assert!(e.contains("callers.web.identities") && e.contains("twice"), "{e}");
    let e = err(&|s| {
        let web = s.callers.get_mut("web").unwrap();
        web.key_sha256.push(web.key_sha256[0].to_uppercase());
    });
    assert!(e.contains("callers.web.key_sha256") && e.contains("twice"), "{e}");
    // Credentials with auth off are not checked: said at start-up.
    let warnings = build(&|s| s.auth.enabled = false).unwrap();
    assert!(warnings.iter().any(|w| w.contains("auth.enabled is false")), "{warnings:?}");
    let e = err(&|s| {
        let web = s.callers.remove("web").unwrap();
        s.callers.insert("Web Tier".into(), web);
    });
    assert!(e.contains("callers.Web Tier"), "{e}");
    let e = err(&|s| s.drbg.enabled = vec![drbgd::drbg::Algorithm::Aes256Ctr]);
    assert!(e.contains("callers.web.policy.algs"), "{e}");
    // Wider than the server: clamped, with a warning naming the key.
    let warnings = build(&|s| s.limits.max_bits = 1000).unwrap();
    assert!(warnings.iter().any(|w| w.contains("callers.web.policy.max_bits")), "{warnings:?}");
    // Larger than its byte bucket: clamped too, so no request can put it in hours of debt.
    let warnings = build(&|s| {
        let q = &mut s.callers.get_mut("batch").unwrap().quota;
        (q.bytes_per_second, q.bytes_burst) = (1000, 2000);
    })
    .unwrap();
    assert!(
        warnings.iter().any(|w| w.contains("callers.batch.policy.max_bits") && w.contains("16000")),
        "{warnings:?}"
    );
    // Unknown keys and wrong types, named by the loader.
    let dir = std::env::temp_dir().join(format!("drbgd-badcallers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (text, key) in [
        ("[callers.web.policy]\nalgs = [\"rc4\"]\n", "callers.web.policy.algs"),
        ("[callers.web.policy]\nroutes = [\"/admin\"]\n", "callers.web.policy.routes"),
        ("[callers.web.quota]\nrequests_per_second = -1\n", "callers.web.quota.requests_per_second"),
        ("[callers.web]\nkey = \"x\"\n", "key"),
    ] {
        let file = dir.join("bad.toml");
        std::fs::write(&file, text).unwrap();
        let e = Settings::load(Some(&file), on_free_ports()).unwrap_err().to_string();
        assert!(e.contains(key), "{text}: {e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGHUP on the real binary: a valid edit applies to the next request, an invalid one is
/// refused and counted, and the process keeps serving under the callers in force.
#[tokio::test]
async fn sighup_reloads_the_callers_of_the_real_binary() {
    let dir = std::env::temp_dir().join(format!("drbgd-sighup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("callers.toml");
    // No polling: only the signal reloads.
    let no_poll = |t: String| format!("{t}\n[server]\nreload_interval_ms = 0\n");
    write_config(&file, no_poll);
    let Binary { mut child, mut lines, api, admin, .. } =
        spawn_binary(&["--config", file.to_str().unwrap()]).await;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let client = reqwest::Client::new();
    let aes = || client.get(format!("http://{api}/bits?n=64&alg=aes")).bearer_auth("web-example-key").send();
    let hangup = || {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGHUP) };
    };
    let reloads = |result: &'static str| {
        let url = format!("http://{admin}/metrics");
        let client = client.clone();
        async move {
            let text = client.get(url).send().await.unwrap().text().await.unwrap();
            let series = format!("drbgd_reloads_total{{result=\"{result}\",what=\"callers\"}} ");
            text.lines().find_map(|l| l.strip_prefix(&series)).map_or(0, |v| v.parse::<u64>().unwrap())
        }
    };
    assert_eq!(aes().await.unwrap().status(), 403);
    write_config(&file, |t| no_poll(t.replace("algs = [\"chacha20\"]", "algs = [\"chacha20\", \"aes\"]")));
    hangup();
    let mut waited = 0;
    while reloads("ok").await == 0 && waited < 100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert_eq!(aes().await.unwrap().status(), 200, "the reloaded policy applies");
    std::fs::write(&file, "[callers.web.policy]\nalgs = [\"rc4\"]\n").unwrap();
    hangup();
    waited = 0;
    while reloads("error").await == 0 && waited < 100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert_eq!(reloads("error").await, 1);
    assert_eq!(aes().await.unwrap().status(), 200, "the callers in force stay after a bad file");
    assert!(child.try_wait().unwrap().is_none(), "SIGHUP never stops the process");
    std::fs::remove_dir_all(&dir).ok();
}

/// An edit of the config file itself is picked up by the watcher (server.reload_interval_ms),
/// no SIGHUP and no explicit reload: a complete edit written in two steps (as an editor or a
/// `cp` may) is loaded once stable, the half-written file never.
#[tokio::test]
async fn the_watcher_applies_an_edit_of_the_config_file() {
    let dir = temp_dir("watch");
    let file = dir.join("callers.toml");
    let polled = |t: String| format!("{t}\n[server]\nreload_interval_ms = 100\n");
    write_config(&file, polled);
    let source = ConfigSource { file: Some(file.clone()), overrides: on_free_ports() };
    let settings = source.load().unwrap();
    assert_eq!(settings.server.reload_interval_ms, 100);
    let app = drbgd::app::App::build(settings).await.unwrap().with_config_source(source);
    let test = crate::helpers::run(app);
    let aes = || get(&test, "web-example-key", "/bits?n=256&alg=aes256ctr");
    let reloads = |result: &'static str| {
        let url = format!("{}/metrics", test.admin);
        let client = test.client.clone();
        async move {
            let text = client.get(url).send().await.unwrap().text().await.unwrap();
            let series = format!("drbgd_reloads_total{{result=\"{result}\",what=\"callers\"}} ");
            text.lines().find_map(|l| l.strip_prefix(&series)).map_or(0, |v| v.parse::<u64>().unwrap())
        }
    };
    assert_problem(aes().await, 403, "alg_not_allowed").await;

    let edited = polled(std::fs::read_to_string(EXAMPLE).unwrap())
        .replace("algs = [\"chacha20\"]", "algs = [\"chacha20\", \"aes\"]");
    // The first half alone would not validate (or would drop web); it is replaced at once.
    std::fs::write(&file, &edited[..edited.len() / 2]).unwrap();
    std::fs::write(&file, &edited).unwrap();
    let mut applied = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r = aes().await;
        match r.status().as_u16() {
            200 => {
                applied = true;
                break;
            }
            403 => {}
            other => panic!("unexpected {other} while waiting for the reload"),
        }
    }
    assert!(applied, "the edited file was not applied within 5 s");
    assert_eq!(reloads("ok").await, 1);
    assert_eq!(reloads("error").await, 0, "the half-written file was loaded");
    let usage: serde_json::Value = get(&test, "web-example-key", "/usage").await.json().await.unwrap();
    assert_eq!(usage["policy"]["algs"], serde_json::json!(["chacha20", "aes256ctr"]), "{usage}");
    // Nothing more changes: no more reloads.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(reloads("ok").await, 1);
    std::fs::remove_dir_all(&dir).ok();
}
