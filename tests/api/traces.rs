//! OpenTelemetry traces, wire level: the real binary exports to an in-process OTLP receiver
//! (the collector's gRPC service from `opentelemetry-proto`, or its HTTP/protobuf route), and
//! the spans are read back as a collector would see them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient;
use drbgd::grpc::pb::{GetTokenRequest, StreamBitsRequest};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;

use crate::helpers::{Binary, spawn_binary_with_env};

/// A span as received, with its resource's attributes.
type Arrived = (Span, HashMap<String, String>);

/// Every span received.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Arrived>>>);

impl Received {
    fn take(&self, request: ExportTraceServiceRequest) {
        let mut all = self.0.lock().unwrap();
        for resource_spans in request.resource_spans {
            let resource = resource_spans.resource.map(|r| attributes(&r.attributes)).unwrap_or_default();
            for scope in resource_spans.scope_spans {
                all.extend(scope.spans.into_iter().map(|s| (s, resource.clone())));
            }
        }
    }

    fn spans(&self) -> Vec<Arrived> {
        self.0.lock().unwrap().clone()
    }

    /// Waits (up to 20 s) until a span of `trace` named `name` has arrived.
    async fn wait_for(&self, trace: &[u8], name: &str) -> Span {
        for _ in 0..400 {
            if let Some((span, _)) =
                self.spans().into_iter().find(|(s, _)| s.trace_id == trace && s.name == name)
            {
                return span;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no span {name:?} of trace {} arrived: {:?}", hex(trace), self.names());
    }

    fn names(&self) -> Vec<String> {
        self.spans().iter().map(|(s, _)| format!("{} {}", s.name, hex(&s.trace_id))).collect()
    }
}

#[tonic::async_trait]
impl TraceService for Received {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.take(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

/// An OTLP/gRPC receiver on a port of its own: its URL and what it receives.
async fn grpc_receiver() -> (String, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received = Received::default();
    let service = TraceServiceServer::new(received.clone());
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    (url, received)
}

/// An OTLP/HTTP receiver (protobuf bodies on `/v1/traces`): its base URL and what it receives.
async fn http_receiver() -> (String, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received = Received::default();
    let sink = received.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let sink = sink.clone();
            async move {
                sink.take(ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf body"));
                (
                    [("content-type", "application/x-protobuf")],
                    ExportTraceServiceResponse::default().encode_to_vec(),
                )
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

fn attributes(list: &[opentelemetry_proto::tonic::common::v1::KeyValue]) -> HashMap<String, String> {
    list.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.clone()) {
                Some(Value::StringValue(s)) => s,
                Some(Value::IntValue(i)) => i.to_string(),
                Some(Value::BoolValue(b)) => b.to_string(),
                Some(Value::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Reads the binary's stderr until a line containing `needle` (up to 10 s).
async fn line_with(binary: &mut Binary, needle: &str) -> String {
    loop {
        let line = tokio::time::timeout(Duration::from_secs(10), binary.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no line with {needle:?} within 10 s"))
            .unwrap()
            .unwrap_or_else(|| panic!("stderr ended before a line with {needle:?}"));
        if line.contains(needle) {
            return line;
        }
    }
}

/// The children of `parent` in `trace`, by name.
fn children(received: &Received, trace: &[u8], parent: &Span) -> Vec<Span> {
    received
        .spans()
        .into_iter()
        .map(|(s, _)| s)
        .filter(|s| s.trace_id == trace && s.parent_span_id == parent.span_id)
        .collect()
}

const TRACE_REST: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_REST: &str = "00f067aa0ba902b7";
const TRACE_PR: &str = "5e2d3c1b0a99887766554433221100ff";
const TRACE_STREAM: &str = "6a7b8c9d0e1f20314253647586970a1b";
const TRACE_GRPC_STREAM: &str = "7c8d9e0f1a2b3c4d5e6f708192a3b4c5";
const TRACE_GRPC: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT_GRPC: &str = "b7ad6b7169203331";

#[tokio::test(flavor = "multi_thread")]
async fn rest_and_grpc_requests_continue_the_callers_trace() {
    let (collector, received) = grpc_receiver().await;
    let env =
        [("DRBGD__TRACING__OTLP_ENDPOINT", collector.as_str()), ("DRBGD__TRACING__EXPORT_INTERVAL_MS", "50")];
    let mut binary = spawn_binary_with_env(&[], &env).await;
    assert!(binary.log.iter().any(|l| l.contains("traces on")), "{:?}", binary.log);

    // REST, continuing a sampled trace with vendor state.
    let client = reqwest::Client::new();
    let response = client
        .get(format!("http://{}/token", binary.api))
        .header("traceparent", format!("00-{TRACE_REST}-{PARENT_REST}-01"))
        .header("tracestate", "vendor=opaque")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("traceresponse").is_none(), "off by default");
    let token = response.text().await.unwrap().trim().to_owned();
    assert!(token.len() >= 32, "{token}");
    let access = line_with(&mut binary, "route=\"/token\"").await;
    assert!(access.contains(&format!("trace_id=\"{TRACE_REST}\"")), "{access}");

    // gRPC, the same over HTTP/2 metadata.
    let mut grpc = RandomnessServiceClient::connect(format!("http://{}", binary.api)).await.unwrap();
    let mut request = tonic::Request::new(GetTokenRequest::default());
    request
        .metadata_mut()
        .insert("traceparent", format!("00-{TRACE_GRPC}-{PARENT_GRPC}-01").parse().unwrap());
    grpc.get_token(request).await.expect("GetToken");

    // A reseed on the request's path (prediction resistance) shows inside its generation.
    let response = client
        .get(format!("http://{}/bits?n=256&pr=true", binary.api))
        .header("traceparent", format!("00-{TRACE_PR}-{PARENT_REST}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
    let access = line_with(&mut binary, "route=\"/bits\"").await;
    assert!(access.contains(TRACE_PR), "{access}");

    // Streams: every chunk is generated inside the request's span (none becomes a trace of
    // its own), and a gRPC stream's end is recorded on its span.
    let response = client
        .get(format!("http://{}/bits?n=4000000&format=binary", binary.api))
        .header("traceparent", format!("00-{TRACE_STREAM}-{PARENT_REST}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.bytes().await.unwrap().len(), 500_000);
    let access = line_with(&mut binary, "route=\"/bits\"").await;
    assert!(access.contains(TRACE_STREAM), "{access}");
    let mut request =
        tonic::Request::new(StreamBitsRequest { n: 1_000_000, chunk_bytes: 4096, ..Default::default() });
    request
        .metadata_mut()
        .insert("traceparent", format!("00-{TRACE_GRPC_STREAM}-{PARENT_GRPC}-01").parse().unwrap());
    let mut stream = grpc.stream_bits(request).await.unwrap().into_inner();
    let mut chunks = 0;
    while stream.message().await.unwrap().is_some() {
        chunks += 1;
    }
    assert!(chunks > 1);

    // A request that names no trace starts one.
    let response = client.get(format!("http://{}/bits?n=256", binary.api)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let access = line_with(&mut binary, "route=\"/bits\"").await;
    let fresh = access.split("trace_id=\"").nth(1).expect("a trace id in the access line")[..32].to_owned();

    let rest = received.wait_for(&unhex(TRACE_REST), "/token").await;
    assert_eq!(rest.kind, SpanKind::Server as i32);
    assert_eq!(hex(&rest.parent_span_id), PARENT_REST, "the caller's span is the parent");
    assert_eq!(rest.trace_state, "vendor=opaque");
    let attrs = attributes(&rest.attributes);
    assert_eq!(attrs["http.request.method"], "GET");
    assert_eq!(attrs["http.route"], "/token");
    assert_eq!(attrs["http.response.status_code"], "200");
    assert_eq!(attrs["drbgd.alg"], "chacha20");
    assert_eq!(attrs["drbgd.n"], "256");
    assert_eq!(attrs["drbgd.outcome"], "ok");
    let names = |spans: Vec<Span>| {
        let mut names: Vec<String> = spans.into_iter().map(|s| s.name).collect();
        names.sort();
        names
    };
    // Children are exported as they end, before their parent: all are there by now.
    assert_eq!(names(children(&received, &rest.trace_id, &rest)), ["admission", "encode", "generate"]);
    let generate =
        children(&received, &rest.trace_id, &rest).into_iter().find(|s| s.name == "generate").unwrap();
    assert_eq!(attributes(&generate.attributes)["drbgd.bytes"], "32");

    let call = received.wait_for(&unhex(TRACE_GRPC), "drbgd.v1.RandomnessService/GetToken").await;
    assert_eq!(hex(&call.parent_span_id), PARENT_GRPC);
    let attrs = attributes(&call.attributes);
    assert_eq!(attrs["rpc.system"], "grpc");
    assert_eq!(attrs["rpc.grpc.status_code"], "0");
    assert!(names(children(&received, &call.trace_id, &call)).contains(&"generate".to_owned()));

    let pr = received.wait_for(&unhex(TRACE_PR), "/bits").await;
    let generate = children(&received, &pr.trace_id, &pr).into_iter().find(|s| s.name == "generate").unwrap();
    let reseed = children(&received, &pr.trace_id, &generate);
    assert_eq!(reseed.len(), 1, "{reseed:?}");
    assert_eq!(reseed[0].name, "reseed");
    assert_eq!(attributes(&reseed[0].attributes)["drbgd.reason"], "prediction_resistance");

    let streamed = received.wait_for(&unhex(TRACE_STREAM), "/bits").await;
    let generated = children(&received, &streamed.trace_id, &streamed)
        .into_iter()
        .filter(|s| s.name == "generate")
        .count();
    assert!(generated >= 10, "500,000 bytes in 48 KiB chunks, each generated in the span: {generated}");
    let grpc_stream =
        received.wait_for(&unhex(TRACE_GRPC_STREAM), "drbgd.v1.RandomnessService/StreamBits").await;
    let attrs = attributes(&grpc_stream.attributes);
    assert_eq!((attrs["rpc.grpc.status_code"].as_str(), attrs["drbgd.n"].as_str()), ("0", "1000000"));
    let generated = children(&received, &grpc_stream.trace_id, &grpc_stream)
        .into_iter()
        .filter(|s| s.name == "generate")
        .count();
    assert!(generated >= chunks, "{generated} generate spans for {chunks} chunks");
    // No generation ran outside a request's trace: every generate span has a parent.
    assert!(received.spans().iter().all(|(s, _)| s.name != "generate" || !s.parent_span_id.is_empty()));

    let new = received.wait_for(&unhex(&fresh), "/bits").await;
    assert!(new.parent_span_id.is_empty(), "a root span");

    // Never an output byte: the token's value is in no attribute of any span.
    for (span, resource) in received.spans() {
        assert!(attributes(&span.attributes).values().all(|v| !v.contains(&token)), "{span:?}");
        assert_eq!(resource["service.name"], "drbgd");
    }
    // Counted once the collector's answer is back, a moment after it received the spans.
    let mut counts = String::new();
    for _ in 0..100 {
        let metrics =
            reqwest::get(format!("http://{}/metrics", binary.admin)).await.unwrap().text().await.unwrap();
        counts = metrics
            .lines()
            .filter(|l| l.starts_with("drbgd_trace_spans_total"))
            .collect::<Vec<_>>()
            .join("; ");
        if counts.contains("outcome=\"exported\"}") && !counts.contains("outcome=\"exported\"} 0") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        counts.contains("outcome=\"exported\"}") && !counts.contains("outcome=\"exported\"} 0"),
        "{counts}"
    );
    assert!(
        counts.contains("outcome=\"failed\"} 0") && counts.contains("outcome=\"dropped\"} 0"),
        "{counts}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_collector_gets_the_spans_at_shutdown_and_the_traceresponse_names_them() {
    let (collector, received) = http_receiver().await;
    let env = [
        ("DRBGD__TRACING__OTLP_ENDPOINT", collector.as_str()),
        ("DRBGD__TRACING__OTLP_PROTOCOL", "http/protobuf"),
        // Nothing is exported on the timer within the test: what arrives came at shutdown.
        ("DRBGD__TRACING__EXPORT_INTERVAL_MS", "60000"),
        ("DRBGD__TRACING__TRACERESPONSE", "true"),
    ];
    let mut binary = spawn_binary_with_env(&[], &env).await;
    let response = reqwest::Client::new()
        .get(format!("http://{}/uuid", binary.api))
        .header("traceparent", format!("00-{TRACE_REST}-{PARENT_REST}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let traceresponse = response.headers()["traceresponse"].to_str().unwrap().to_owned();
    let parts: Vec<&str> = traceresponse.split('-').collect();
    assert_eq!((parts[0], parts[1], parts[3]), ("00", TRACE_REST, "01"), "{traceresponse}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(received.spans().is_empty(), "nothing before shutdown");
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(binary.child.id().unwrap() as i32, libc::SIGTERM) }, 0);
    let status = tokio::time::timeout(Duration::from_secs(20), binary.child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status:?}");
    let span = received.wait_for(&unhex(TRACE_REST), "/uuid").await;
    assert_eq!(hex(&span.span_id), parts[2], "the traceresponse names drbgd's server span");
    assert_eq!(hex(&span.parent_span_id), PARENT_REST);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_traces_off_no_exporter_runs_and_lines_carry_no_trace_id() {
    let mut binary = spawn_binary_with_env(&[], &[]).await;
    let response = reqwest::Client::new()
        .get(format!("http://{}/token", binary.api))
        .header("traceparent", format!("00-{TRACE_REST}-{PARENT_REST}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let access = line_with(&mut binary, "route=\"/token\"").await;
    assert!(!access.contains("trace_id"), "{access}");
    let pid = binary.child.id().unwrap();
    let threads: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).unwrap().trim().to_owned())
        .collect();
    assert!(!threads.iter().any(|t| t == "drbgd-traces"), "{threads:?}");
    let metrics =
        reqwest::get(format!("http://{}/metrics", binary.admin)).await.unwrap().text().await.unwrap();
    assert!(metrics.contains("drbgd_trace_spans_total{outcome=\"exported\"} 0"), "{metrics}");
}
