//! Arbitrary bytes from a client to one connection of the API port (HTTP/1.1, or HTTP/2 when
//! they start with its preface), as h2's `fuzz_e2e` feeds its server: the connection loop, the
//! deadlines, hyper and h2 under drbgd's settings, and everything behind them. The clock is
//! paused, so the connection's deadlines pass at once once the input is spent. No panic; the
//! connection ends within its deadlines even when the client keeps its side open or stops
//! reading; and every caller's in-flight place is given back.
//!
//! Input: a flags byte (bit 0: keep the write side open after the input; bit 1: stop reading
//! after the first read), then the client's bytes.
// libFuzzer's main; built as a test (`cargo test --all-targets`), libtest's, with no tests.
#![cfg_attr(not(test), no_main)]

use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, data)) = data.split_first() else { return };
    let (keep_open, stop_reading) = (flags & 1 != 0, flags & 2 != 0);
    let api = drbgd_fuzz::api();
    let options = drbgd::server::ServeOptions::of(&api.settings.server);
    let data = data.to_vec();
    api.rt.block_on(async {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let mut connection =
            tokio::spawn(drbgd::server::serve_connection(server, api.service.clone(), options));
        let (mut read, mut write) = tokio::io::split(client);
        let send = async move {
            let _ = write.write_all(&data).await;
            if !keep_open {
                let _ = write.shutdown().await;
            }
            write
        };
        let receive = async move {
            let mut sink = [0u8; 16 * 1024];
            while matches!(read.read(&mut sink).await, Ok(n) if n > 0) {
                if stop_reading {
                    // Hold the socket, read nothing more.
                    std::future::pending::<()>().await;
                }
            }
        };
        let client = tokio::spawn(async move { tokio::join!(send, receive) });
        // In the paused clock: the longest a connection may last here is its age (an hour,
        // also a public stream's lifetime) and the drain grace after it, under this.
        let ended = tokio::time::timeout(std::time::Duration::from_secs(2 * 3600), &mut connection).await;
        client.abort();
        let _ = client.await;
        match ended {
            Ok(result) => result.expect("the connection task does not panic"),
            Err(_) => panic!("the connection outlived every deadline (flags {flags:#x})"),
        }
        for _ in 0..16 {
            tokio::task::yield_now().await;
        }
        for caller in api.state.callers.registry().callers() {
            assert_eq!(caller.quota_state().in_flight(), 0, "{} holds a place", caller.name());
        }
    });
});
