//! Arbitrary protobuf messages to every gRPC method (randomness, health, reflection), framed
//! as gRPC frames and sent through the API's call pipeline with a valid key: decoding, the
//! wire enums and numbers into typed requests, the service. No panic, and no `INTERNAL` of
//! drbgd's own (a caught panic, a wiring fault); tonic's for a truncated frame is the gRPC
//! answer to a broken message.
//!
//! Input: a method byte, a flags byte (bit 0: no key; bit 1: announce a length other than the
//! message's), then the message.
// libFuzzer's main; built as a test (`cargo test --all-targets`), libtest's, with no tests.
#![cfg_attr(not(test), no_main)]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

const METHODS: [&str; 11] = [
    "/drbgd.v1.RandomnessService/GetBits",
    "/drbgd.v1.RandomnessService/GetBytes",
    "/drbgd.v1.RandomnessService/StreamBits",
    "/drbgd.v1.RandomnessService/GetToken",
    "/drbgd.v1.RandomnessService/GetNonce",
    "/drbgd.v1.RandomnessService/GetUuids",
    "/drbgd.v1.RandomnessService/GetInts",
    "/drbgd.v1.RandomnessService/GetUsage",
    "/grpc.health.v1.Health/Check",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

fuzz_target!(|data: &[u8]| {
    let [method, flags, message @ ..] = data else { return };
    let mut frame = vec![0u8];
    let announced = if flags & 2 != 0 { u32::from(*flags) << 4 } else { message.len() as u32 };
    frame.extend_from_slice(&announced.to_be_bytes());
    frame.extend_from_slice(message);
    let mut request = http::Request::post(METHODS[usize::from(*method) % METHODS.len()])
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if flags & 1 == 0 {
        request = request.header("authorization", format!("Bearer {}", drbgd_fuzz::BATCH_KEY));
    }
    let request = request.body(http_body_util::Full::new(Bytes::from(frame))).unwrap();
    let response = drbgd_fuzz::call(request, 1 << 20);
    let header = |name: &str| response.headers().get(name).map(|v| v.as_bytes().to_vec()).unwrap_or_default();
    let ours = header("grpc-message").starts_with(b"internal");
    assert!(!(header("grpc-status") == b"13" && ours), "INTERNAL of drbgd's: a panic or a wiring fault");
});
