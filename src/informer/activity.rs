//! What the informer's HTTP traffic shows: how many LIST and WATCH requests it
//! sent, and when the apiserver last sent a byte of a successful response.
//!
//! kube's watcher swallows bookmarks and reconnects silently, so the stream of
//! events alone cannot tell a quiet healthy watch from a dead one. The bytes on
//! the wire can: a healthy watch receives a bookmark or ends and reconnects at
//! least once per watch timeout. This is a tower layer on the kube client.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use http::{Method, Request, Response};
use kube::client::Body;
use tower::{Layer, Service};

/// Counters and the last sign of life, shared by the layer and the informer.
#[derive(Debug)]
pub struct ApiActivity {
    epoch: Instant,
    /// Nanoseconds after `epoch` of the last byte of a successful response; 0: none yet.
    last_success_nanos: AtomicU64,
    /// `last_success_nanos` when the latest WATCH request was sent.
    success_before_watch_nanos: AtomicU64,
    lists: AtomicU64,
    watches: AtomicU64,
}

impl Default for ApiActivity {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            last_success_nanos: AtomicU64::new(0),
            success_before_watch_nanos: AtomicU64::new(0),
            lists: AtomicU64::new(0),
            watches: AtomicU64::new(0),
        }
    }
}

impl ApiActivity {
    /// When the apiserver last sent a byte of a successful response.
    pub fn last_success(&self) -> Option<Instant> {
        self.instant(self.last_success_nanos.load(Ordering::Relaxed))
    }

    /// When the apiserver last sent a byte of a successful response before the latest WATCH
    /// request was sent: how current the cache is when that watch cannot resume (410 Gone).
    pub fn last_success_before_watch(&self) -> Option<Instant> {
        self.instant(self.success_before_watch_nanos.load(Ordering::Relaxed))
    }

    fn instant(&self, nanos: u64) -> Option<Instant> {
        (nanos != 0).then(|| self.epoch + Duration::from_nanos(nanos))
    }

    /// LIST requests sent (every page counts).
    pub fn lists(&self) -> u64 {
        self.lists.load(Ordering::Relaxed)
    }

    /// WATCH requests sent (first watch and every reconnect).
    pub fn watches(&self) -> u64 {
        self.watches.load(Ordering::Relaxed)
    }

    fn touch(&self) {
        let nanos = (self.epoch.elapsed().as_nanos() as u64).max(1);
        self.last_success_nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    fn count(&self, req: &Request<Body>) {
        if req.method() != Method::GET {
            return;
        }
        let watch = req.uri().query().is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        if watch {
            let before = self.last_success_nanos.load(Ordering::Relaxed);
            self.success_before_watch_nanos.store(before, Ordering::Relaxed);
        }
        if watch { &self.watches } else { &self.lists }.fetch_add(1, Ordering::Relaxed);
    }
}

/// The tower layer that feeds an [`ApiActivity`].
#[derive(Clone)]
pub struct ActivityLayer(pub Arc<ApiActivity>);

impl<S> Layer<S> for ActivityLayer {
    type Service = ActivityService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ActivityService { inner, activity: self.0.clone() }
    }
}

#[derive(Clone)]
pub struct ActivityService<S> {
    inner: S,
    activity: Arc<ApiActivity>,
}

impl<S, B> Service<Request<Body>> for ActivityService<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    S::Future: Send + 'static,
{
    type Response = Response<ActivityBody<B>>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        self.activity.count(&req);
        let activity = self.activity.clone();
        let response = self.inner.call(req);
        Box::pin(async move {
            let response = response.await?;
            let success = response.status().is_success();
            if success {
                activity.touch();
            }
            Ok(response.map(|inner| ActivityBody { inner, activity: success.then_some(activity) }))
        })
    }
}

pin_project_lite::pin_project! {
    /// A response body that reports each frame it receives.
    pub struct ActivityBody<B> {
        #[pin]
        inner: B,
        activity: Option<Arc<ApiActivity>>,
    }
}

impl<B: http_body::Body> http_body::Body for ActivityBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let frame = this.inner.poll_frame(cx);
        if let (Poll::Ready(Some(Ok(_))), Some(activity)) = (&frame, this.activity.as_ref()) {
            activity.touch();
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
