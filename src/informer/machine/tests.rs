//! The state machine, transition by transition, with no control plane: time is
//! passed in, the wire's last sign of life is a parameter.

use super::*;
use crate::pod;
use crate::wire::{self, encode_snapshot, Decoded};
use serde_json::json;

const BOUND: Duration = Duration::from_secs(5);

/// Watches of two thirds of the stale bound: a healthy watch is never silent past it.
fn bounds() -> Bounds {
    Bounds { stale_bound: BOUND, silence_bound: BOUND, list_timeout: Duration::from_secs(60), page_size: 500 }
}

/// Watches of 10 s, twice the stale bound: a quiet watch proves the cache only at its renewals.
const LONG_WATCH: Duration = Duration::from_secs(10);

fn long_watch_bounds() -> Bounds {
    Bounds { silence_bound: LONG_WATCH + BOUND / 3, ..bounds() }
}

fn pod(name: &str, rv: &str, phase: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": rv,
                     "labels": {"spark-exec-id": name.trim_start_matches('p')}},
        "status": {"phase": phase},
    }))
    .unwrap()
}

/// `t0` plus `ms` milliseconds.
fn at(t0: Instant, ms: u64) -> Instant {
    t0 + Duration::from_millis(ms)
}

fn names(pods: &[Arc<CachedPod>]) -> Vec<String> {
    let mut names: Vec<_> = pods.iter().map(|p| p.name.clone()).collect();
    names.sort();
    names
}

fn delivered(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Deliver(changes) => Some(changes),
            _ => None,
        })
        .flatten()
        .map(|c| match c {
            PodChange::Applied(p) => format!("+{}@{}", p.name, p.resource_version),
            PodChange::Deleted(p) => format!("-{}", p.name),
        })
        .collect()
}

/// A machine that listed `pods` at `t0` and watches since.
fn watching(pods: &[(&str, &str)], t0: Instant) -> InformerMachine {
    watching_with(bounds(), pods, t0)
}

/// Lists `pods` (the list's resourceVersion is their newest), then watches, and the apiserver's
/// first bookmark shows the watch fresh.
fn watching_with(bounds: Bounds, pods: &[(&str, &str)], t0: Instant) -> InformerMachine {
    let mut m = InformerMachine::new(InitialList::Consistent, bounds, SparkStateRules::default(), t0);
    m.step(Input::ListBegan, t0);
    for (name, rv) in pods {
        m.step(Input::Listed(pod(name, rv, "Running")), t0);
    }
    let newest = pods.iter().map(|(_, rv)| rv.parse::<u64>().unwrap()).max().unwrap_or(1);
    m.step(done(&newest.to_string()), t0);
    assert!(matches!(m.phase(), Phase::Watching { .. }));
    m.step(Input::WatchBegan, t0);
    m.step(bookmark(&newest.to_string()), t0);
    m
}

/// The list is complete at `rv`.
fn done(rv: &str) -> Input {
    Input::ListDone { resource_version: rv.into() }
}

fn bookmark(rv: &str) -> Input {
    Input::Bookmark { resource_version: rv.into() }
}

fn gone() -> Input {
    Input::Failed { error: "too old resource version: Expired".into(), status: Some(410), lagging: false }
}

#[test]
fn an_unsynced_cache_is_never_ready_and_the_first_list_streams_out() {
    let t0 = Instant::now();
    let mut m = InformerMachine::new(InitialList::Consistent, bounds(), SparkStateRules::default(), t0);
    assert_eq!(m.readiness(t0, None), Err(NotReady::NeverSynced));
    m.step(Input::ListBegan, t0);
    let effects = m.step(Input::Listed(pod("p1", "1", "Running")), t0);
    assert_eq!(delivered(&effects), ["+p1@1"], "the first list's pods go out as they come");
    // Bytes on the wire do not make a half-listed cache whole.
    assert_eq!(m.readiness(at(t0, 100), Some(at(t0, 100))), Err(NotReady::NeverSynced));
    assert_eq!(m.sync_state(at(t0, 100), Some(at(t0, 100))), SyncState::Starting);
    let effects = m.step(done("1"), at(t0, 200));
    assert!(delivered(&effects).is_empty(), "nothing twice");
    assert!(matches!(effects.last(), Some(Effect::Listed(pods)) if pods.len() == 1));
    assert_eq!(m.readiness(at(t0, 200), None), Ok(()));
    assert_eq!(m.sync_state(at(t0, 200), None), SyncState::Synced);
}

#[test]
fn a_watch_keeps_the_cache_current_with_its_bytes() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1")], t0);
    // A quiet healthy watch: a byte (reconnect, bookmark) every 3 s.
    for s in 1..=10 {
        let wire = Some(at(t0, s * 3000));
        assert!(m.step(Input::Tick { wire }, at(t0, s * 3000 + 100)).is_empty());
        assert_eq!(m.readiness(at(t0, s * 3000 + 200), wire), Ok(()));
    }
    // An event is a sign of life too.
    m.step(Input::Applied(pod("p2", "2", "Pending")), at(t0, 33_000));
    assert_eq!(m.readiness(at(t0, 37_000), None), Ok(()));
    assert_eq!(m.readiness(at(t0, 38_100), None), Err(NotReady::Stale { silent_for: Duration::from_millis(5100) }));
    assert_eq!(m.relists(), 0);
}

/// A quiet watch's renewal, seen at `now`: the old (fresh) watch ends cleanly at `end`, the new
/// one answers 5 ms later and shows the apiserver's bookmark at the cache's resourceVersion.
fn renew(m: &mut InformerMachine, end: Instant, now: Instant) -> Vec<Effect> {
    let rv = m.resource_version().unwrap().to_string();
    let mut effects = m.step(Input::WatchEnded { proves: Some(end) }, now);
    effects.extend(m.step(Input::WatchBegan, now));
    effects.extend(m.step(bookmark(&rv), now));
    effects.extend(m.step(Input::Tick { wire: Some(end + Duration::from_millis(5)) }, now));
    effects
}

#[test]
fn a_quiet_watch_longer_than_the_stale_bound_is_ready_after_each_renewal_and_healthy_between() {
    let t0 = Instant::now();
    let mut m = watching_with(long_watch_bounds(), &[("p1", "1")], t0);
    let mut last = Some(t0);
    for n in 1..=3u64 {
        // Between renewals the proof ages past the stale bound: wait for the next one, no relist.
        let between = at(t0, (n - 1) * 10_000 + 9_000);
        assert!(m.step(Input::Tick { wire: last }, between).is_empty());
        assert!(matches!(m.readiness(between, last), Err(NotReady::AwaitingProof { .. })));
        assert!(m.lister_snapshot(between, last).is_err(), "never a snapshot from an unproven cache");
        assert_eq!(m.sync_state(between, last), SyncState::Synced, "a quiet watch is healthy");
        // The watch's clean end and the renewal prove the cache current again.
        let end = at(t0, n * 10_000);
        assert!(renew(&mut m, end, end + Duration::from_millis(300)).is_empty());
        last = Some(end + Duration::from_millis(5));
        assert!(m.lister_snapshot(end + Duration::from_millis(300), last).is_ok(), "ready right after renewal {n}");
    }
    // An event that follows a proof within the stale bound proves it too.
    m.step(Input::Applied(pod("p2", "2", "Pending")), at(t0, 34_000));
    assert_eq!(m.readiness(at(t0, 37_000), last), Ok(()));
    assert_eq!(m.relists(), 0);
}

/// A black hole shorter than the silence bound: what it held back arrives in a burst when it
/// ends, and only the watch's clean end says the burst is over.
#[test]
fn bytes_after_a_quiet_spell_longer_than_the_stale_bound_wait_for_the_watch_to_end_cleanly() {
    let t0 = Instant::now();
    let mut m = watching_with(long_watch_bounds(), &[("p1", "1")], t0);
    let burst = Some(at(t0, 8000));
    m.step(Input::Applied(pod("p2", "2", "Running")), at(t0, 8000));
    assert!(m.step(Input::Tick { wire: burst }, at(t0, 8100)).is_empty());
    assert!(
        matches!(m.readiness(at(t0, 8100), burst), Err(NotReady::AwaitingProof { .. })),
        "the burst's first bytes prove nothing: {:?}",
        m.readiness(at(t0, 8100), burst)
    );
    let end = at(t0, 10_000);
    renew(&mut m, end, at(t0, 10_100));
    assert_eq!(m.readiness(at(t0, 10_100), Some(end + Duration::from_millis(5))), Ok(()));
    assert_eq!(m.relists(), 0);
}

#[test]
fn a_failed_renewal_of_a_long_watch_resumes_behind_a_consistent_read_at_once() {
    let t0 = Instant::now();
    let mut m = watching_with(long_watch_bounds(), &[("p1", "1")], t0);
    let end = at(t0, 10_000);
    renew(&mut m, end, at(t0, 10_100));
    let wire = Some(end + Duration::from_millis(5));
    // The renewal due at 20 s fails: the watch resumes behind a consistent read, not at the
    // silence bound; no snapshot (proven as of 10 s), and the failure shows.
    let failed = Input::Failed { error: "connection refused".into(), status: None, lagging: false };
    assert_eq!(m.step(failed, at(t0, 20_000)), vec![Effect::Relist]);
    assert_eq!(m.readiness(at(t0, 20_100), wire), Err(NotReady::Stale { silent_for: Duration::from_millis(10_100) }));
    assert_eq!(m.sync_state(at(t0, 20_100), wire).name(), "Degraded");
    assert!(m.step(Input::Tick { wire }, at(t0, 21_700)).is_empty(), "resuming already");
}

#[test]
fn bytes_after_a_silence_longer_than_the_silence_bound_never_prove_a_long_watch() {
    let t0 = Instant::now();
    let mut m = watching_with(long_watch_bounds(), &[("p1", "1")], t0);
    // No tick ran during 12 s of silence; the resumed watch's first byte at 12 s.
    let wire = Some(at(t0, 12_000));
    assert_eq!(m.readiness(at(t0, 12_010), wire), Err(NotReady::Stale { silent_for: Duration::from_millis(12_010) }));
    assert_eq!(m.step(Input::Tick { wire }, at(t0, 12_020)), vec![Effect::Relist]);
}

/// The end of a watch that a black hole held arrives late: it proves the cache only as of the
/// watch's timeout (its send time plus `timeoutSeconds`), never as of its arrival.
#[test]
fn a_held_watch_end_proves_only_its_timeout_and_the_silence_bound_runs_from_there() {
    let t0 = Instant::now();
    let mut m = watching_with(long_watch_bounds(), &[("p1", "1")], t0);
    m.step(Input::Applied(pod("p2", "2", "Running")), at(t0, 4_000));
    // Black hole from 4.1 s to 15.5 s; the watch sent at 0 timed out at 10 s, its end held till then.
    let wire = Some(at(t0, 15_500));
    assert!(m.step(Input::WatchEnded { proves: Some(at(t0, 10_000)) }, at(t0, 15_600)).is_empty());
    assert!(m.step(Input::WatchBegan, at(t0, 15_600)).is_empty());
    assert!(m.step(Input::Tick { wire }, at(t0, 15_600)).is_empty());
    assert!(
        matches!(m.readiness(at(t0, 15_600), wire), Err(NotReady::AwaitingProof { proven_ago }) if proven_ago >= Duration::from_secs(5)),
        "proven as of 10 s, not 15.5 s: {:?}",
        m.readiness(at(t0, 15_600), wire)
    );
    // No renewal proves it in time: relist at the silence bound after the proof (21.67 s).
    assert!(m.step(Input::Tick { wire }, at(t0, 21_600)).is_empty());
    assert_eq!(m.step(Input::Tick { wire }, at(t0, 21_700)), vec![Effect::Relist]);
}

/// Defect 1 of issue 5: the outage outlasts the stale bound; when it ends, the old cache must not
/// serve until it is whole again. Issue 25: and every state the outage hid reaches Spark, as Spark's
/// own watch carries it, so the watch resumes (after a consistent read) instead of relisting.
#[test]
fn after_a_stale_spell_the_watch_resumes_and_nothing_is_served_until_it_catches_up_with_a_consistent_read() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1"), ("p2", "2")], t0);
    m.step(Input::Tick { wire: Some(at(t0, 1000)) }, at(t0, 1000));
    // Black hole from 1 s: no byte. Still within the bound at 5.9 s...
    assert!(m.step(Input::Tick { wire: Some(at(t0, 1000)) }, at(t0, 5900)).is_empty());
    assert_eq!(m.readiness(at(t0, 5900), Some(at(t0, 1000))), Ok(()));
    // ...past it at 6.1 s: the informer drops the watch, reads consistently, then resumes from 2.
    assert_eq!(m.step(Input::Tick { wire: Some(at(t0, 1000)) }, at(t0, 6100)), vec![Effect::Relist]);
    assert_eq!(m.phase().name(), "resuming after a stale spell");
    let read = ListRequest { method: ListMethod::ProofRead, from: ListFrom::MostRecent };
    assert_eq!(m.requests(), Requests::ProveThenResume { read, resume_from: "2".into() });
    assert_eq!(m.sync_state(at(t0, 6100), None).name(), "Degraded");
    // The hole ends at 15 s; the read's bytes flow for seconds (a slow link) and change nothing.
    m.step(Input::ListBegan, at(t0, 15_000));
    for (i, (name, rv)) in [("p2", "2"), ("p3", "9")].iter().enumerate() {
        let now = at(t0, 15_000 + 3000 * i as u64);
        assert!(m.step(Input::Listed(pod(name, rv, "Running")), now).is_empty(), "a proof read's pods are not news");
        m.step(Input::Tick { wire: Some(now) }, now);
        assert_eq!(m.readiness(now, Some(now)), Err(NotReady::Resuming), "the old cache never serves again");
    }
    assert!(m.step(done("12"), at(t0, 18_100)).is_empty());
    assert_eq!(m.cache().len(), 2, "the read did not touch the cache");
    // The resumed watch replays the hole, each state as an event: p1 failed, then went.
    m.step(Input::WatchBegan, at(t0, 18_200));
    assert!(delivered(&m.step(Input::Applied(pod("p2", "2", "Running")), at(t0, 18_210))).is_empty(), "a replay");
    assert_eq!(delivered(&m.step(Input::Applied(pod("p3", "9", "Pending")), at(t0, 18_220))), ["+p3@9"]);
    assert_eq!(delivered(&m.step(Input::Applied(pod("p1", "10", "Failed")), at(t0, 18_230))), ["+p1@10"]);
    assert_eq!(delivered(&m.step(Input::Deleted(pod("p1", "11", "Failed")), at(t0, 18_240))), ["-p1"]);
    // Everything is there, but nothing shows it yet: the read was at 12.
    m.step(Input::Tick { wire: Some(at(t0, 18_240)) }, at(t0, 18_300));
    assert_eq!(m.readiness(at(t0, 18_300), Some(at(t0, 18_240))), Err(NotReady::Resuming));
    assert_eq!(m.sync_state(at(t0, 18_300), Some(at(t0, 18_240))).name(), "Degraded");
    // The apiserver's bookmark at 12: every change before the read has arrived.
    m.step(bookmark("12"), at(t0, 19_200));
    let (pods, _) = m.lister_snapshot(at(t0, 19_200), Some(at(t0, 19_200))).expect("ready once caught up");
    assert_eq!(names(&pods), ["p2", "p3"], "the first snapshot after the hole is current");
    assert_eq!(m.sync_state(at(t0, 19_200), Some(at(t0, 19_200))), SyncState::Synced);
    assert_eq!((m.relists(), m.resumes()), (0, 1), "resumed, not relisted");
    assert_eq!(m.requests(), Requests::List(m.list_request()), "renewals resume as usual");
}

/// Issue 23 meets issue 25: on a highly available plane the watch may resume on an apiserver cut
/// from etcd. Its frozen watch cache is as new as ours (nothing changed through it), so it looks
/// fresh, while pods are created through the other apiserver; only a consistent read knows.
#[test]
fn a_resumed_watch_that_never_reaches_the_consistent_read_is_not_trusted_and_the_informer_relists() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1"), ("p2", "2")], t0);
    assert_eq!(m.step(Input::Tick { wire: Some(t0) }, at(t0, 5100)), vec![Effect::Relist]);
    m.step(Input::ListBegan, at(t0, 5200));
    m.step(done("20"), at(t0, 5300));
    // The frozen apiserver's watch: its bookmarks stay at 2 (ours), it ends cleanly.
    m.step(Input::WatchBegan, at(t0, 5400));
    m.step(bookmark("2"), at(t0, 6400));
    m.step(Input::WatchEnded { proves: Some(at(t0, 8400)) }, at(t0, 8400));
    m.step(Input::WatchBegan, at(t0, 8500));
    m.step(bookmark("2"), at(t0, 9500));
    for now in [6400, 9500, 10_300] {
        m.step(Input::Tick { wire: Some(at(t0, now)) }, at(t0, now));
        assert_eq!(m.readiness(at(t0, now), Some(at(t0, now))), Err(NotReady::Resuming), "at {now} ms");
        assert_eq!(m.sync_state(at(t0, now), Some(at(t0, now))).name(), "Degraded", "at {now} ms");
    }
    // Past the proof wait (5 s after the read answered): the watch lags; relist.
    assert_eq!(m.step(Input::Tick { wire: Some(at(t0, 10_300)) }, at(t0, 10_400)), vec![Effect::Relist]);
    assert!(matches!(m.phase(), Phase::Relisting { cause: RelistCause::StaleSpell, .. }), "{:?}", m.phase());
    assert_eq!(
        m.requests(),
        Requests::List(ListRequest { method: ListMethod::Paged(500), from: ListFrom::MostRecent })
    );
    assert_eq!(m.readiness(at(t0, 10_400), Some(at(t0, 10_300))), Err(NotReady::Relisting));
    let SyncState::Degraded { last_error, .. } = m.sync_state(at(t0, 10_400), None) else { panic!() };
    assert!(last_error.contains("did not reach the consistent read's resourceVersion 20"), "{last_error}");
    // The relist (a consistent read) shows the pods created through the other apiserver.
    m.step(Input::ListBegan, at(t0, 11_000));
    for (name, rv) in [("p1", "1"), ("p2", "2"), ("p3", "15")] {
        m.step(Input::Listed(pod(name, rv, "Running")), at(t0, 11_000));
    }
    assert_eq!(delivered(&m.step(done("21"), at(t0, 11_100))), ["+p3@15"]);
    assert_eq!(m.sync_state(at(t0, 11_100), Some(at(t0, 11_100))), SyncState::Synced);
    assert_eq!((m.relists(), m.resumes()), (1, 1));
}

/// The read after a stale spell may be held by the same black hole: it proves the cache only as of
/// its start, long ago when it answers. The catch-up is a sign of life all the same: no second stale
/// spell, and the resumed watch's first clean end proves the cache again.
#[test]
fn a_held_consistent_read_proves_only_its_start_and_the_next_clean_end_makes_the_cache_ready() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1")], t0);
    m.step(Input::Tick { wire: Some(t0) }, at(t0, 5100));
    m.step(Input::ListBegan, at(t0, 5200));
    m.step(done("20"), at(t0, 15_000));
    m.step(Input::WatchBegan, at(t0, 15_100));
    m.step(bookmark("20"), at(t0, 15_500));
    assert!(matches!(m.phase(), Phase::Watching { .. }), "caught up");
    for now in [15_600, 17_000, 18_400] {
        let wire = Some(at(t0, now));
        assert!(m.step(Input::Tick { wire }, at(t0, now)).is_empty(), "no stale spell at {now} ms");
        assert!(
            matches!(m.readiness(at(t0, now), wire), Err(NotReady::AwaitingProof { .. })),
            "at {now} ms: {:?}",
            m.readiness(at(t0, now), wire)
        );
        assert_eq!(m.sync_state(at(t0, now), wire), SyncState::Synced, "at {now} ms");
    }
    m.step(Input::WatchEnded { proves: Some(at(t0, 18_500)) }, at(t0, 18_500));
    assert_eq!(m.readiness(at(t0, 18_600), Some(at(t0, 18_500))), Ok(()));
    assert_eq!(m.resumes(), 1);
}

#[test]
fn a_watch_that_cannot_resume_after_a_stale_spell_relists() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1")], t0);
    m.step(Input::Tick { wire: Some(t0) }, at(t0, 5100));
    m.step(Input::ListBegan, at(t0, 5200));
    m.step(done("20"), at(t0, 5300));
    assert_eq!(m.step(gone(), at(t0, 5400)), vec![Effect::Relist]);
    assert!(matches!(m.phase(), Phase::Relisting { cause: RelistCause::StaleSpell, .. }), "{:?}", m.phase());
    assert_eq!(m.readiness(at(t0, 5400), Some(at(t0, 5400))), Err(NotReady::Relisting));
}

/// The other way the old cache could look fresh: bytes of a watch resumed after a
/// silence longer than the bound arrive before the tick that would have seen the silence.
#[test]
fn bytes_after_a_silence_longer_than_the_bound_never_freshen_the_cache() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1")], t0);
    m.step(Input::Tick { wire: Some(at(t0, 1000)) }, at(t0, 1000));
    // No tick ran during the silence (a busy runtime); the resumed watch's first byte at 7 s.
    let wire = Some(at(t0, 7000));
    assert_eq!(m.readiness(at(t0, 7010), wire), Err(NotReady::Stale { silent_for: Duration::from_millis(6010) }));
    assert_eq!(m.step(Input::Tick { wire }, at(t0, 7020)), vec![Effect::Relist]);
    assert_eq!(m.readiness(at(t0, 7030), wire), Err(NotReady::Resuming));
}

#[test]
fn a_short_410_keeps_the_old_cache_serving_only_within_the_bound_of_its_last_watch() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1")], t0);
    m.step(Input::Tick { wire: Some(at(t0, 2000)) }, at(t0, 2000));
    // A watch sent at 3 s answers 200 (a byte at 3 s), then 410 in its stream.
    let wire = Some(at(t0, 3000));
    assert_eq!(m.step(gone(), at(t0, 3000)), vec![Effect::Relist]);
    assert!(matches!(m.phase(), Phase::Relisting { cause: RelistCause::Gone, .. }), "{:?}", m.phase());
    assert_eq!(m.relists(), 1);
    // The 410's own byte proves the apiserver alive, not the cache current: as of 2 s.
    assert_eq!(m.current_as_of(wire), Some(at(t0, 2000)));
    m.step(Input::ListBegan, at(t0, 3100));
    m.step(Input::Listed(pod("p1", "1", "Running")), at(t0, 3200));
    // The relist's bytes flow; the old cache serves while it is within the bound...
    let wire = Some(at(t0, 6900));
    m.step(Input::Tick { wire }, at(t0, 6900));
    assert!(m.lister_snapshot(at(t0, 6900), wire).is_ok());
    assert_eq!(m.sync_state(at(t0, 6900), wire), SyncState::Synced, "a sign of life after the 410 ends its failure");
    // ...and not a moment longer, however busy the wire.
    let wire = Some(at(t0, 7100));
    assert_eq!(m.readiness(at(t0, 7100), wire), Err(NotReady::Stale { silent_for: Duration::from_millis(5100) }));
    assert!(m.step(Input::Tick { wire }, at(t0, 7100)).is_empty(), "already relisting");
    m.step(done("1"), at(t0, 9000));
    assert_eq!(m.readiness(at(t0, 9000), wire), Ok(()));
    assert_eq!(m.relists(), 1);
}

/// Defect 2 of the issue: the lister's "unchanged since your snapshot" must never
/// survive a relist, even when the JVM's snapshot was taken while the relist ran.
#[test]
fn a_view_taken_during_a_relist_is_never_unchanged_after_it() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1"), ("p2", "2")], t0);
    m.step(gone(), at(t0, 100));
    m.step(Input::ListBegan, at(t0, 200));
    m.step(Input::Listed(pod("p1", "1", "Running")), at(t0, 300));
    m.step(Input::Listed(pod("p2", "2", "Running")), at(t0, 300));
    m.step(Input::Listed(pod("p3", "3", "Running")), at(t0, 400));
    // The JVM's snapshot mid-relist: the old contents, within the bound.
    let (old, during) = m.lister_snapshot(at(t0, 500), None).expect("a short 410 keeps serving");
    assert_eq!(names(&old), ["p1", "p2"]);
    m.step(done("3"), at(t0, 600));
    let (pods, view) = m.lister_snapshot(at(t0, 700), None).unwrap();
    assert_ne!(view, during);
    let Some(Decoded::Snapshot { entries, .. }) = wire::decode(&encode_snapshot(&pods, during, view)) else {
        panic!("a full answer, never unchanged")
    };
    let p3 = entries.iter().find(|e| e.name == "p3").expect("the new pod is in the snapshot");
    assert!(!p3.json.is_empty(), "with its JSON: the JVM never held it");
    let p1 = entries.iter().find(|e| e.name == "p1").unwrap();
    assert!(p1.json.is_empty(), "an unchanged pod the JVM holds costs its name only");
}

#[test]
fn any_relist_invalidates_the_view_even_with_the_same_pods() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1")], t0);
    let (_, before) = m.lister_snapshot(t0, None).unwrap();
    m.step(gone(), t0);
    m.step(Input::ListBegan, t0);
    m.step(Input::Listed(pod("p1", "1", "Running")), t0);
    m.step(done("1"), t0);
    let (_, after) = m.lister_snapshot(t0, None).unwrap();
    assert_ne!(before, after);
    // Another informer's views never match this one's (a restarted informer).
    let other = watching(&[("p1", "1")], t0);
    assert_ne!(other.lister_snapshot(t0, None).unwrap().1, after);
}

#[test]
fn a_relist_delivers_the_difference_and_makes_up_only_the_deletions_it_found() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1"), ("p2", "2")], t0);
    m.step(gone(), t0);
    m.step(Input::ListBegan, t0);
    m.step(Input::Listed(pod("p1", "5", "Failed")), t0);
    let effects = m.step(done("5"), t0);
    let mut changes = delivered(&effects);
    changes.sort();
    assert_eq!(changes, ["+p1@5", "-p2"]);
    let Some(Effect::Deliver(list)) = effects.first() else { panic!("{effects:?}") };
    let p2 = list.iter().find(|c| c.pod().name == "p2").unwrap();
    assert!(p2.pod().json.decode().metadata.deletion_timestamp.is_some(), "found gone: deleted");
    assert!(list.iter().find(|c| c.pod().name == "p1").unwrap().pod().spark_state == pod::SparkState::Failed);
    assert!(matches!(effects.last(), Some(Effect::Listed(pods)) if names(pods) == ["p1"]));
}

#[test]
fn a_watch_deletion_is_delivered_as_the_apiserver_sent_it() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1"), ("p2", "2")], t0);
    // p1 left the selector (relabelled inactive): the apiserver sends it without a deletionTimestamp.
    let effects = m.step(Input::Deleted(pod("p1", "3", "Running")), t0);
    let Some(Effect::Deliver(changes)) = effects.first() else { panic!("{effects:?}") };
    let sent = changes[0].pod().json.decode();
    assert!(sent.metadata.deletion_timestamp.is_none(), "not made up");
    assert_eq!(sent.status.unwrap().phase.as_deref(), Some("Running"));
    assert!(matches!(changes[0], PodChange::Deleted(_)));
    assert_eq!(names(&m.cache().snapshot()), ["p2"]);
}

#[test]
fn auto_falls_back_to_the_watch_cache_when_streaming_is_refused() {
    let t0 = Instant::now();
    let mut m = InformerMachine::new(InitialList::Auto, bounds(), SparkStateRules::default(), t0);
    let refused = Input::Failed { error: "422 Unprocessable".into(), status: Some(422), lagging: false };
    assert_eq!(m.step(refused, t0), vec![Effect::Relist]);
    assert_eq!(m.strategy(), InitialList::WatchCache);
    assert!(matches!(m.phase(), Phase::InitialList { .. }), "{:?}", m.phase());
    assert_eq!(m.sync_state(t0, None).name(), "Degraded");
    // From then on a refusal is a failure like any other.
    let again = Input::Failed { error: "422".into(), status: Some(422), lagging: false };
    assert!(m.step(again, t0).is_empty());
}

#[test]
fn auto_falls_back_when_a_streaming_list_ends_before_its_initial_events() {
    let t0 = Instant::now();
    let mut m = InformerMachine::new(InitialList::Auto, bounds(), SparkStateRules::default(), t0);
    m.step(Input::ListBegan, t0);
    m.step(Input::Listed(pod("p1", "1", "Running")), t0);
    assert_eq!(m.step(Input::ListBegan, at(t0, 10)), vec![Effect::Relist]);
    assert_eq!(m.strategy(), InitialList::WatchCache);
}

#[test]
fn a_list_that_outlives_its_timeout_is_abandoned_and_retried() {
    let t0 = Instant::now();
    let mut m = InformerMachine::new(InitialList::Consistent, bounds(), SparkStateRules::default(), t0);
    m.step(Input::ListBegan, t0);
    assert!(m.step(Input::Tick { wire: Some(t0) }, at(t0, 59_000)).is_empty());
    assert_eq!(m.step(Input::Tick { wire: Some(t0) }, at(t0, 61_000)), vec![Effect::Relist]);
    assert_eq!(m.strategy(), InitialList::Consistent);
    let SyncState::Degraded { last_error, .. } = m.sync_state(at(t0, 61_000), None) else { panic!() };
    assert!(last_error.contains("initialListTimeout"), "{last_error}");
    // With Auto, a timed-out streaming list falls back.
    let mut auto = InformerMachine::new(InitialList::Auto, bounds(), SparkStateRules::default(), t0);
    auto.step(Input::ListBegan, t0);
    assert_eq!(auto.step(Input::Tick { wire: None }, at(t0, 61_000)), vec![Effect::Relist]);
    assert_eq!(auto.strategy(), InitialList::WatchCache);
}

#[test]
fn failures_degrade_count_and_end_only_when_the_resumed_watch_catches_up() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1")], t0);
    let refused = || Input::Failed { error: "connection refused".into(), status: None, lagging: false };
    // The watch fails: it resumes behind a consistent read, whose first attempt is refused too.
    assert_eq!(m.step(refused(), at(t0, 1000)), vec![Effect::Relist]);
    assert_eq!(m.phase().name(), "resuming after a broken watch");
    m.step(Input::ListBegan, at(t0, 1500));
    assert!(m.step(refused(), at(t0, 2000)).is_empty(), "the read retries it, after its backoff");
    let SyncState::Degraded { consecutive_failures, last_error, .. } = m.sync_state(at(t0, 2000), None) else {
        panic!()
    };
    assert_eq!((consecutive_failures, last_error.as_str()), (2, "connection refused"));
    assert_eq!(m.errors(), 2);
    // Reading, however often, changes nothing; no byte ends the failure, whoever sent it.
    for _ in 0..3 {
        let _ = m.sync_state(at(t0, 2500), Some(at(t0, 500)));
        let _ = m.readiness(at(t0, 2500), Some(at(t0, 500)));
    }
    m.step(Input::Tick { wire: Some(at(t0, 2600)) }, at(t0, 2700));
    assert_eq!(m.sync_state(at(t0, 2700), Some(at(t0, 2600))).name(), "Degraded");
    // Meanwhile the cache serves what the broken watch proved, within the stale bound.
    assert_eq!(m.readiness(at(t0, 2700), Some(at(t0, 2600))), Ok(()));
    m.step(Input::ListBegan, at(t0, 2800));
    m.step(done("5"), at(t0, 2900));
    m.step(Input::WatchBegan, at(t0, 3000));
    m.step(bookmark("5"), at(t0, 3100));
    assert_eq!(m.sync_state(at(t0, 3100), Some(at(t0, 3100))), SyncState::Synced);
    assert_eq!(m.readiness(at(t0, 7700), Some(at(t0, 7700))), Ok(()), "current as of the read (2.8 s) and on");
    assert_eq!((m.relists(), m.resumes()), (0, 0), "a break is neither a relist nor a stale spell");
}

#[test]
fn a_long_run_of_failures_after_a_break_serves_the_old_cache_only_within_the_stale_bound() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1")], t0);
    for s in 1..=4 {
        let refused = Input::Failed { error: "connection refused".into(), status: None, lagging: false };
        m.step(refused, at(t0, s * 1000));
        assert!(m.step(Input::Tick { wire: Some(t0) }, at(t0, s * 1000 + 10)).is_empty());
    }
    assert!(matches!(m.phase(), Phase::Resuming { after: ResumeCause::Break, .. }), "{:?}", m.phase());
    assert_eq!(m.readiness(at(t0, 4900), Some(t0)), Ok(()));
    assert_eq!(m.readiness(at(t0, 5100), Some(t0)), Err(NotReady::Stale { silent_for: Duration::from_millis(5100) }));
    // The apiserver answers again: the read's bytes and the resumed watch's neither serve the old
    // cache nor end Degraded, until the watch reaches the read's resourceVersion.
    m.step(Input::ListBegan, at(t0, 6000));
    m.step(Input::Tick { wire: Some(at(t0, 6100)) }, at(t0, 6200));
    assert_eq!(m.sync_state(at(t0, 6200), Some(at(t0, 6100))).name(), "Degraded");
    m.step(done("4"), at(t0, 6400));
    m.step(Input::WatchBegan, at(t0, 6500));
    m.step(bookmark("3"), at(t0, 6600));
    m.step(Input::Tick { wire: Some(at(t0, 6600)) }, at(t0, 6700));
    assert_eq!(m.sync_state(at(t0, 6700), Some(at(t0, 6600))).name(), "Degraded");
    assert!(m.readiness(at(t0, 6700), Some(at(t0, 6600))).is_err());
    m.step(bookmark("4"), at(t0, 6800));
    assert_eq!(m.sync_state(at(t0, 6800), Some(at(t0, 6800))), SyncState::Synced);
    assert_eq!(m.readiness(at(t0, 6800), Some(at(t0, 6800))), Ok(()));
}

#[test]
fn stopped_is_final() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1")], t0);
    m.step(Input::Stop, t0);
    assert!(m.step(Input::ListBegan, t0).is_empty());
    assert!(m.step(Input::Applied(pod("p2", "2", "Running")), t0).is_empty());
    assert_eq!(m.readiness(t0, Some(t0)), Err(NotReady::Stopped));
    assert_eq!(m.sync_state(t0, Some(t0)), SyncState::Stopped);
}

// Never back in time (a lagging apiserver of a highly available control plane).

/// A machine watching pods p1..p`n` (rv = their number), the cache at resourceVersion `rv`.
fn watching_at(strategy: InitialList, n: u64, rv: &str, t0: Instant) -> InformerMachine {
    let mut m = InformerMachine::new(strategy, bounds(), SparkStateRules::default(), t0);
    m.step(Input::ListBegan, t0);
    for i in 1..=n {
        m.step(Input::Listed(pod(&format!("p{i}"), &i.to_string(), "Running")), t0);
    }
    m.step(done(rv), t0);
    m.step(Input::WatchBegan, t0);
    m.step(bookmark(rv), t0);
    m
}

/// Relists `n` pods p1..p`n` answered at `rv`; returns the effects of the list's end.
fn relist(m: &mut InformerMachine, n: u64, rv: &str, now: Instant) -> Vec<Effect> {
    m.step(Input::ListBegan, now);
    for i in 1..=n {
        m.step(Input::Listed(pod(&format!("p{i}"), &i.to_string(), "Running")), now);
    }
    m.step(done(rv), now)
}

/// The scenario: 320 pods at 542; after a stale spell the relist reaches an apiserver
/// whose cache is at 522 and lacks the 20 newest pods.
#[test]
fn a_list_older_than_the_cache_is_rejected_and_nothing_is_made_up_as_deleted() {
    let t0 = Instant::now();
    let mut m = watching_at(InitialList::WatchCache, 320, "542", t0);
    assert_eq!(m.step(Input::Tick { wire: Some(t0) }, at(t0, 5100)), vec![Effect::Relist], "a stale spell");
    assert_eq!(m.list_request().from, ListFrom::MostRecent, "the read after it is a consistent read");
    // Answered from an older state all the same: rejected, read again.
    let effects = relist(&mut m, 300, "522", at(t0, 6000));
    assert_eq!(effects, vec![Effect::Relist], "rejected: read again, nothing delivered");
    assert_eq!(m.cache().len(), 320, "the cache stays as it was");
    assert_eq!(m.rejected_lists(), 1);
    assert_eq!(m.resource_version(), Some("542"));
    assert_eq!(m.readiness(at(t0, 6000), Some(at(t0, 6000))), Err(NotReady::Resuming));
    let SyncState::Degraded { last_error, .. } = m.sync_state(at(t0, 6000), None) else { panic!() };
    assert!(last_error.contains("resourceVersion 522, older than the cache's 542"), "{last_error}");
    assert!(m.is_failing(), "the next read backs off");
    // The apiserver caught up: a read at the same resourceVersion is the cache's.
    assert!(relist(&mut m, 320, "542", at(t0, 7000)).is_empty());
    assert_eq!(m.sync_state(at(t0, 7000), Some(at(t0, 7000))), SyncState::Synced);
    // A relist after 410 that reaches the lagging apiserver is rejected the same way.
    m.step(gone(), at(t0, 7100));
    assert_eq!(relist(&mut m, 300, "522", at(t0, 7200)), vec![Effect::Relist]);
    assert_eq!((m.cache().len(), m.rejected_lists()), (320, 2));
    let effects = relist(&mut m, 321, "560", at(t0, 7300));
    assert_eq!(delivered(&effects), ["+p321@321"]);
    assert_eq!(m.resource_version(), Some("560"));
}

#[test]
fn the_first_list_is_as_initial_list_says_and_every_relist_a_whole_consistent_read() {
    let t0 = Instant::now();
    let first = |strategy| InformerMachine::new(strategy, bounds(), SparkStateRules::default(), t0).list_request();
    assert_eq!(first(InitialList::WatchCache), ListRequest { method: ListMethod::Whole, from: ListFrom::Any });
    assert_eq!(first(InitialList::Auto), ListRequest { method: ListMethod::Streaming, from: ListFrom::Any });
    assert_eq!(first(InitialList::Streaming), ListRequest { method: ListMethod::Streaming, from: ListFrom::Any });
    assert_eq!(
        first(InitialList::Consistent),
        ListRequest { method: ListMethod::Paged(500), from: ListFrom::MostRecent }
    );
    for strategy in [InitialList::Auto, InitialList::Streaming, InitialList::WatchCache] {
        let mut m = watching_at(strategy, 3, "40", t0);
        let relist = ListRequest { method: ListMethod::Whole, from: ListFrom::MostRecent };
        assert_eq!(m.list_request(), relist, "{strategy:?}");
        assert_eq!(m.step(gone(), at(t0, 20)), vec![Effect::Relist]);
        assert_eq!(m.list_request(), relist, "{strategy:?}: after 410 Gone");
    }
    let consistent = watching_at(InitialList::Consistent, 3, "40", t0);
    assert_eq!(consistent.list_request(), ListRequest { method: ListMethod::Paged(500), from: ListFrom::MostRecent });
}

#[test]
fn auto_retries_a_streaming_list_that_failed_without_falling_back() {
    let t0 = Instant::now();
    let mut m = InformerMachine::new(InitialList::Auto, bounds(), SparkStateRules::default(), t0);
    m.step(Input::ListBegan, t0);
    m.step(Input::Listed(pod("p1", "1", "Running")), t0);
    let closed = Input::Failed { error: "connection closed".into(), status: None, lagging: false };
    m.step(closed, at(t0, 10));
    assert!(m.step(Input::ListBegan, at(t0, 900)).is_empty(), "a retry");
    assert_eq!(m.strategy(), InitialList::Auto);
    m.step(Input::Listed(pod("p2", "2", "Running")), at(t0, 950));
    m.step(done("2"), at(t0, 1000));
    assert_eq!(names(&m.cache().snapshot()), ["p2"], "the failed attempt's pods are dropped");
}

#[test]
fn a_replayed_event_changes_nothing_and_an_older_bookmark_proves_nothing() {
    let t0 = Instant::now();
    let mut m = watching_at(InitialList::WatchCache, 2, "20", t0);
    m.step(Input::Applied(pod("p3", "21", "Pending")), at(t0, 100));
    // The renewal resumes one revision before 21: the apiserver replays the event at 21.
    m.step(Input::WatchBegan, at(t0, 200));
    assert!(m.step(Input::Applied(pod("p3", "21", "Pending")), at(t0, 300)).is_empty());
    assert!(m.step(Input::Deleted(pod("p3", "21", "Pending")), at(t0, 300)).is_empty(), "not a deletion made twice");
    assert_eq!(m.cache().len(), 3);
    assert!(m.step(bookmark("19"), at(t0, 400)).is_empty());
    assert_eq!(m.resource_version(), Some("21"));
}

/// The closed-connection case: the watch resumes on the lagging apiserver, which
/// accepts it (a resourceVersion ahead of its cache), sends nothing and ends it cleanly.
#[test]
fn a_watch_that_ends_without_showing_the_caches_resource_version_proves_nothing_and_degrades() {
    let t0 = Instant::now();
    let mut m = InformerMachine::new(InitialList::WatchCache, long_watch_bounds(), SparkStateRules::default(), t0);
    m.step(Input::ListBegan, t0);
    m.step(Input::Listed(pod("p1", "1", "Running")), t0);
    m.step(done("542"), t0);
    m.step(Input::WatchBegan, at(t0, 10));
    // Its answer's bytes prove nothing either.
    m.step(Input::Tick { wire: Some(at(t0, 4000)) }, at(t0, 4000));
    assert_eq!(m.current_as_of(Some(at(t0, 4000))), Some(t0));
    assert_eq!(m.step(Input::WatchEnded { proves: Some(at(t0, 10_010)) }, at(t0, 10_020)), vec![Effect::Relist]);
    let SyncState::Degraded { last_error, .. } = m.sync_state(at(t0, 10_020), None) else {
        panic!("{:?}", m.sync_state(at(t0, 10_020), None))
    };
    assert!(last_error.contains("resourceVersion 542 or newer") && last_error.contains("lagging"), "{last_error}");
    assert!(matches!(m.readiness(at(t0, 10_020), None), Err(NotReady::Stale { .. })), "not proven by it");
    // A consistent read, then a watch that reaches it (the apiserver caught up): the failure ends.
    m.step(Input::ListBegan, at(t0, 10_030));
    m.step(done("560"), at(t0, 10_500));
    m.step(Input::WatchBegan, at(t0, 10_600));
    m.step(bookmark("560"), at(t0, 11_000));
    assert_eq!(m.sync_state(at(t0, 11_000), Some(at(t0, 11_000))), SyncState::Synced);
    assert_eq!(m.readiness(at(t0, 11_000), Some(at(t0, 11_000))), Ok(()), "current as of the read");
}

/// A break when nothing changed since: the consistent read answers the cache's own
/// resourceVersion, which ends the resume at once (no watch needs to show anything).
#[test]
fn a_consistent_read_at_the_caches_resource_version_ends_the_resume_at_once() {
    let t0 = Instant::now();
    let mut m = InformerMachine::new(InitialList::WatchCache, long_watch_bounds(), SparkStateRules::default(), t0);
    m.step(Input::ListBegan, t0);
    m.step(Input::Listed(pod("p1", "1", "Running")), t0);
    m.step(done("540"), t0);
    m.step(Input::WatchBegan, at(t0, 10));
    m.step(Input::Applied(pod("p2", "542", "Running")), at(t0, 20));
    assert_eq!(m.step(Input::WatchEnded { proves: None }, at(t0, 30)), vec![Effect::Relist], "the balancer closed it");
    m.step(Input::ListBegan, at(t0, 40));
    m.step(done("542"), at(t0, 50));
    assert!(matches!(m.phase(), Phase::Watching { .. }), "{:?}", m.phase());
    assert_eq!(m.sync_state(at(t0, 50), None), SyncState::Synced);
    m.step(Input::WatchBegan, at(t0, 60));
    assert!(m.step(Input::Applied(pod("p2", "542", "Running")), at(t0, 70)).is_empty(), "a replay, not news");
    assert_eq!(m.readiness(at(t0, 100), Some(at(t0, 70))), Ok(()));
}

/// A 410 after a watch that never showed itself fresh (a lagging apiserver's): the old cache is
/// as current as the watch last proved it, not as the bytes of that watch.
#[test]
fn a_410_after_a_lagging_watch_keeps_the_cache_as_current_as_last_proven() {
    let t0 = Instant::now();
    let mut m = watching_at(InitialList::WatchCache, 2, "542", t0);
    m.step(Input::Tick { wire: Some(at(t0, 1000)) }, at(t0, 1000));
    m.step(Input::WatchEnded { proves: None }, at(t0, 1100)); // the balancer closed it
    m.step(Input::WatchBegan, at(t0, 1200));
    m.step(Input::Tick { wire: Some(at(t0, 4000)) }, at(t0, 4000));
    m.step(Input::WatchEnded { proves: Some(at(t0, 4200)) }, at(t0, 4200));
    m.step(Input::WatchBegan, at(t0, 4300));
    assert_eq!(m.step(gone(), at(t0, 4300)), vec![Effect::Relist]);
    assert_eq!(m.current_as_of(Some(at(t0, 4300))), Some(at(t0, 1000)));
    assert!(m.readiness(at(t0, 6100), None).is_err(), "the lagging watch's bytes proved nothing");
}

#[test]
fn too_large_resource_version_is_a_failure_that_names_the_lagging_apiserver() {
    let t0 = Instant::now();
    let mut m = watching_at(InitialList::WatchCache, 2, "542", t0);
    m.step(Input::Tick { wire: Some(t0) }, at(t0, 5100));
    let too_large = Input::Failed {
        error: "Timeout: Too large resource version: 542, current: 522 (504 Timeout)".into(),
        status: Some(504),
        lagging: true,
    };
    assert!(m.step(too_large, at(t0, 8200)).is_empty(), "the list retries it, after its backoff");
    let SyncState::Degraded { last_error, .. } = m.sync_state(at(t0, 8200), None) else { panic!() };
    assert!(last_error.contains("older than ours (a lagging apiserver)"), "{last_error}");
    assert_eq!(m.readiness(at(t0, 8200), None), Err(NotReady::Resuming));
}

/// Issue 23's uncovered case: the balancer closes the informer's connection onto an apiserver cut
/// from etcd at the informer's own resourceVersion. Its frozen watch cache is exactly as new as
/// ours, so its bookmarks would show the resumed watch fresh, while pods are created through the
/// other apiserver. The resume after a break waits for a consistent read, which it cannot answer.
#[test]
fn a_watch_resumed_after_a_break_onto_an_apiserver_frozen_at_ours_proves_nothing() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1"), ("p2", "2")], t0);
    m.step(Input::Tick { wire: Some(at(t0, 900)) }, at(t0, 1000));
    assert_eq!(m.step(Input::WatchEnded { proves: None }, at(t0, 1000)), vec![Effect::Relist]);
    let read = ListRequest { method: ListMethod::ProofRead, from: ListFrom::MostRecent };
    assert_eq!(m.requests(), Requests::ProveThenResume { read, resume_from: "2".into() });
    assert_eq!(m.readiness(at(t0, 1100), None), Ok(()), "what the broken watch proved still serves");
    // The frozen apiserver cannot answer a consistent read.
    m.step(Input::ListBegan, at(t0, 1100));
    let timeout = Input::Failed { error: "etcdserver: request timed out".into(), status: Some(504), lagging: false };
    assert!(m.step(timeout, at(t0, 2100)).is_empty());
    assert_eq!(m.sync_state(at(t0, 2100), None).name(), "Degraded");
    // Had its watch been resumed instead, its bookmark at ours would have proved nothing.
    m.step(Input::WatchBegan, at(t0, 2200));
    m.step(bookmark("2"), at(t0, 3200));
    m.step(Input::Tick { wire: Some(at(t0, 3200)) }, at(t0, 3300));
    assert_eq!(m.sync_state(at(t0, 3300), Some(at(t0, 3200))).name(), "Degraded");
    assert!(m.readiness(at(t0, 6000), Some(at(t0, 5900))).is_err(), "stale past the bound from 0.9 s");
    // Through the other apiserver the read answers 20; the watch on the frozen one stays at 2.
    m.step(Input::ListBegan, at(t0, 6000));
    m.step(done("20"), at(t0, 6100));
    m.step(Input::WatchBegan, at(t0, 6200));
    m.step(bookmark("2"), at(t0, 7200));
    assert!(m.readiness(at(t0, 7200), Some(at(t0, 7200))).is_err());
    assert_eq!(m.step(Input::Tick { wire: Some(at(t0, 11_000)) }, at(t0, 11_200)), vec![Effect::Relist]);
    assert!(matches!(m.phase(), Phase::Relisting { cause: RelistCause::Break, .. }), "{:?}", m.phase());
    m.step(Input::ListBegan, at(t0, 11_300));
    m.step(Input::Listed(pod("p1", "1", "Running")), at(t0, 11_300));
    m.step(Input::Listed(pod("p2", "2", "Running")), at(t0, 11_300));
    m.step(Input::Listed(pod("p3", "15", "Pending")), at(t0, 11_300));
    m.step(done("20"), at(t0, 11_400));
    let (pods, _) = m.lister_snapshot(at(t0, 11_400), None).expect("current once relisted");
    assert_eq!(names(&pods), ["p1", "p2", "p3"]);
}

/// A watch that ends cleanly at its timeout after showing itself fresh is a renewal, not a break:
/// the next watch resumes at once, with no read.
#[test]
fn a_clean_renewal_of_a_fresh_watch_needs_no_consistent_read() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1")], t0);
    assert!(m.step(Input::WatchEnded { proves: Some(at(t0, 3000)) }, at(t0, 3000)).is_empty());
    assert!(matches!(m.phase(), Phase::Watching { .. }));
    assert_eq!(m.requests(), Requests::List(m.list_request()));
}

/// A break whose resume proves nothing for longer than the silence bound (a cut followed by a
/// burst of 429s, an outage) is a stale spell, as the same silence while watching is: counted
/// once, and nothing served until the resumed watch catches up. A shorter one is not.
#[test]
fn a_break_that_outlasts_the_silence_bound_is_one_stale_spell() {
    let t0 = Instant::now();
    let mut m = watching(&[("p1", "1"), ("p2", "2")], t0);
    let throttled = || Input::Failed { error: "Too Many Requests (429)".into(), status: Some(429), lagging: false };
    assert_eq!(m.step(Input::WatchEnded { proves: None }, at(t0, 100)), vec![Effect::Relist], "cut");
    for ms in (600..=4600).step_by(1000) {
        m.step(Input::ListBegan, at(t0, ms));
        assert!(m.step(throttled(), at(t0, ms + 50)).is_empty(), "the read retries in its own backoff");
        assert!(m.step(Input::Tick { wire: None }, at(t0, ms + 100)).is_empty());
    }
    assert_eq!((m.phase().name(), m.resumes()), ("resuming after a broken watch", 0), "within the bound");
    assert!(m.step(Input::Tick { wire: None }, at(t0, 5100)).is_empty(), "the read in flight goes on");
    assert_eq!((m.phase().name(), m.resumes()), ("resuming after a stale spell", 1));
    assert_eq!(m.readiness(at(t0, 5100), None), Err(NotReady::Resuming));
    m.step(Input::Tick { wire: None }, at(t0, 6100));
    assert_eq!(m.resumes(), 1, "one spell, however long");
    m.step(Input::ListBegan, at(t0, 6200));
    m.step(done("9"), at(t0, 6300));
    m.step(Input::WatchBegan, at(t0, 6400));
    m.step(Input::Applied(pod("p3", "9", "Pending")), at(t0, 6500));
    assert_eq!(m.sync_state(at(t0, 6500), Some(at(t0, 6500))), SyncState::Synced);
    let (pods, _) = m.lister_snapshot(at(t0, 6500), Some(at(t0, 6500))).expect("caught up");
    assert_eq!(names(&pods), ["p1", "p2", "p3"]);
    assert_eq!(m.relists(), 0);
}

/// A closed connection is no failure; a consistent read that then hangs (an apiserver cut from
/// etcd) degrades health once the stale bound passes, naming the read, not a silent apiserver.
#[test]
fn a_hung_consistent_read_after_a_break_degrades_health_naming_the_read() {
    let t0 = Instant::now();
    let mut m = watching_with(long_watch_bounds(), &[("p1", "1")], t0);
    assert_eq!(m.step(Input::WatchEnded { proves: None }, at(t0, 100)), vec![Effect::Relist]);
    m.step(Input::ListBegan, at(t0, 200));
    assert_eq!(m.sync_state(at(t0, 4_900), Some(at(t0, 4_900))), SyncState::Synced, "within the stale bound");
    let SyncState::Degraded { last_error, .. } = m.sync_state(at(t0, 5_100), Some(at(t0, 5_000))) else {
        panic!("{:?}", m.sync_state(at(t0, 5_100), None))
    };
    assert!(last_error.starts_with("the consistent read a resumed watch must reach has not answered"), "{last_error}");
    assert!(m.lister_snapshot(at(t0, 5_100), Some(at(t0, 5_000))).is_err());
}
