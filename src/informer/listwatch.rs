//! The requests the informer sends, made with kube's public API (`Api::list`, `Api::watch`):
//! one list, as the state machine asks for it, then a watch resumed from the last
//! resourceVersion seen, for as long as it can resume.
//!
//! kube-runtime 5's watcher cannot be told how a relist differs from the first list: it lists with
//! `resourceVersion` unset (`MostRecent`) or `0` (`Any`), and streams from `0`, on every list
//! and every relist, and it tells neither the list's resourceVersion nor its bookmarks. On a
//! highly available control plane a relist from `0` reads a lagging apiserver's older watch cache
//! (see docs/field-notes.md). So the machine chooses each list ([`ListRequest`]: the first from
//! any state, every relist a consistent read) and this module carries it out, as kube's watcher
//! would otherwise.
//!
//! A watch is resumed one revision *before* the last resourceVersion seen: the apiserver then
//! sends, before the watch's timeout, a bookmark at least as new as that resourceVersion, which
//! a lagging apiserver (whose cache is older) cannot; so every watch shows whether the apiserver
//! serving it is as new as the cache (the machine's "fresh" watch). The one event that revision
//! may replay is the last one applied, which the machine recognises as a replay.
//!
//! After a stale spell or a broken watch the machine asks for a consistent read of one pod and then
//! the watch resumed from the cache's resourceVersion ([`Requests::ProveThenResume`]): the read's
//! resourceVersion is what the resumed watch must reach before the cache is current again. A watch
//! that ends cleanly at its timeout is renewed here, with no read.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use futures::stream::{self, BoxStream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::core::Status;
use kube::ResourceExt;

/// Where a list starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ListFrom {
    /// Any state the apiserver holds (`resourceVersion=0`): its watch cache, however old. Only
    /// for the first list, which has nothing to be older than.
    Any,
    /// The most recent state, a consistent read (`resourceVersion` unset): needs etcd.
    MostRecent,
}

/// How a list is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListMethod {
    /// Pages of this many pods.
    Paged(u32),
    /// One response (the watch cache ignores limits on the lists it serves).
    Whole,
    /// A watch that sends the initial state first (`sendInitialEvents`), then goes on as the watch.
    Streaming,
    /// The first page of one pod, and no more: a consistent read made only for its
    /// resourceVersion, which a resumed watch must reach (the machine's proof).
    ProofRead,
}

/// One list, as the machine asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ListRequest {
    pub method: ListMethod,
    pub from: ListFrom,
}

/// What to request, as the machine chose ([`super::machine::InformerMachine::requests`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Requests {
    /// A list, then the watch from its resourceVersion.
    List(ListRequest),
    /// After a stale spell or a break: a consistent read, then the watch resumed after
    /// `resume_from` (the cache's resourceVersion), so that it replays every change since.
    ProveThenResume { read: ListRequest, resume_from: String },
}

/// What the requests showed.
#[derive(Debug)]
pub(super) enum Item {
    /// The list begins.
    ListBegan,
    /// A pod of the list.
    Listed(Pod),
    /// The list is complete: the apiserver's state as of this resourceVersion.
    ListDone {
        resource_version: String,
    },
    /// A watch request was answered.
    WatchBegan,
    Applied(Pod),
    Deleted(Pod),
    /// The apiserver's watch cache has reached this resourceVersion.
    Bookmark {
        resource_version: String,
    },
    /// A watch response ended; the next one resumes.
    WatchEnded,
}

/// A failed request, or an error the apiserver sent in a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Failure {
    pub error: String,
    /// The apiserver's status code, if it sent one.
    pub status: Option<u16>,
    /// The apiserver's cache is older than the resourceVersion asked for ("Too large resource
    /// version"): a lagging apiserver.
    pub lagging: bool,
}

impl Failure {
    /// The watch cannot resume: its resourceVersion is gone (410); only a relist continues.
    pub(super) fn is_gone(&self) -> bool {
        self.status == Some(410)
    }

    fn of_request(error: kube::Error) -> Self {
        match error {
            kube::Error::Api(status) => Self::of_status(&status),
            other => Self { error: describe(&other), status: None, lagging: false },
        }
    }

    fn of_status(status: &Status) -> Self {
        let cause = |reason: &str| status.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.reason == reason));
        let lagging = cause("ResourceVersionTooLarge") || status.message.contains("Too large resource version");
        let error = if status.message.is_empty() {
            format!("the apiserver answered {} {}", status.code, status.reason)
        } else {
            format!("{} ({} {})", status.message, status.code, status.reason)
        };
        Self { error, status: (status.code != 0).then_some(status.code), lagging }
    }
}

/// The parameters every request shares.
#[derive(Debug, Clone)]
pub(super) struct Selector {
    pub labels: String,
    /// A watch's `timeoutSeconds`.
    pub watch_timeout: u32,
    /// A streaming list's `timeoutSeconds`: the apiserver ends a watch at its timeout, initial
    /// events or not, so a large app's list on a slow link needs the list's bound, not a watch's.
    pub list_timeout: u32,
}

/// The list `requests`, then the watch, resumed until it cannot be (410 Gone ends the stream:
/// the machine relists). Failures are items; the caller backs off after each.
pub(super) fn list_watch(
    pods: Api<Pod>,
    selector: Selector,
    requests: Requests,
) -> BoxStream<'static, Result<Item, Failure>> {
    let (request, resume) = match requests {
        Requests::List(request) => (request, None),
        Requests::ProveThenResume { read, resume_from } => (read, Some(resume_from)),
    };
    let start = State::Listing(Listing::new(request, resume));
    stream::unfold(Some(start), move |state| {
        let (pods, selector) = (pods.clone(), selector.clone());
        async move {
            let mut state = state?;
            loop {
                let (item, next) = step(&pods, &selector, state).await;
                match (item, next) {
                    (Some(item), next) => return Some((item, next)),
                    (None, Some(next)) => state = next,
                    (None, None) => return None,
                }
            }
        }
    })
    .boxed()
}

enum State {
    Listing(Listing),
    /// The streaming list's watch, until its initial events end. It is then dropped and a watch
    /// of the usual length resumes from the list's resourceVersion, as after a list of pages: the
    /// streaming request's timeout is the list's, far longer than a watch's, and a watch's clean
    /// end at its timeout is what proves the cache current.
    Streaming {
        request: ListRequest,
        stream: BoxStream<'static, kube::Result<WatchEvent<Pod>>>,
    },
    /// Watch after this resourceVersion next; after a failure or an early end, with a short watch
    /// (below).
    Resume {
        rv: String,
        short: bool,
    },
    Watching {
        rv: String,
        stream: BoxStream<'static, kube::Result<WatchEvent<Pod>>>,
        /// The earliest the apiserver may end it (its timeout).
        due: Instant,
        /// Nothing came on it yet: it has not shown the apiserver as new as the cache.
        quiet: bool,
    },
}

type Step = (Option<Result<Item, Failure>>, Option<State>);

async fn step(pods: &Api<Pod>, selector: &Selector, state: State) -> Step {
    match state {
        State::Listing(listing) => list_step(pods, selector, listing).await,
        State::Streaming { request, stream } => streaming_step(request, stream).await,
        State::Resume { rv, short } => {
            let mut params = watch_params(selector, false);
            if short {
                // The apiserver serving a resumed watch may be another one (a load balancer's), and
                // only its bookmark shows whether it is as new as the cache: a short watch gets it
                // within about a second.
                params.timeout = Some(SHORT_WATCH_SECONDS.min(selector.watch_timeout));
            }
            let due = Instant::now() + Duration::from_secs(params.timeout.unwrap_or_default().into());
            match pods.watch(&params, &resume_after(&rv)).await {
                Ok(stream) => {
                    (Some(Ok(Item::WatchBegan)), Some(State::Watching { rv, stream: stream.boxed(), due, quiet: true }))
                }
                Err(error) => (Some(Err(Failure::of_request(error))), Some(State::Resume { rv, short: true })),
            }
        }
        State::Watching { rv, stream, due, quiet } => watching_step(rv, stream, due, quiet).await,
    }
}

/// A list in progress.
struct Listing {
    request: ListRequest,
    /// Where the watch resumes once the list is done, if not from the list's resourceVersion.
    resume: Option<String>,
    continue_token: Option<String>,
    page: VecDeque<Pod>,
    /// The resourceVersion of the pages listed so far.
    list_rv: Option<String>,
    began: bool,
}

impl Listing {
    fn new(request: ListRequest, resume: Option<String>) -> Self {
        Self { request, resume, continue_token: None, page: VecDeque::new(), list_rv: None, began: false }
    }

    /// The same list again, from its first page and a new `ListBegan` (the machine drops what the
    /// failed attempt listed), as kube's watcher and client-go's pager do (a continue token of a
    /// failed list may be expired).
    fn restart(self) -> State {
        State::Listing(Self::new(self.request, self.resume))
    }
}

async fn list_step(pods: &Api<Pod>, selector: &Selector, mut listing: Listing) -> Step {
    if !listing.began {
        listing.began = true;
        return (Some(Ok(Item::ListBegan)), Some(State::Listing(listing)));
    }
    if let Some(pod) = listing.page.pop_front() {
        return (Some(Ok(Item::Listed(pod))), Some(State::Listing(listing)));
    }
    if let (None, Some(rv)) = (&listing.continue_token, &listing.list_rv) {
        let done = Item::ListDone { resource_version: rv.clone() };
        // After a proof read the watch resumes from the cache's resourceVersion, and short: the
        // connection broke, and the apiserver serving it now may be another one.
        let next = match listing.resume {
            Some(rv) => State::Resume { rv, short: true },
            None => State::Resume { rv: rv.clone(), short: false },
        };
        return (Some(Ok(done)), Some(next));
    }
    if listing.request.method == ListMethod::Streaming {
        let mut params = watch_params(selector, true);
        params.timeout = Some(selector.list_timeout);
        let from = match &listing.request.from {
            ListFrom::Any => "0".to_string(),
            ListFrom::MostRecent => String::new(),
        };
        return match pods.watch(&params, &from).await {
            Ok(stream) => (None, Some(State::Streaming { request: listing.request, stream: stream.boxed() })),
            // Listed again from the start after the caller's backoff.
            Err(error) => (Some(Err(Failure::of_request(error))), Some(listing.restart())),
        };
    }
    match pods.list(&list_params(selector, &listing.request, listing.continue_token.clone())).await {
        Ok(list) => {
            let proof = listing.request.method == ListMethod::ProofRead;
            listing.continue_token = list.metadata.continue_.filter(|t| !t.is_empty() && !proof);
            listing.list_rv = list.metadata.resource_version.filter(|rv| !rv.is_empty());
            if listing.list_rv.is_none() {
                let failure = Failure {
                    error: "the apiserver's list has no resourceVersion".into(),
                    status: None,
                    lagging: false,
                };
                return (Some(Err(failure)), Some(listing.restart()));
            }
            // A proof read's pod is not news: only its resourceVersion is.
            listing.page = if proof { VecDeque::new() } else { list.items.into() };
            (None, Some(State::Listing(listing)))
        }
        Err(error) => (Some(Err(Failure::of_request(error))), Some(listing.restart())),
    }
}

async fn streaming_step(request: ListRequest, mut stream: BoxStream<'static, kube::Result<WatchEvent<Pod>>>) -> Step {
    match stream.next().await {
        Some(Ok(WatchEvent::Added(pod) | WatchEvent::Modified(pod))) => {
            (Some(Ok(Item::Listed(pod))), Some(State::Streaming { request, stream }))
        }
        // The apiserver sends no deletions among the initial events.
        Some(Ok(WatchEvent::Deleted(_))) => (None, Some(State::Streaming { request, stream })),
        Some(Ok(WatchEvent::Bookmark(bookmark))) => {
            if bookmark.metadata.annotations.contains_key("k8s.io/initial-events-end") {
                let rv = bookmark.metadata.resource_version;
                let done = Item::ListDone { resource_version: rv.clone() };
                (Some(Ok(done)), Some(State::Resume { rv, short: false }))
            } else {
                (None, Some(State::Streaming { request, stream }))
            }
        }
        Some(Ok(WatchEvent::Error(status))) => {
            (Some(Err(Failure::of_status(&status))), Some(State::Listing(Listing::new(request, None))))
        }
        Some(Err(error)) => (Some(Err(Failure::of_request(error))), Some(State::Listing(Listing::new(request, None)))),
        // The stream ended before the initial events did: the list starts over (the machine
        // sees a second ListBegan and may fall back from streaming).
        None => (None, Some(State::Listing(Listing::new(request, None)))),
    }
}

async fn watching_step(
    rv: String,
    mut stream: BoxStream<'static, kube::Result<WatchEvent<Pod>>>,
    due: Instant,
    quiet: bool,
) -> Step {
    let item_rv = |pod: &Pod| pod.resource_version().filter(|v| !v.is_empty());
    match stream.next().await {
        Some(Ok(WatchEvent::Added(pod) | WatchEvent::Modified(pod))) => match item_rv(&pod) {
            Some(next) => (Some(Ok(Item::Applied(pod))), Some(State::Watching { rv: next, stream, due, quiet: false })),
            None => (Some(Err(no_resource_version())), Some(State::Resume { rv, short: true })),
        },
        Some(Ok(WatchEvent::Deleted(pod))) => match item_rv(&pod) {
            Some(next) => (Some(Ok(Item::Deleted(pod))), Some(State::Watching { rv: next, stream, due, quiet: false })),
            None => (Some(Err(no_resource_version())), Some(State::Resume { rv, short: true })),
        },
        Some(Ok(WatchEvent::Bookmark(bookmark))) => {
            let next = bookmark.metadata.resource_version;
            (
                Some(Ok(Item::Bookmark { resource_version: next.clone() })),
                Some(State::Watching { rv: next, stream, due, quiet: false }),
            )
        }
        Some(Ok(WatchEvent::Error(status))) => {
            let failure = Failure::of_status(&status);
            // 410: this resourceVersion can no longer be resumed; the machine relists.
            let next = (!failure.is_gone()).then_some(State::Resume { rv, short: true });
            (Some(Err(failure)), next)
        }
        Some(Err(error)) => (Some(Err(Failure::of_request(error))), Some(State::Resume { rv, short: true })),
        // A watch that ended before its timeout was ended by something between (a load balancer
        // moving): the next one may be served by another apiserver, so it is short; so is the one
        // after a watch that showed nothing (a lagging apiserver's), until one shows the cache's.
        None => {
            let short = quiet || Instant::now() < due;
            (Some(Ok(Item::WatchEnded)), Some(State::Resume { rv, short }))
        }
    }
}

/// The watch that resumes after a failure: long enough for the apiserver's bookmark (2 s before
/// its end), short enough that a lagging apiserver shows within seconds.
const SHORT_WATCH_SECONDS: u32 = 3;

fn no_resource_version() -> Failure {
    Failure { error: "the apiserver sent an event without a resourceVersion".into(), status: None, lagging: false }
}

/// The resourceVersion a watch resumes from: one revision before `rv`, so that the apiserver's
/// bookmark (sent only past the revision asked for) shows it is at least at `rv` (module doc).
/// A resourceVersion that is not an etcd revision is resumed from as it is.
pub(super) fn resume_after(rv: &str) -> String {
    match rv.parse::<u64>() {
        Ok(revision) if revision > 1 => (revision - 1).to_string(),
        _ => rv.to_string(),
    }
}

fn watch_params(selector: &Selector, send_initial_events: bool) -> WatchParams {
    WatchParams {
        label_selector: Some(selector.labels.clone()),
        timeout: Some(selector.watch_timeout),
        bookmarks: true,
        send_initial_events,
        ..WatchParams::default()
    }
}

fn list_params(selector: &Selector, request: &ListRequest, continue_token: Option<String>) -> ListParams {
    let (resource_version, version_match) = match &request.from {
        ListFrom::Any => (Some("0".to_string()), None),
        ListFrom::MostRecent => (None, None),
    };
    let limit = match request.method {
        ListMethod::Paged(size) => Some(size),
        ListMethod::ProofRead => Some(1),
        ListMethod::Whole | ListMethod::Streaming => None,
    };
    ListParams {
        label_selector: Some(selector.labels.clone()),
        resource_version,
        version_match,
        limit,
        continue_token,
        ..ListParams::default()
    }
}

/// The error and its causes, on one line.
pub(super) fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_resumes_one_revision_before_the_last_seen() {
        assert_eq!(resume_after("542"), "541");
        assert_eq!(resume_after("1"), "1");
        assert_eq!(resume_after("not-a-revision"), "not-a-revision");
    }

    #[test]
    fn each_list_asks_for_what_the_machine_chose() {
        let selector = Selector { labels: "spark-role=executor".into(), watch_timeout: 30, list_timeout: 60 };
        let request = |method, from| ListRequest { method, from };
        let any = list_params(&selector, &request(ListMethod::Whole, ListFrom::Any), None);
        assert_eq!((any.resource_version.as_deref(), any.version_match, any.limit), (Some("0"), None, None));
        let relist = list_params(&selector, &request(ListMethod::Whole, ListFrom::MostRecent), None);
        assert_eq!((relist.resource_version, relist.version_match, relist.limit), (None, None, None));
        let consistent = list_params(&selector, &request(ListMethod::Paged(500), ListFrom::MostRecent), None);
        assert_eq!((consistent.resource_version, consistent.version_match, consistent.limit), (None, None, Some(500)));
    }

    #[test]
    fn too_large_resource_version_is_a_lagging_apiserver() {
        let status: Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": 504, "reason": "Timeout",
            "message": "Timeout: Too large resource version: 542, current: 522",
            "details": {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                        "retryAfterSeconds": 1}
        }))
        .unwrap();
        let failure = Failure::of_status(&status);
        assert!(failure.lagging, "{failure:?}");
        assert_eq!(failure.status, Some(504));
        assert!(failure.error.contains("Too large resource version: 542, current: 522"), "{}", failure.error);
        let gone: Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": 410, "reason": "Expired", "message": "too old resource version: 5 (9)"
        }))
        .unwrap();
        assert!(Failure::of_status(&gone).is_gone() && !Failure::of_status(&gone).lagging);
    }
}
