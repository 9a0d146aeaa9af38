//! The informer's health and sync state: a pure state machine, fed with what
//! the watcher and the wire show, and read by the lister to decide whether a
//! full snapshot may be handed to Spark.
//!
//! Why the lister cares: Spark removes every executor it knows that is absent
//! from a *full* snapshot once it has been registered longer than
//! `missingPodDetectDelta`. A snapshot from a cache that never synced (empty)
//! or that stopped following the apiserver (stale) would remove healthy
//! executors. So the lister is ready only when the cache has synced once and
//! the apiserver has shown a sign of life within the stale bound.

use std::time::{Duration, Instant, SystemTime};

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

/// Something the informer saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// A (re)list began.
    ListStarted,
    /// A (re)list completed: the cache now holds the apiserver's state.
    ListCompleted,
    /// A watch event was applied to the cache.
    EventApplied,
    /// A request or the watch failed.
    Failed(String),
    /// The apiserver sent part of a successful response at this instant.
    Alive(Instant),
    /// The watch could not resume (410 Gone): the cache is current only as of this instant
    /// (the last sign of life before that watch was sent). The answer that said 410 proves
    /// the apiserver alive, not the cache current.
    Behind(Option<Instant>),
    /// The informer was stopped.
    Stopped,
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
    /// The watch came back after a failure and may still be replaying what it missed.
    CatchingUp {
        remaining: Duration,
    },
    Stopped,
}

/// After a stale spell, how long a resumed watch gets to replay what it missed
/// before the lister serves again. The apiserver sends the missed events at
/// once when the watch resumes; the first byte of that answer makes the cache
/// look fresh before they have all been applied, and a snapshot taken then
/// would lack pods created during the outage (seen in the chaos run). A lister
/// round skipped for this costs nothing: Spark keeps its last full snapshot.
pub const RESUME_GRACE: Duration = Duration::from_secs(1);

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotReady::NeverSynced => write!(f, "the informer has not completed its first list"),
            NotReady::Stale { silent_for } => {
                write!(f, "the cache may be stale: no response from the apiserver for {:.1}s", silent_for.as_secs_f64())
            }
            NotReady::CatchingUp { remaining } => write!(
                f,
                "the watch resumed after a failure; {:.1}s more for it to replay what it missed",
                remaining.as_secs_f64()
            ),
            NotReady::Stopped => write!(f, "the informer is stopped"),
        }
    }
}

/// The state machine.
#[derive(Debug, Clone)]
pub struct Health {
    state: SyncState,
    has_synced: bool,
    last_alive: Option<Instant>,
    /// When the last failure was seen: only a sign of life after it ends a run of failures.
    last_failure: Option<Instant>,
    /// The cache went stale (silent past the stale bound) since the last list or recovery.
    went_stale: bool,
    /// Until when a watch resumed after a stale spell is given to catch up (see [`RESUME_GRACE`]).
    catching_up_until: Option<Instant>,
    errors: u64,
}

impl Default for Health {
    fn default() -> Self {
        Self {
            state: SyncState::Starting,
            has_synced: false,
            last_alive: None,
            last_failure: None,
            went_stale: false,
            catching_up_until: None,
            errors: 0,
        }
    }
}

impl Health {
    pub fn state(&self) -> &SyncState {
        &self.state
    }

    pub fn has_synced(&self) -> bool {
        self.has_synced
    }

    /// Errors seen since start.
    pub fn errors(&self) -> u64 {
        self.errors
    }

    pub fn last_alive(&self) -> Option<Instant> {
        self.last_alive
    }

    /// Applies one observation made at `now`.
    pub fn step(&mut self, observation: Observation, now: Instant) {
        if self.state == SyncState::Stopped {
            return;
        }
        match observation {
            Observation::ListStarted => {}
            Observation::ListCompleted => {
                // A completed list is the whole truth: nothing to catch up on.
                self.has_synced = true;
                self.alive(now);
                self.state = SyncState::Synced;
                self.went_stale = false;
                self.catching_up_until = None;
            }
            Observation::EventApplied => {
                self.alive(now);
                self.recover(now);
            }
            Observation::Alive(at) => {
                // Every read of the health replays the last sign of life; one from before the
                // last failure says nothing of now: it neither ends a Degraded spell (else every
                // spell would end at the next read) nor freshens the cache.
                if self.last_failure.is_none_or(|failed| at > failed) {
                    self.alive(at);
                    self.recover(now);
                }
            }
            Observation::Behind(current_as_of) => self.last_alive = self.last_alive.min(current_as_of),
            Observation::Failed(error) => {
                self.errors += 1;
                self.last_failure = Some(now);
                self.state = match std::mem::replace(&mut self.state, SyncState::Starting) {
                    SyncState::Degraded { since, consecutive_failures, .. } => {
                        SyncState::Degraded { since, last_error: error, consecutive_failures: consecutive_failures + 1 }
                    }
                    _ => SyncState::Degraded { since: SystemTime::now(), last_error: error, consecutive_failures: 1 },
                };
            }
            Observation::Stopped => self.state = SyncState::Stopped,
        }
    }

    /// Marks the informer degraded if the apiserver has been silent for longer
    /// than `stale_bound` (a black-holed connection shows no error for a while).
    pub fn check_silence(&mut self, now: Instant, stale_bound: Duration) {
        if let Err(NotReady::Stale { silent_for }) = self.readiness(now, stale_bound) {
            self.went_stale = true;
            if self.state == SyncState::Synced {
                self.step(
                    Observation::Failed(format!(
                        "no response from the apiserver for {:.1}s (stale bound {:.1}s)",
                        silent_for.as_secs_f64(),
                        stale_bound.as_secs_f64()
                    )),
                    now,
                );
            }
        }
    }

    /// Whether the lister may hand a full snapshot to Spark now.
    pub fn readiness(&self, now: Instant, stale_bound: Duration) -> Result<(), NotReady> {
        if self.state == SyncState::Stopped {
            return Err(NotReady::Stopped);
        }
        if !self.has_synced {
            return Err(NotReady::NeverSynced);
        }
        let silent_for = self.last_alive.map_or(Duration::MAX, |t| now.saturating_duration_since(t));
        if silent_for > stale_bound {
            return Err(NotReady::Stale { silent_for });
        }
        if let Some(until) = self.catching_up_until.filter(|until| now < *until) {
            return Err(NotReady::CatchingUp { remaining: until - now });
        }
        Ok(())
    }

    fn alive(&mut self, at: Instant) {
        if self.last_alive.is_none_or(|t| at > t) {
            self.last_alive = Some(at);
        }
    }

    /// Success after failures: back to Synced (after a stale spell, with a
    /// grace to catch up), or to Starting before the first list.
    fn recover(&mut self, now: Instant) {
        if matches!(self.state, SyncState::Degraded { .. }) {
            self.state = if self.has_synced { SyncState::Synced } else { SyncState::Starting };
            if self.has_synced && std::mem::take(&mut self.went_stale) {
                self.catching_up_until = Some(now + RESUME_GRACE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUND: Duration = Duration::from_secs(15);

    fn secs(t0: Instant, s: u64) -> Instant {
        t0 + Duration::from_secs(s)
    }

    #[test]
    fn unsynced_cache_is_never_ready() {
        let t0 = Instant::now();
        let mut h = Health::default();
        assert_eq!(h.readiness(t0, BOUND), Err(NotReady::NeverSynced));
        // Signs of life and events do not make an unlisted cache complete.
        h.step(Observation::Alive(t0), t0);
        h.step(Observation::EventApplied, t0);
        assert_eq!(h.readiness(t0, BOUND), Err(NotReady::NeverSynced));
        assert_eq!(h.state(), &SyncState::Starting);
        h.step(Observation::ListCompleted, t0);
        assert_eq!(h.readiness(t0, BOUND), Ok(()));
        assert_eq!(h.state(), &SyncState::Synced);
    }

    #[test]
    fn errors_before_the_first_list_degrade_and_count() {
        let t0 = Instant::now();
        let mut h = Health::default();
        h.step(Observation::Failed("connection refused".into()), t0);
        h.step(Observation::Failed("connection refused again".into()), secs(t0, 1));
        match h.state() {
            SyncState::Degraded { last_error, consecutive_failures, .. } => {
                assert_eq!(last_error, "connection refused again");
                assert_eq!(*consecutive_failures, 2);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(h.errors(), 2);
        assert_eq!(h.readiness(secs(t0, 1), BOUND), Err(NotReady::NeverSynced));
        h.step(Observation::Alive(secs(t0, 2)), secs(t0, 2));
        assert_eq!(h.state(), &SyncState::Starting);
        h.step(Observation::ListCompleted, secs(t0, 3));
        assert_eq!(h.state(), &SyncState::Synced);
    }

    #[test]
    fn a_silent_apiserver_makes_the_cache_stale_then_recovers() {
        let t0 = Instant::now();
        let mut h = Health::default();
        h.step(Observation::ListCompleted, t0);
        h.check_silence(secs(t0, 10), BOUND);
        assert_eq!(h.state(), &SyncState::Synced);
        assert_eq!(h.readiness(secs(t0, 15), BOUND), Ok(()));
        h.check_silence(secs(t0, 16), BOUND);
        assert_eq!(h.state().name(), "Degraded");
        assert_eq!(h.readiness(secs(t0, 16), BOUND), Err(NotReady::Stale { silent_for: Duration::from_secs(16) }));
        // Checking again does not count the same silence twice.
        h.check_silence(secs(t0, 17), BOUND);
        assert_eq!(h.errors(), 1);
        h.step(Observation::Alive(secs(t0, 20)), secs(t0, 20));
        assert_eq!(h.state(), &SyncState::Synced);
        assert_eq!(h.readiness(secs(t0, 20), BOUND), Err(NotReady::CatchingUp { remaining: RESUME_GRACE }));
        assert_eq!(h.readiness(secs(t0, 21), BOUND), Ok(()));
    }

    #[test]
    fn only_a_sign_of_life_after_a_failure_ends_it() {
        let t0 = Instant::now();
        let mut h = Health::default();
        h.step(Observation::ListCompleted, t0);
        h.step(Observation::Alive(secs(t0, 4)), secs(t0, 4));
        h.step(Observation::Failed("410 Gone".into()), secs(t0, 5));
        // What every health read and tick does: replay the last sign of life, check for silence.
        for s in 5..8 {
            h.step(Observation::Alive(secs(t0, 4)), secs(t0, s));
            h.check_silence(secs(t0, s), BOUND);
            assert_eq!(h.state().name(), "Degraded", "at {s}s");
        }
        h.step(Observation::Alive(secs(t0, 8)), secs(t0, 8));
        assert_eq!(h.state(), &SyncState::Synced);
        assert_eq!(h.errors(), 1);
    }

    #[test]
    fn a_watch_that_cannot_resume_leaves_the_cache_as_old_as_before_that_watch() {
        let t0 = Instant::now();
        let mut h = Health::default();
        h.step(Observation::ListCompleted, t0);
        h.step(Observation::Alive(secs(t0, 2)), secs(t0, 2));
        // The resumed watch answers 200 at 9s, then 410 in its stream.
        h.step(Observation::Alive(secs(t0, 9)), secs(t0, 9));
        h.step(Observation::Failed("410 Gone".into()), secs(t0, 9));
        h.step(Observation::Behind(Some(secs(t0, 2))), secs(t0, 9));
        h.step(Observation::Alive(secs(t0, 9)), secs(t0, 10));
        assert_eq!(h.readiness(secs(t0, 16), BOUND), Ok(()));
        assert_eq!(
            h.readiness(secs(t0, 16), Duration::from_secs(5)),
            Err(NotReady::Stale { silent_for: Duration::from_secs(14) })
        );
        h.step(Observation::Alive(secs(t0, 19)), secs(t0, 19));
        h.step(Observation::ListCompleted, secs(t0, 19));
        assert_eq!(h.readiness(secs(t0, 19), Duration::from_secs(5)), Ok(()));
    }

    #[test]
    fn a_watch_resumed_after_a_stale_spell_gets_a_grace_to_replay_what_it_missed() {
        let t0 = Instant::now();
        let mut h = Health::default();
        h.step(Observation::ListCompleted, t0);
        h.check_silence(secs(t0, 20), BOUND);
        assert_eq!(h.state().name(), "Degraded");
        // The resumed watch's first byte: alive, but its replay may still be arriving.
        h.step(Observation::Alive(secs(t0, 21)), secs(t0, 21));
        assert_eq!(h.state(), &SyncState::Synced);
        assert!(matches!(h.readiness(secs(t0, 21), BOUND), Err(NotReady::CatchingUp { .. })));
        assert_eq!(h.readiness(secs(t0, 21) + RESUME_GRACE, BOUND), Ok(()));
        // A relist instead is the whole truth at once.
        h.check_silence(secs(t0, 40), BOUND);
        h.step(Observation::ListCompleted, secs(t0, 41));
        assert_eq!(h.readiness(secs(t0, 41), BOUND), Ok(()));
    }

    #[test]
    fn a_stale_spell_is_one_failure_however_often_health_is_read() {
        let t0 = Instant::now();
        let mut h = Health::default();
        h.step(Observation::ListCompleted, t0);
        for s in 16..40 {
            h.step(Observation::Alive(t0), secs(t0, s));
            h.check_silence(secs(t0, s), BOUND);
        }
        assert_eq!(h.errors(), 1);
        match h.state() {
            SyncState::Degraded { consecutive_failures, .. } => assert_eq!(*consecutive_failures, 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_relist_after_410_keeps_the_old_cache_ready_while_the_apiserver_answers() {
        let t0 = Instant::now();
        let mut h = Health::default();
        h.step(Observation::ListCompleted, t0);
        h.step(Observation::Failed("410 Gone".into()), secs(t0, 5));
        h.step(Observation::ListStarted, secs(t0, 5));
        h.step(Observation::Alive(secs(t0, 6)), secs(t0, 6));
        assert_eq!(h.readiness(secs(t0, 6), BOUND), Ok(()));
        h.step(Observation::ListCompleted, secs(t0, 7));
        assert_eq!(h.state(), &SyncState::Synced);
    }

    #[test]
    fn a_late_sign_of_life_never_moves_time_backwards() {
        let t0 = Instant::now();
        let mut h = Health::default();
        h.step(Observation::ListCompleted, secs(t0, 10));
        h.step(Observation::Alive(secs(t0, 2)), secs(t0, 11));
        assert_eq!(h.last_alive(), Some(secs(t0, 10)));
    }

    #[test]
    fn stopped_is_final() {
        let t0 = Instant::now();
        let mut h = Health::default();
        h.step(Observation::ListCompleted, t0);
        h.step(Observation::Stopped, t0);
        h.step(Observation::ListCompleted, t0);
        h.step(Observation::Failed("late".into()), t0);
        assert_eq!(h.state(), &SyncState::Stopped);
        assert_eq!(h.readiness(t0, BOUND), Err(NotReady::Stopped));
    }
}
