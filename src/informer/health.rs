//! How the informer is doing, as operators and the lister read it (the state
//! machine that decides it is in `machine.rs`).
//!
//! Why the lister cares: Spark removes every executor it knows that is absent
//! from a *full* snapshot once it has been registered longer than
//! `missingPodDetectDelta`. A snapshot from a cache that never synced (empty)
//! or that stopped following the apiserver (stale) would remove healthy
//! executors. So the lister is ready only when the cache is known to be current
//! within the stale bound (see `machine.rs` for what makes it current), and waits
//! for the watch's next proof when the last one is older.

use std::time::{Duration, SystemTime};

/// The informer's state, as an operator reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncState {
    /// Started; the first list has not completed yet (no error so far).
    Starting,
    /// The cache follows the apiserver: listed once, watch healthy.
    Synced,
    /// Something is failing; the informer keeps retrying with backoff.
    Degraded {
        /// When the current run of failures began (wall clock, for operators).
        since: SystemTime,
        last_error: String,
        consecutive_failures: u32,
    },
    /// Stopped for good.
    Stopped,
}

impl SyncState {
    /// A short name: `Starting`, `Synced`, `Degraded`, `Stopped`.
    pub fn name(&self) -> &'static str {
        match self {
            SyncState::Starting => "Starting",
            SyncState::Synced => "Synced",
            SyncState::Degraded { .. } => "Degraded",
            SyncState::Stopped => "Stopped",
        }
    }
}

/// Why the lister may not produce a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// The first list has not completed.
    NeverSynced,
    /// No sign of life from the apiserver for `silent_for` (> the stale bound).
    Stale {
        silent_for: Duration,
    },
    /// The watch is healthy, but quiet since it last proved the cache current, longer ago than
    /// the stale bound; its next renewal (within one watch timeout) proves it again.
    AwaitingProof {
        proven_ago: Duration,
    },
    /// After a stale spell, the watch resumes and must catch up with a consistent read first.
    Resuming,
    /// Relisting after a stale spell: the old cache is not served again.
    Relisting,
    /// The cache is current, but Spark's store has not got every change it shows yet (its
    /// consumer is behind): a full snapshot would overtake them.
    Undelivered {
        changes: usize,
    },
    Stopped,
}

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotReady::NeverSynced => write!(f, "the informer has not completed its first list"),
            NotReady::Stale { silent_for } => {
                write!(f, "the cache may be stale: no response from the apiserver for {:.1}s", silent_for.as_secs_f64())
            }
            NotReady::AwaitingProof { proven_ago } => write!(
                f,
                "the cache was last proven current {:.1}s ago, past the stale bound; the watch's next renewal proves \
                 it again",
                proven_ago.as_secs_f64()
            ),
            NotReady::Resuming => write!(
                f,
                "resuming the watch after the apiserver was silent past the silence bound; no snapshot until it \
                 catches up with a consistent read"
            ),
            NotReady::Relisting => write!(
                f,
                "relisting after a stale spell (the watch could not resume or catch up); no snapshot until the list \
                 completes"
            ),
            NotReady::Undelivered { changes } => write!(
                f,
                "{changes} pod changes have not reached Spark's store yet (its consumer is behind); a full snapshot \
                 would overtake them"
            ),
            NotReady::Stopped => write!(f, "the informer is stopped"),
        }
    }
}
