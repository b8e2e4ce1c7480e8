//! What a connection did, for its deadlines: the responses in progress and the bodies under
//! way (counted by the request path), and the socket's writes that moved response data (see
//! the module documentation of [`super`]).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite};

/// What the request path knows about its connection.
#[derive(Debug, Default)]
pub(super) struct ConnState {
    /// The connection has carried an HTTP/2 request.
    pub(super) h2: AtomicBool,
    /// The connection has handed a request to the service.
    pub(super) served: AtomicBool,
    /// The connection should end: HTTP/1 responses say `Connection: close`.
    pub(super) closing: AtomicBool,
    /// Woken when the first HTTP/2 request arrives on a connection already closing, so it
    /// gets its GOAWAY then.
    pub(super) h2_seen_late: tokio::sync::Notify,
    /// Requests started, responses finished and socket writes after the first request:
    /// unchanged between two header-read checks means the connection did nothing for a whole
    /// period.
    pub(super) activity: AtomicU64,
    /// Responses not yet finished: a handler running, or a body not yet all handed to hyper.
    pub(super) open: AtomicUsize,
    /// Response bodies under way (their headers sent, their ends not yet handed to hyper).
    pub(super) bodies: AtomicUsize,
    /// Of those, the bodies waiting for their own next frame (a gRPC health `Watch` between
    /// changes): not held up by the client.
    pub(super) waiting: AtomicUsize,
    /// Body frames handed to hyper, socket writes of data and responses finished: unchanged
    /// between two checks means no response moved (see [`Quiet`]). A new request is not
    /// progress of the responses already under way.
    pub(super) progress: AtomicU64,
    /// Requests started and responses finished: unchanged between two checks means no stream
    /// opened or closed (the HTTP/2 idle deadline).
    pub(super) streams: AtomicU64,
}

/// A response in progress, from its request's call to the end (or drop) of its body: counted
/// in [`ConnState::open`], and as activity when it starts and ends.
pub(super) struct ResponseInProgress(pub(super) Arc<ConnState>);

impl ResponseInProgress {
    pub(super) fn start(state: &Arc<ConnState>) -> ResponseInProgress {
        state.open.fetch_add(1, Ordering::Relaxed);
        state.activity.fetch_add(1, Ordering::Relaxed);
        state.streams.fetch_add(1, Ordering::Relaxed);
        ResponseInProgress(state.clone())
    }
}

impl Drop for ResponseInProgress {
    fn drop(&mut self) {
        self.0.activity.fetch_add(1, Ordering::Relaxed);
        self.0.progress.fetch_add(1, Ordering::Relaxed);
        self.0.streams.fetch_add(1, Ordering::Relaxed);
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body under way, counted in [`ConnState::bodies`] (and, while it waits for its
/// own next frame, in [`ConnState::waiting`]) until dropped.
pub(super) struct BodyUnderWay {
    pub(super) state: Arc<ConnState>,
    pub(super) waiting: bool,
}

impl BodyUnderWay {
    pub(super) fn start(state: &Arc<ConnState>) -> BodyUnderWay {
        state.bodies.fetch_add(1, Ordering::Relaxed);
        BodyUnderWay { state: state.clone(), waiting: false }
    }

    /// Whether the body's last poll found its own next frame not ready.
    pub(super) fn set_waiting(&mut self, waiting: bool) {
        if waiting != self.waiting {
            self.waiting = waiting;
            match waiting {
                true => self.state.waiting.fetch_add(1, Ordering::Relaxed),
                false => self.state.waiting.fetch_sub(1, Ordering::Relaxed),
            };
        }
    }
}

impl Drop for BodyUnderWay {
    fn drop(&mut self) {
        self.set_waiting(false);
        self.state.bodies.fetch_sub(1, Ordering::Relaxed);
    }
}

pin_project! {
    /// A response body that holds its [`ResponseInProgress`] until it is all handed to hyper
    /// (or dropped).
    pub(super) struct InProgressBody<B> {
        #[pin]
        pub(super) body: B,
        pub(super) open: ResponseInProgress,
        pub(super) under_way: BodyUnderWay,
    }
}

impl<B: hyper::body::Body> hyper::body::Body for InProgressBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = this.body.poll_frame(cx);
        this.under_way.set_waiting(frame.is_pending());
        if let Poll::Ready(Some(Ok(_))) = &frame {
            this.open.0.progress.fetch_add(1, Ordering::Relaxed);
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// The connection's socket (below TLS), counting every write that moved bytes after the
/// connection's first request as activity: a response still leaving hyper's (and rustls's)
/// buffers for a slow reader is work, not idleness. Reads do not count (a trickled request head
/// must not keep a connection alive), nor do writes before any request (handshakes, HTTP/2
/// SETTINGS and PING acknowledgements must not keep a connection that never asks anything).
pub(super) struct ActivityIo<T> {
    pub(super) io: T,
    pub(super) state: Arc<ConnState>,
}

impl<T: AsyncRead + Unpin> AsyncRead for ActivityIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

/// A socket write of at least this many bytes carries response data: control frames (an
/// HTTP/2 PING acknowledgement is 17 bytes, 46 with TLS 1.2's record overhead) are shorter,
/// so a client cannot keep a stalled response alive by pinging.
pub(super) const DATA_WRITE: usize = 64;

impl<T: AsyncWrite + Unpin> ActivityIo<T> {
    pub(super) fn wrote(&self, result: Poll<std::io::Result<usize>>) -> Poll<std::io::Result<usize>> {
        if let Poll::Ready(Ok(n)) = result
            && n > 0
            && self.state.served.load(Ordering::Relaxed)
        {
            self.state.activity.fetch_add(1, Ordering::Relaxed);
            if n >= DATA_WRITE {
                // A slow reader still reading: its response moves, if a frame at a time.
                self.state.progress.fetch_add(1, Ordering::Relaxed);
            }
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ActivityIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(result)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(result)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
