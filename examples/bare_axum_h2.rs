//! The baseline of `.ci/h2spec.sh`: the same bare axum router as `bare_axum`, served by
//! hyper-util's auto builder (HTTP/1.1 and HTTP/2 with prior knowledge, as drbgd serves), with
//! hyper's defaults. What h2spec finds here and not in drbgd is hyper's; what it finds in drbgd
//! and not here is drbgd's own connection code.
//!
//! `cargo run --release --example bare_axum_h2 -- 127.0.0.1:9000`

use axum::Router;
use axum::routing::get;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:9000".into());
    // POST reads the whole body before answering, as drbgd's `POST /bits` does: h2spec's
    // checks of what a client sends after its headers then meet an open stream on both.
    let app = Router::new().route("/", get(|| async { "bare" }).post(|_body: bytes::Bytes| async { "bare" }));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _ = Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(stream), service).await;
        });
    }
}
