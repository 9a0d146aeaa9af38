//! What the informer's HTTP traffic shows: how many LIST and WATCH requests it
//! sent, and when the apiserver last sent a byte of a successful response.
//!
//! kube's watcher swallows bookmarks and reconnects silently, so the stream of
//! events alone cannot tell a quiet healthy watch from a dead one. The bytes on
//! the wire can: a healthy watch receives a bookmark or ends and reconnects at
//! least once per watch timeout. A watch response that ends cleanly at its
//! timeout also proves, however long it was quiet, that everything the apiserver
//! wrote on it before that timeout arrived: the apiserver ended it no earlier
//! than `timeoutSeconds` after the request was sent, and the end comes after
//! every byte before it. This is a tower layer on the kube client.

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
pub(super) struct ApiActivity {
    epoch: Instant,
    /// Nanoseconds after `epoch` of the last byte of a successful response; 0: none yet.
    last_success_nanos: AtomicU64,
    /// The latest instant that a WATCH response's clean end at its timeout proves: the request's
    /// send time plus its `timeoutSeconds`; 0: none yet.
    watch_end_nanos: AtomicU64,
    lists: AtomicU64,
    watches: AtomicU64,
}

impl Default for ApiActivity {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            last_success_nanos: AtomicU64::new(0),
            watch_end_nanos: AtomicU64::new(0),
            lists: AtomicU64::new(0),
            watches: AtomicU64::new(0),
        }
    }
}

impl ApiActivity {
    /// When the apiserver last sent a byte of a successful response.
    pub(super) fn last_success(&self) -> Option<Instant> {
        self.instant(self.last_success_nanos.load(Ordering::Relaxed))
    }

    /// What the last clean end of a WATCH response at its timeout proves: everything the
    /// apiserver wrote on it before this instant (its send time plus `timeoutSeconds`; the
    /// apiserver ended it no earlier) has arrived. An end that comes sooner proves no more than
    /// any byte does, as the apiserver may have ended it long before it arrived.
    pub(super) fn last_watch_end(&self) -> Option<Instant> {
        self.instant(self.watch_end_nanos.load(Ordering::Relaxed))
    }

    fn instant(&self, nanos: u64) -> Option<Instant> {
        (nanos != 0).then(|| self.epoch + Duration::from_nanos(nanos))
    }

    /// LIST requests sent (every page counts).
    pub(super) fn lists(&self) -> u64 {
        self.lists.load(Ordering::Relaxed)
    }

    /// WATCH requests sent (first watch and every reconnect).
    pub(super) fn watches(&self) -> u64 {
        self.watches.load(Ordering::Relaxed)
    }

    fn touch(&self) {
        let nanos = self.nanos_now();
        self.last_success_nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    fn watch_ended(&self, timed_out_at: Option<u64>) {
        let nanos = self.nanos_now();
        self.last_success_nanos.fetch_max(nanos, Ordering::Relaxed);
        if let Some(at) = timed_out_at.filter(|at| *at <= nanos) {
            self.watch_end_nanos.fetch_max(at, Ordering::Relaxed);
        }
    }

    fn nanos_now(&self) -> u64 {
        (self.epoch.elapsed().as_nanos() as u64).max(1)
    }

    /// Counts a request of the informer's; `None` for any other on the same client.
    fn count(&self, req: &Request<Body>) -> Option<InformerRequest> {
        let request = InformerRequest::of(req)?;
        match request {
            InformerRequest::Watch => &self.watches,
            InformerRequest::List => &self.lists,
        }
        .fetch_add(1, Ordering::Relaxed);
        Some(request)
    }
}

/// The informer's two requests: a LIST or a WATCH of the pods collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InformerRequest {
    List,
    Watch,
}

impl InformerRequest {
    /// The driver's one client also carries the executor Services' requests (a GET of the
    /// driver pod, writes to services); only the informer's own prove that its watch lives.
    fn of(req: &Request<Body>) -> Option<Self> {
        if req.method() != Method::GET || !req.uri().path().ends_with("/pods") {
            return None;
        }
        let watch = req.uri().query().is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        Some(if watch { Self::Watch } else { Self::List })
    }
}

/// The tower layer that feeds an [`ApiActivity`].
#[derive(Clone)]
pub(super) struct ActivityLayer(pub Arc<ApiActivity>);

impl<S> Layer<S> for ActivityLayer {
    type Service = ActivityService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ActivityService { inner, activity: self.0.clone() }
    }
}

#[derive(Clone)]
pub(super) struct ActivityService<S> {
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
        let request = self.activity.count(&req);
        let watch = request == Some(InformerRequest::Watch);
        // The earliest the apiserver may end this watch on its own: sent now, plus its timeout.
        let timed_out_at = watch.then(|| watch_timeout(&req)).flatten().map(|t| self.activity.nanos_now() + t);
        let activity = self.activity.clone();
        let response = self.inner.call(req);
        Box::pin(async move {
            let response = response.await?;
            let success = request.is_some() && response.status().is_success();
            if success {
                activity.touch();
            }
            Ok(response.map(|inner| ActivityBody { inner, activity: success.then_some(activity), watch, timed_out_at }))
        })
    }
}

/// A WATCH request's `timeoutSeconds`, in nanoseconds.
fn watch_timeout(req: &Request<Body>) -> Option<u64> {
    let query = req.uri().query()?;
    let seconds = query.split('&').find_map(|p| p.strip_prefix("timeoutSeconds="))?;
    seconds.parse::<u64>().ok().map(|s| s * 1_000_000_000)
}

pin_project_lite::pin_project! {
    /// A response body that reports each frame it receives, and a WATCH response's clean end.
    pub struct ActivityBody<B> {
        #[pin]
        inner: B,
        activity: Option<Arc<ApiActivity>>,
        watch: bool,
        // A WATCH's send time plus its `timeoutSeconds` (nanoseconds after the epoch).
        timed_out_at: Option<u64>,
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
        match (&frame, this.activity.as_ref()) {
            (Poll::Ready(Some(Ok(_))), Some(activity)) => activity.touch(),
            (Poll::Ready(None), Some(activity)) if *this.watch => {
                *this.watch = false; // once: an ended body may be polled again
                activity.watch_ended(*this.timed_out_at);
            }
            _ => {}
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

#[cfg(test)]
mod tests {
    use super::*;

    fn get(uri: &str) -> Request<Body> {
        Request::get(uri).body(Body::empty()).unwrap()
    }

    #[test]
    fn only_the_informers_list_and_watch_of_pods_are_its_requests() {
        let pods = "/api/v1/namespaces/spark/pods";
        assert_eq!(
            InformerRequest::of(&get(&format!("{pods}?labelSelector=a%3Db&limit=500"))),
            Some(InformerRequest::List)
        );
        assert_eq!(
            InformerRequest::of(&get(&format!("{pods}?watch=true&resourceVersion=7&timeoutSeconds=30"))),
            Some(InformerRequest::Watch)
        );
        // The executor Services' requests on the driver's same client: no sign of the watch's life.
        assert_eq!(InformerRequest::of(&get(&format!("{pods}/app-driver"))), None, "the driver pod's GET");
        assert_eq!(InformerRequest::of(&get("/api/v1/namespaces/spark/services/app-exec-1-svc")), None);
        let create = Request::post("/api/v1/namespaces/spark/services").body(Body::empty()).unwrap();
        assert_eq!(InformerRequest::of(&create), None);
    }
}
