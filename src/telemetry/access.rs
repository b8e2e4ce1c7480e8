//! The access line's data and target: what [`super::plain`] writes and the rest of
//! `telemetry` logs ([`super::Access::log`]). It names nothing of `telemetry`.

/// The tracing target of access lines.
pub const ACCESS_TARGET: &str = "drbgd::access";

/// One access line: one per API request, what was asked and what came of it, never the
/// output, a key or the query's other values. Written on [`ACCESS_TARGET`] at INFO.
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    /// The request id (`X-Request-Id`).
    pub request_id: &'a str,
    /// The OpenTelemetry trace id (32 hex digits), empty with traces off (the field is then
    /// left out of the line).
    pub trace_id: &'a str,
    /// The caller's name (empty when the request never reached admission).
    pub caller: &'a str,
    /// The HTTP method.
    pub method: &'a str,
    /// The route template (`unmatched` for none). One of ours: written without escaping.
    pub route: &'static str,
    /// The algorithm that served (`none` when nothing was generated). One of ours: written without escaping.
    pub alg: &'static str,
    /// Random bits served.
    pub n: u64,
    /// The HTTP status.
    pub status: u16,
    /// The error's machine code, empty on success. One of ours: written without escaping.
    pub code: &'static str,
    /// Time to the response's headers, in microseconds.
    pub latency_us: u64,
}
