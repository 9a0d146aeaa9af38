//! The one retry policy of Service writes: which failures are transient, how
//! long to wait before the next attempt, and how many attempts.

use std::time::Duration;

/// Retries of a transient failure (429, 5xx, connection) before giving up.
pub(super) const ATTEMPTS: u32 = 6;

/// How long to wait before retrying a transient failure: the time the
/// apiserver asked for (`retryAfterSeconds` of a 429 from API Priority and
/// Fairness or the max-in-flight filter), as client-go waits its `Retry-After`,
/// else the next step of the backoff. Backing off past what the apiserver asked
/// kept a gone executor's Service up to 25 s after a 1 s throttle ended.
pub(super) fn retry_delay(error: &kube::Error, backoff: &mut impl Iterator<Item = Duration>) -> Duration {
    let asked = match error {
        kube::Error::Api(s) => s.details.as_ref().map_or(0, |d| d.retry_after_seconds),
        _ => 0,
    };
    if asked > 0 {
        Duration::from_secs(asked.into()).min(RETRY_AFTER_CAP)
    } else {
        backoff.next().expect("the backoff never ends")
    }
}

/// The longest wait a `retryAfterSeconds` may ask for: the backoff's own cap.
pub(super) const RETRY_AFTER_CAP: Duration = Duration::from_secs(30);

pub(super) fn transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// The one retry policy of Service writes: the informer's (kube's watcher
/// backoff, as client-go's: 0.8 s doubling to 30 s, jittered).
pub(super) fn retry_backoff() -> kube::runtime::watcher::DefaultBackoff {
    kube::runtime::watcher::DefaultBackoff::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttled(retry_after_seconds: Option<u32>) -> kube::Error {
        let mut status = serde_json::json!({"code": 429, "reason": "TooManyRequests"});
        if let Some(seconds) = retry_after_seconds {
            status["details"] = serde_json::json!({"retryAfterSeconds": seconds});
        }
        kube::Error::Api(Box::new(serde_json::from_value(status).unwrap()))
    }

    #[test]
    fn a_throttled_write_waits_what_the_apiserver_asked_not_the_grown_backoff() {
        let mut backoff = [Duration::from_secs(12), Duration::from_secs(25)].into_iter();
        assert_eq!(retry_delay(&throttled(Some(1)), &mut backoff), Duration::from_secs(1));
        assert_eq!(retry_delay(&throttled(Some(600)), &mut backoff), RETRY_AFTER_CAP, "capped");
        assert_eq!(retry_delay(&throttled(None), &mut backoff), Duration::from_secs(12), "no ask: the backoff");
        assert_eq!(retry_delay(&throttled(Some(0)), &mut backoff), Duration::from_secs(25));
    }
}
