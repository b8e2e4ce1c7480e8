//! A listener's options and phase: the connection limits and deadlines `[server]` configures,
//! and the fixed HTTP/2 settings.

use std::time::Duration;

/// HTTP/2 keep-alive: a ping after this much silence...
pub(super) const H2_PING_INTERVAL: Duration = Duration::from_secs(30);
/// ...must be answered within this, or the connection (and its permit) is dropped: a vanished
/// peer cannot hold a connection slot, or the drain, for ever.
pub(super) const H2_PING_TIMEOUT: Duration = Duration::from_secs(10);

/// HTTP/2 receive window of one stream: the protocol's default (request bodies here are a
/// few KiB at most; hyper's default is 1 MiB).
pub(super) const H2_STREAM_WINDOW: u32 = 65_535;
/// HTTP/2 receive window of a connection, all its streams together (hyper's default is 1 MiB).
pub(super) const H2_CONNECTION_WINDOW: u32 = 256 * 1024;

/// Bytes one HTTP/2 stream may have queued for sending (hyper's default is 400 KiB): a
/// streamed body is asked for its next chunk only below it, so one fast stream holds at most
/// this and one chunk of the stream budget (`limits.stream_buffer_bytes`), and many streams
/// share the budget evenly.
pub(super) const H2_SEND_BUFFER: usize = 64 * 1024;

/// How long a connection that has not yet sent a request is given at [`Phase::Stopped`].
pub(super) const FIRST_REQUEST_GRACE: Duration = Duration::from_millis(500);

/// Where a listener is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Accepting and serving.
    Serving,
    /// Shutdown delay: still accepting, but asking every connection to move elsewhere.
    Draining,
    /// Not accepting; connections finish within the drain deadline.
    Stopped,
}

/// Connection limits and deadlines.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// Open connections at once; accepting pauses at the limit.
    pub max_connections: usize,
    /// Time to receive a request's headers (HTTP/1): a connection that neither starts a
    /// request nor sends a response for this long (up to twice as long) is closed.
    pub header_read_timeout: Duration,
    /// Time in-flight requests get once the phase is [`Phase::Stopped`].
    pub drain_timeout: Duration,
    /// Connections older than this (±10 %, so clients do not reconnect in step) are asked to
    /// close: HTTP/2 GOAWAY, HTTP/1 `Connection: close` on the next response. Those still open
    /// `drain_timeout` later are closed. `None`: never.
    pub max_connection_age: Option<Duration>,
    /// A response body that makes no progress for this long has its connection dropped.
    pub write_timeout: Duration,
    /// An HTTP/2 connection with no open stream for this long is closed.
    pub http2_idle_timeout: Duration,
    /// Streams open at once on one HTTP/2 connection.
    pub http2_max_concurrent_streams: u32,
}

impl ServeOptions {
    /// The options `[server]` configures for the API listener.
    pub fn of(s: &crate::config::ServerSettings) -> Self {
        let ms = Duration::from_millis;
        ServeOptions {
            max_connections: s.max_connections,
            header_read_timeout: ms(s.header_read_timeout_ms),
            drain_timeout: ms(s.drain_timeout_ms),
            max_connection_age: (s.max_connection_age_ms > 0).then(|| ms(s.max_connection_age_ms)),
            write_timeout: ms(s.write_timeout_ms),
            http2_idle_timeout: ms(s.http2_idle_timeout_ms),
            http2_max_concurrent_streams: s.http2_max_concurrent_streams,
        }
    }
}
