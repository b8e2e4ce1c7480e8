//! `[tracing]`: OpenTelemetry traces, exported over OTLP. Off unless `otlp_endpoint` (or the
//! standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`) names a
//! collector.

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// `[tracing]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TracingSettings {
    /// The collector: `http://host:4317` (gRPC) or `http://host:4318` (HTTP/protobuf, to which
    /// `/v1/traces` is added when the URL has no path). Plain OTLP only: no TLS client is built
    /// in (an `https://` URL is refused). Empty: the standard `OTEL_EXPORTER_OTLP_*`
    /// variables, and without those no traces.
    pub otlp_endpoint: String,
    /// `grpc` or `http/protobuf`; empty: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` /
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, else `grpc`.
    pub otlp_protocol: String,
    /// Fraction of new traces sampled, 0 to 1; a request that continues a trace follows its
    /// parent's sampling decision.
    pub sample_ratio: f64,
    /// Finished spans waiting for export at most; past it spans are dropped and counted
    /// (`drbgd_trace_spans_total{outcome="dropped"}`), never waited for.
    pub queue_spans: usize,
    /// Spans are exported at least this often (and whenever 512 are waiting).
    pub export_interval_ms: u64,
    /// Deadline of one export call.
    pub export_timeout_ms: u64,
    /// Answer a `traceresponse` header (W3C Trace Context Level 2 editor's draft) naming the
    /// server span. Off by default.
    pub traceresponse: bool,
}

/// `tracing.otlp_protocol`, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// OTLP over gRPC (port 4317 by convention).
    Grpc,
    /// OTLP over HTTP with protobuf bodies (port 4318).
    HttpProtobuf,
}

impl OtlpProtocol {
    /// Parses a protocol name as the OpenTelemetry variables spell it.
    ///
    /// # Errors
    /// Any other name (`http/json` among them: not built in).
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "grpc" => Ok(OtlpProtocol::Grpc),
            "http/protobuf" => Ok(OtlpProtocol::HttpProtobuf),
            other => Err(format!("{other:?} is not grpc or http/protobuf")),
        }
    }
}

impl TracingSettings {
    /// The collector's URL from this section or the standard variables (read from `env`),
    /// `None` when traces are off (also with `OTEL_SDK_DISABLED=true`).
    pub fn endpoint(&self, env: impl Fn(&str) -> Option<String>) -> Option<String> {
        if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return None;
        }
        let given = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
        given(Some(self.otlp_endpoint.clone()))
            .or_else(|| given(env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")))
            .or_else(|| given(env("OTEL_EXPORTER_OTLP_ENDPOINT")))
    }

    /// The protocol from this section or the standard variables, else gRPC.
    ///
    /// # Errors
    /// A name that is not `grpc` or `http/protobuf`, with where it came from.
    pub fn protocol(&self, env: impl Fn(&str) -> Option<String>) -> Result<OtlpProtocol, ConfigError> {
        let from = |key: &'static str, value: String| {
            OtlpProtocol::parse(value.trim()).map_err(|reason| ConfigError::Invalid { key, reason })
        };
        if !self.otlp_protocol.is_empty() {
            return from("tracing.otlp_protocol", self.otlp_protocol.clone());
        }
        for key in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let Some(value) = env(key).filter(|v| !v.trim().is_empty()) {
                return from(key, value);
            }
        }
        Ok(OtlpProtocol::Grpc)
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let invalid =
            |key: &'static str, reason: &str| Err(ConfigError::Invalid { key, reason: reason.into() });
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return invalid("tracing.sample_ratio", "must be between 0 and 1");
        }
        if !(1..=1 << 20).contains(&self.queue_spans) {
            return invalid("tracing.queue_spans", "must be in 1..=1048576");
        }
        if !(10..=60_000).contains(&self.export_interval_ms) {
            return invalid("tracing.export_interval_ms", "must be in 10..=60000");
        }
        if !(100..=60_000).contains(&self.export_timeout_ms) {
            return invalid("tracing.export_timeout_ms", "must be in 100..=60000");
        }
        let endpoint = self.otlp_endpoint.trim();
        if endpoint.get(..8).is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://")) {
            return invalid(
                "tracing.otlp_endpoint",
                "TLS to the collector is not built in: send plain OTLP to a collector on the node or in the pod (http://)",
            );
        }
        if !(endpoint.is_empty()
            || endpoint.get(..7).is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://")))
        {
            return invalid("tracing.otlp_endpoint", "must be an http:// URL, or empty");
        }
        if !self.otlp_protocol.is_empty()
            && let Err(why) = OtlpProtocol::parse(&self.otlp_protocol)
        {
            return invalid("tracing.otlp_protocol", &why);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(endpoint: &str, protocol: &str) -> TracingSettings {
        TracingSettings {
            otlp_endpoint: endpoint.into(),
            otlp_protocol: protocol.into(),
            sample_ratio: 1.0,
            queue_spans: 2048,
            export_interval_ms: 1000,
            export_timeout_ms: 5000,
            traceresponse: false,
        }
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn off_unless_an_endpoint_is_named() {
        assert_eq!(settings("", "").endpoint(env(&[])), None);
        let on = settings("http://c:4317", "");
        assert_eq!(on.endpoint(env(&[])).as_deref(), Some("http://c:4317"));
        let from_env = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4317")]);
        assert_eq!(settings("", "").endpoint(&from_env).as_deref(), Some("http://a:4317"));
        let both = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t"),
        ]);
        assert_eq!(settings("", "").endpoint(&both).as_deref(), Some("http://t"));
        let disabled = env(&[("OTEL_SDK_DISABLED", "TRUE")]);
        assert_eq!(on.endpoint(&disabled), None);
    }

    #[test]
    fn protocol_from_the_section_then_the_variables() {
        assert_eq!(settings("", "").protocol(env(&[])).unwrap(), OtlpProtocol::Grpc);
        let http = env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]);
        assert_eq!(settings("", "").protocol(&http).unwrap(), OtlpProtocol::HttpProtobuf);
        assert_eq!(settings("", "grpc").protocol(&http).unwrap(), OtlpProtocol::Grpc);
        let json = env(&[("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")]);
        let err = settings("", "").protocol(&json).unwrap_err().to_string();
        assert!(err.contains("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), "{err}");
    }

    #[test]
    fn bad_values_name_their_key() {
        let mut s = settings("", "");
        s.sample_ratio = 1.5;
        assert!(s.validate().unwrap_err().to_string().contains("tracing.sample_ratio"));
        let s = settings("collector:4317", "");
        assert!(s.validate().unwrap_err().to_string().contains("tracing.otlp_endpoint"));
        let s = settings("https://collector:4317", "");
        assert!(s.validate().unwrap_err().to_string().contains("TLS to the collector is not built in"));
        let s = settings("", "http/json");
        assert!(s.validate().unwrap_err().to_string().contains("tracing.otlp_protocol"));
        settings("http://c:4318", "http/protobuf").validate().unwrap();
    }
}
