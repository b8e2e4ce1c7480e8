//! Reloading callers: of two reloads at once the later read wins, and a keys file that
//! disappears revokes its keys.

use std::sync::Arc;
use std::time::Duration;

use drbgd::callers::{Callers, Registry};
use drbgd::config::Settings;
use drbgd::metrics::Metrics;
use sha2::{Digest, Sha256};

fn digest(key: &str) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(key.as_bytes()))
}

/// Auth on, one caller `web` with one key.
fn with_key(key: &str) -> Settings {
    let mut s = Settings::defaults();
    s.auth.enabled = true;
    let caller =
        drbgd::config::callers::CallerSettings { key_sha256: vec![digest(key)], ..Default::default() };
    s.callers.insert("web".into(), caller);
    s
}

fn admits(callers: &Callers, key: &str) -> bool {
    callers.admit(Some(drbgd::callers::Key::Bearer(format!("Bearer {key}").as_bytes())), None, None).is_ok()
}

#[test]
fn a_reload_that_read_earlier_never_replaces_one_that_read_later() {
    let callers =
        Arc::new(Callers::from_settings(&with_key("k0"), Arc::new(Metrics::new(Arc::default()))).unwrap());
    // Reload A reads the file as it was (key k1), then is slow to finish.
    let (reading, read) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let a = {
        let callers = callers.clone();
        std::thread::spawn(move || {
            callers
                .reload_from(|| {
                    reading.send(()).unwrap();
                    released.recv().unwrap();
                    Ok(with_key("k1"))
                })
                .unwrap();
        })
    };
    read.recv().unwrap();
    // Meanwhile the file changes (key k2) and reload B starts: it must wait for A, not put
    // its registry in force first only to have A's older one replace it.
    let (done, finished) = std::sync::mpsc::channel();
    let b = {
        let callers = callers.clone();
        std::thread::spawn(move || {
            callers.reload_from(|| Ok(with_key("k2"))).unwrap();
            done.send(()).unwrap();
        })
    };
    assert!(
        finished.recv_timeout(Duration::from_millis(200)).is_err(),
        "B waits for A's read to be in force"
    );
    release.send(()).unwrap();
    a.join().unwrap();
    b.join().unwrap();
    assert!(admits(&callers, "k2") && !admits(&callers, "k1") && !admits(&callers, "k0"));
}

#[test]
fn a_keys_file_that_disappears_or_turns_unreadable_revokes_its_keys_until_it_is_back() {
    let dir = std::env::temp_dir().join(format!("drbgd-keysfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("api_keys");
    std::fs::write(&keys, format!("web {}\n", digest("from-file"))).unwrap();
    let mut settings = with_key("from-config");
    settings.auth.api_keys_file = Some(keys.clone());
    let metrics = Arc::new(Metrics::new(Arc::default()));
    let callers = Callers::from_settings(&settings, metrics.clone()).unwrap();
    assert!(admits(&callers, "from-file") && admits(&callers, "from-config"));

    std::fs::remove_file(&keys).unwrap();
    callers.reload(&settings).expect("a reload without the file succeeds");
    assert!(!admits(&callers, "from-file"), "the file's keys are revoked");
    assert!(admits(&callers, "from-config"), "the config's keys stay");
    let (_, warnings) = Registry::build(&settings, &metrics, Some(&callers.registry())).unwrap();
    assert!(warnings.iter().any(|w| w.contains("cannot be read") && w.contains("revoked")), "{warnings:?}");
    // At start-up a missing file is an error, not an empty one.
    assert!(Registry::build(&settings, &metrics, None).is_err());

    std::fs::write(&keys, format!("web {}\n", digest("from-file"))).unwrap();
    callers.reload(&settings).unwrap();
    assert!(admits(&callers, "from-file"));
    // Unreadable (here: not UTF-8) is no better than gone: revoked, not kept.
    std::fs::write(&keys, b"web \xff\xfe\n").unwrap();
    callers.reload(&settings).expect("a reload with an unreadable file succeeds");
    assert!(!admits(&callers, "from-file") && admits(&callers, "from-config"));
    std::fs::remove_dir_all(&dir).unwrap();
}
