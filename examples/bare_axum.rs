//! The baseline of `scripts/http-bench.sh`: a bare axum 0.8 server with no middleware, on the
//! same hyper and tokio as drbgd, answering a constant 32-byte body (`/const32`) and a constant
//! 1.25 MB body (`/const1250k`, the size of 10^7 bits). What drbgd costs beyond this is the
//! cost of its stack and its generators.
//!
//! `cargo run --release --example bare_axum -- 127.0.0.1:9000`

use axum::Router;
use axum::routing::get;
use bytes::Bytes;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:9000".into());
    let small = Bytes::from_static(&[0x5a; 32]);
    let large = Bytes::from(vec![0x5a; 1_250_000]);
    let app = Router::new()
        .route("/const32", get(move || std::future::ready(small.clone())))
        .route("/const1250k", get(move || std::future::ready(large.clone())));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    axum::serve(listener, app).await
}
