//! Arbitrary bytes from a client to one connection of the API port (HTTP/1.1, or HTTP/2 when
//! they start with its preface), as h2's `fuzz_e2e` feeds its server: the connection loop, the
//! deadlines, hyper and h2 under drbgd's settings, and everything behind them. The clock is
//! paused, so the connection's deadlines pass at once once the input is spent. No panic, and
//! the connection ends.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fuzz_target!(|data: &[u8]| {
    let api = drbgd_fuzz::api();
    let options = drbgd::server::ServeOptions::of(&api.settings.server);
    api.rt.block_on(async {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let connection = tokio::spawn(drbgd::server::serve_connection(server, api.service.clone(), options));
        let (mut read, mut write) = tokio::io::split(&mut client);
        let send = async {
            let _ = write.write_all(data).await;
            let _ = write.shutdown().await;
        };
        let receive = async {
            let mut sink = [0u8; 16 * 1024];
            while matches!(read.read(&mut sink).await, Ok(n) if n > 0) {}
        };
        // Bounded in the paused clock: every deadline of the connection is far shorter.
        let done = tokio::time::timeout(std::time::Duration::from_secs(24 * 3600), async {
            tokio::join!(send, receive);
        });
        let _ = done.await;
        drop(client);
        connection.await.expect("the connection task does not panic");
    });
});
