//! Bodies under deadlines. [`ReadDeadline`]: a request body past its read deadline ends in an
//! error instead of waiting for a client that stopped sending (`server.body_read_timeout_ms`);
//! the timer is armed only when the body is first found not ready, so a body read at once (or
//! never read, as a GET's) costs no timer. [`Lifetime`]: a public stream's response (a health
//! `Watch`, a reflection session) ends at a fixed time, holding its place until then.
//!
//! tower-http's `TimeoutBody` bounds the time between frames, not the whole body, so a client
//! trickling one byte a second would never reach it; this bounds the whole read.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::admit::Places;

/// The error of a body not read in full by its deadline.
#[derive(Debug, thiserror::Error)]
#[error("the request body was not received within the body read timeout")]
pub struct BodyTimeout;

impl BodyTimeout {
    /// Whether `error`, or an error anywhere in its chain of sources, is a [`BodyTimeout`]
    /// (axum and http-body-util wrap a body's error on the way up).
    pub fn caused(error: &(dyn std::error::Error + 'static)) -> bool {
        std::iter::successors(Some(error), |e| e.source()).any(|e| e.is::<BodyTimeout>())
    }
}

pin_project! {
    /// See the module documentation.
    pub struct ReadDeadline<B> {
        #[pin]
        body: B,
        deadline: Instant,
        #[pin]
        timer: Option<Sleep>,
        // A place under a cap, held as long as the body (a public request's).
        places: Option<Places>,
    }
}

impl<B> ReadDeadline<B> {
    /// `body`, to be read in full by `deadline`, holding `places` until dropped.
    pub(super) fn new(body: B, deadline: Instant, places: Option<Places>) -> Self {
        ReadDeadline { body, deadline, timer: None, places }
    }
}

impl<B> Body for ReadDeadline<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut this = self.project();
        if let Poll::Ready(frame) = this.body.poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if this.timer.is_none() {
            this.timer.set(Some(tokio::time::sleep_until(*this.deadline)));
        }
        match this.timer.as_pin_mut().map(|timer| timer.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Some(Err(Box::new(BodyTimeout)))),
            _ => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

pin_project! {
    /// A response body that ends in an error at `deadline` (the stream is reset), holding a
    /// place under a cap until it ends or is dropped.
    pub struct Lifetime<B> {
        #[pin]
        body: B,
        #[pin]
        timer: Sleep,
        places: Option<Places>,
    }
}

impl<B> Lifetime<B> {
    /// `body`, cut at `deadline`, holding `places`.
    pub(super) fn new(body: B, deadline: Instant, places: Option<Places>) -> Self {
        Lifetime { body, timer: tokio::time::sleep_until(deadline), places }
    }
}

/// The error a [`Lifetime`] ends its body with.
#[derive(Debug, thiserror::Error)]
#[error("the stream reached the end of its lifetime")]
pub struct LifetimeOver;

impl<B> Body for Lifetime<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if this.timer.poll(cx).is_ready() {
            this.places.take();
            return Poll::Ready(Some(Err(Box::new(LifetimeOver))));
        }
        let frame = this.body.poll_frame(cx).map(|f| f.map(|f| f.map_err(Into::into)));
        if matches!(frame, Poll::Ready(None)) {
            this.places.take();
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A body that never sends anything.
    struct Silent;

    impl Body for Silent {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Pending
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_body_ends_in_an_error_at_its_deadline_not_before() {
        let start = Instant::now();
        let body = ReadDeadline::new(Silent, start + Duration::from_secs(10), None);
        let error = axum::body::to_bytes(axum::body::Body::new(body), usize::MAX).await.unwrap_err();
        assert!(BodyTimeout::caused(&error), "{error}");
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_ends_at_the_end_of_its_lifetime() {
        let start = Instant::now();
        let body = Lifetime::new(Silent, start + Duration::from_secs(300), None);
        let error = axum::body::to_bytes(axum::body::Body::new(body), usize::MAX).await.unwrap_err();
        assert!(
            std::iter::successors(Some(&error as &(dyn std::error::Error + 'static)), |e| e.source())
                .any(|e| e.is::<LifetimeOver>())
        );
        assert_eq!(start.elapsed(), Duration::from_secs(300));
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_arrives_in_time_is_read_whole() {
        let body = ReadDeadline::new(
            axum::body::Body::from("{\"n\": 8}"),
            Instant::now() + Duration::from_secs(1),
            None,
        );
        let bytes = axum::body::to_bytes(axum::body::Body::new(body), usize::MAX).await.unwrap();
        assert_eq!(bytes, "{\"n\": 8}");
    }
}
