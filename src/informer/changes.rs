//! The queue of pod changes between the informer (producer, a tokio task) and
//! the JVM (consumer, a Java thread blocked in `take`).
//!
//! Changes coalesce per pod: while a pod's change waits, a newer one replaces
//! it in place (latest state wins), except a state Spark's lifecycle manager
//! acts on ([`SparkState::acted_on`]: `PodFailed`, `PodSucceeded`, `PodDeleted`,
//! by Spark's own classification, so a Running pod whose Spark container
//! exited counts too): Spark counts an executor failure and logs its exit code
//! or "deleted" from those, so such a state is replaced only by a newer state
//! of the same class, and what follows it waits behind it. So the queue holds
//! at most a few entries per pod (a pod passes through few such states), a
//! slow consumer costs no memory growth, the last state of every pod is always
//! delivered, and Spark sees every acted-on state it would see from its own
//! watch, in order.
//!
//! The queue also knows how far the consumer has got: it hands a batch on (to
//! Spark's store) before it comes back for the next, so every change of a batch
//! has reached Spark once the consumer takes again or waits. The lister hands
//! Spark no full snapshot that shows a change not yet there
//! ([`PodChangeQueue::handed_on`]): Spark reads a pod missing from a full
//! snapshot as gone, so a snapshot that overtook a deleted pod's queued
//! `PodFailed` would make Spark remove that executor as missing (exit code -1)
//! and drop its failure. Nor one that a change taken meanwhile has overtaken
//! ([`PodChangeQueue::taken_after`]): the JVM hands a snapshot to Spark only if
//! no change newer than it has been taken, under the lock it hands changes on
//! under, so Spark's store never goes back in time.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::pod::{PodChange, SparkState};

/// The queue was closed (the informer stopped) and is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the informer is stopped")]
pub struct QueueClosed;

#[derive(Default)]
pub(crate) struct PodChangeQueue {
    state: Mutex<QueueState>,
    changed: Condvar,
    /// The consumer came back for more: the batch it held has been handed on.
    handed_on: Condvar,
}

/// A change waiting, in the slot its pod's first waiting change took.
struct Waiting {
    change: PodChange,
    /// The cache generation of the change that took the slot: the oldest this slot holds back.
    first_generation: u64,
}

#[derive(Default)]
struct QueueState {
    /// Entry ids, oldest first.
    order: VecDeque<u64>,
    pending: HashMap<u64, Waiting>,
    /// The newest waiting entry of each pod: the one a newer change may replace.
    newest: HashMap<String, u64>,
    next_id: u64,
    /// resourceVersion last handed to the consumer, per live pod (resync dedup).
    delivered: HashMap<String, String>,
    coalesced: u64,
    closed: bool,
    /// The newest cache generation pushed.
    pushed_through: u64,
    /// The batch the consumer took and has not come back from: its oldest cache generation
    /// and its length.
    in_hand: Option<(u64, usize)>,
    /// A consumer has taken changes; until one has, nothing waits for it.
    consumer: bool,
    /// The newest cache generation of a change the consumer has taken.
    taken_through: u64,
}

impl QueueState {
    /// Every change up to cache generation `generation` pushed, taken, and handed on.
    fn handed_on(&self, generation: u64) -> bool {
        !self.consumer
            || (self.pushed_through >= generation
                && self.in_hand.is_none_or(|(oldest, _)| oldest > generation)
                && self.pending.values().all(|w| w.first_generation > generation))
    }
}

impl PodChangeQueue {
    pub(crate) fn push(&self, change: PodChange) {
        let mut state = self.state.lock();
        if state.closed {
            return;
        }
        let state = &mut *state;
        let name = change.pod().name.clone();
        state.pushed_through = state.pushed_through.max(change.pod().generation);
        let replaceable = state.newest.get(&name).copied().filter(|id| {
            let waiting = spark_state(&state.pending[id].change);
            // A state Spark acts on is only replaced by a newer state of its class.
            !waiting.acted_on() || waiting == spark_state(&change)
        });
        match replaceable {
            Some(id) => {
                state.pending.get_mut(&id).expect("a newest id waits").change = change;
                state.coalesced += 1;
            }
            None => {
                let id = state.next_id;
                state.next_id += 1;
                let first_generation = change.pod().generation;
                state.pending.insert(id, Waiting { change, first_generation });
                state.order.push_back(id);
                state.newest.insert(name, id);
            }
        }
        self.changed.notify_one();
    }

    /// Takes up to `max` changes, oldest first, waiting up to `timeout` for the
    /// first. An empty batch means the timeout passed. One consumer: it hands each
    /// batch on before it takes again.
    pub(crate) fn take(&self, max: usize, timeout: Duration) -> Result<Vec<PodChange>, QueueClosed> {
        let deadline = deadline_after(timeout);
        let mut state = self.state.lock();
        state.consumer = true;
        if state.in_hand.take().is_some() {
            self.handed_on.notify_all();
        }
        while state.order.is_empty() {
            if state.closed {
                return Err(QueueClosed);
            }
            if self.changed.wait_until(&mut state, deadline).timed_out() {
                break;
            }
        }
        let n = state.order.len().min(max.max(1));
        let mut batch = Vec::with_capacity(n);
        for _ in 0..n {
            let id = state.order.pop_front().expect("n <= len");
            let Waiting { change, first_generation } = state.pending.remove(&id).expect("every queued id has a change");
            let (oldest, len) = state.in_hand.unwrap_or((first_generation, 0));
            state.in_hand = Some((oldest.min(first_generation), len + 1));
            state.taken_through = state.taken_through.max(change.pod().generation);
            let name = change.pod().name.clone();
            if state.newest.get(&name) == Some(&id) {
                state.newest.remove(&name);
            }
            match &change {
                PodChange::Applied(p) => state.delivered.insert(name, p.resource_version.clone()),
                PodChange::Deleted(_) => state.delivered.remove(&name),
            };
            batch.push(change);
        }
        Ok(batch)
    }

    /// Whether every change up to cache generation `generation` has been handed on by the
    /// consumer (true while none has taken anything).
    pub(crate) fn handed_on(&self, generation: u64) -> bool {
        self.state.lock().handed_on(generation)
    }

    /// Waits until [`Self::handed_on`] holds, the queue closes, or `deadline`; on the deadline,
    /// how many changes still wait or are in the consumer's hand.
    pub(crate) fn await_handed_on(&self, generation: u64, deadline: Instant) -> Result<(), usize> {
        let mut state = self.state.lock();
        while !state.handed_on(generation) && !state.closed {
            if self.handed_on.wait_until(&mut state, deadline).timed_out() {
                return Err(state.order.len() + state.in_hand.map_or(0, |(_, len)| len));
            }
        }
        Ok(())
    }

    /// Whether the consumer has taken a change newer than cache generation `generation`: it may
    /// be handing it to Spark right now, so a full snapshot of that generation handed to Spark
    /// after it would take Spark's store back in time.
    pub(crate) fn taken_after(&self, generation: u64) -> bool {
        self.state.lock().taken_through > generation
    }

    /// Whether this version of the pod was handed to the consumer last.
    pub(crate) fn was_delivered(&self, name: &str, resource_version: &str) -> bool {
        self.state.lock().delivered.get(name).is_some_and(|rv| rv == resource_version)
    }

    /// Wakes every waiting consumer; later pushes are dropped.
    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.changed.notify_all();
        self.handed_on.notify_all();
    }

    /// Changes waiting.
    pub(crate) fn len(&self) -> usize {
        self.state.lock().order.len()
    }

    /// Changes replaced by a newer change of the same pod before delivery.
    pub(crate) fn coalesced(&self) -> u64 {
        self.state.lock().coalesced
    }
}

fn spark_state(change: &PodChange) -> SparkState {
    change.pod().spark_state
}

/// `now + timeout`, or about a year from now when that would overflow
/// (a caller may pass Long.MAX_VALUE milliseconds).
pub(crate) fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout).unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod::CachedPod;
    use std::sync::Arc;

    /// A pod Spark classifies as `PodFailed`.
    fn terminal_change(name: &str, rv: &str) -> PodChange {
        pod_change(name, rv, false, SparkState::Failed)
    }

    fn change(name: &str, rv: &str, deleted: bool) -> PodChange {
        pod_change(name, rv, deleted, if deleted { SparkState::Deleted } else { SparkState::Running })
    }

    fn pod_change(name: &str, rv: &str, deleted: bool, spark_state: SparkState) -> PodChange {
        let pod = Arc::new(CachedPod {
            name: name.into(),
            uid: format!("uid-{name}"),
            resource_version: rv.into(),
            generation: rv.parse().unwrap(),
            exec_id: None,
            spark_state,
            json: b"{}"[..].into(),
        });
        if deleted {
            PodChange::Deleted(pod)
        } else {
            PodChange::Applied(pod)
        }
    }

    fn rvs(batch: &[PodChange]) -> Vec<String> {
        batch.iter().map(|c| format!("{}@{}", c.pod().name, c.pod().resource_version)).collect()
    }

    #[test]
    fn changes_of_one_pod_coalesce_in_place_latest_wins() {
        let q = PodChangeQueue::default();
        q.push(change("a", "1", false));
        q.push(change("b", "2", false));
        q.push(change("a", "3", false));
        q.push(change("a", "4", true));
        assert_eq!(q.len(), 2);
        assert_eq!(q.coalesced(), 2);
        let batch = q.take(10, Duration::ZERO).unwrap();
        assert_eq!(rvs(&batch), ["a@4", "b@2"]);
        assert!(matches!(batch[0], PodChange::Deleted(_)));
    }

    #[test]
    fn a_slow_consumer_still_sees_failed_before_deleted() {
        let q = PodChangeQueue::default();
        q.push(change("a", "1", false));
        q.push(terminal_change("a", "2"));
        q.push(change("a", "3", true));
        q.push(change("b", "4", false));
        assert_eq!(rvs(&q.take(10, Duration::ZERO).unwrap()), ["a@2", "a@3", "b@4"]);
        // Running with the Spark container exited 137 is `PodFailed` to Spark: a deletion that
        // follows (`PodDeleted`) waits behind it, so Spark counts the failure and logs the code.
        q.push(pod_change("d", "11", false, SparkState::Running));
        q.push(pod_change("d", "12", false, SparkState::Failed));
        q.push(pod_change("d", "13", true, SparkState::Deleted));
        assert_eq!(rvs(&q.take(10, Duration::ZERO).unwrap()), ["d@12", "d@13"]);
        // A newer version of the terminal state replaces it; what follows coalesces behind it.
        q.push(terminal_change("c", "5"));
        q.push(terminal_change("c", "6"));
        q.push(change("c", "7", true));
        q.push(change("c", "8", true));
        assert_eq!(q.len(), 2);
        assert_eq!(rvs(&q.take(10, Duration::ZERO).unwrap()), ["c@6", "c@8"]);
        // Once the terminal state is delivered, the pod coalesces as usual again.
        q.push(change("c", "9", false));
        q.push(change("c", "10", false));
        assert_eq!(rvs(&q.take(10, Duration::ZERO).unwrap()), ["c@10"]);
    }

    const STATES: [SparkState; 7] = [
        SparkState::Pending,
        SparkState::Running,
        SparkState::Failed,
        SparkState::Succeeded,
        SparkState::Deleted,
        SparkState::Terminating,
        SparkState::Unknown,
    ];

    /// The states Spark acts on, in order, each once per run of the same state.
    fn acted_on(states: impl IntoIterator<Item = SparkState>) -> Vec<SparkState> {
        let mut seen: Vec<SparkState> = states.into_iter().filter(|s| s.acted_on()).collect();
        seen.dedup();
        seen
    }

    proptest::proptest! {
        /// Whatever the consumer's pace: each pod's last state is delivered last, and the states
        /// Spark acts on reach it as they would from Spark's own watch, which delivers every event.
        #[test]
        fn a_slow_consumer_sees_every_state_spark_acts_on_in_order(
            steps in proptest::collection::vec((0usize..3, 0usize..STATES.len(), 0usize..3), 1..80)
        ) {
            let q = PodChangeQueue::default();
            let mut pushed: HashMap<String, Vec<SparkState>> = HashMap::new();
            let mut delivered: HashMap<String, Vec<SparkState>> = HashMap::new();
            let mut take = |q: &PodChangeQueue, max: usize| {
                for c in q.take(max, Duration::ZERO).unwrap() {
                    delivered.entry(c.pod().name.clone()).or_default().push(c.pod().spark_state);
                }
            };
            for (rv, (pod, state, taken)) in steps.into_iter().enumerate() {
                let (name, state) = (format!("p{pod}"), STATES[state]);
                q.push(pod_change(&name, &(rv + 1).to_string(), state == SparkState::Deleted, state));
                pushed.entry(name).or_default().push(state);
                if taken > 0 {
                    take(&q, taken);
                }
            }
            take(&q, usize::MAX);
            for (name, states) in &pushed {
                let got = &delivered[name];
                proptest::prop_assert_eq!(got.last(), states.last(), "{}: the last state", name);
                proptest::prop_assert_eq!(acted_on(got.clone()), acted_on(states.clone()), "{}", name);
            }
        }
    }

    #[test]
    fn memory_stays_bounded_by_the_number_of_pods() {
        let q = PodChangeQueue::default();
        for rv in 1..=10_000 {
            q.push(change(&format!("p{}", rv % 50), &rv.to_string(), false));
        }
        assert_eq!(q.len(), 50);
        let batch = q.take(1000, Duration::ZERO).unwrap();
        assert_eq!(batch.len(), 50);
        assert!(batch.iter().all(|c| c.pod().generation > 10_000 - 50), "only the last state of each pod");
    }

    #[test]
    fn take_respects_max_and_order() {
        let q = PodChangeQueue::default();
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            q.push(change(name, &(i + 1).to_string(), false));
        }
        assert_eq!(rvs(&q.take(2, Duration::ZERO).unwrap()), ["a@1", "b@2"]);
        assert_eq!(rvs(&q.take(2, Duration::ZERO).unwrap()), ["c@3"]);
    }

    #[test]
    fn take_times_out_with_an_empty_batch_and_wakes_on_push() {
        let q = Arc::new(PodChangeQueue::default());
        let began = Instant::now();
        assert!(q.take(1, Duration::from_millis(50)).unwrap().is_empty());
        assert!(began.elapsed() >= Duration::from_millis(50));
        let producer = {
            let q = q.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                q.push(change("a", "1", false));
            })
        };
        let batch = q.take(1, Duration::from_secs(10)).unwrap();
        assert_eq!(rvs(&batch), ["a@1"]);
        producer.join().unwrap();
    }

    #[test]
    fn close_wakes_a_blocked_consumer_promptly() {
        let q = Arc::new(PodChangeQueue::default());
        let consumer = {
            let q = q.clone();
            std::thread::spawn(move || {
                let began = Instant::now();
                (q.take(1, Duration::from_secs(30)), began.elapsed())
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        q.close();
        let (result, waited) = consumer.join().unwrap();
        assert_eq!(result, Err(QueueClosed));
        assert!(waited < Duration::from_secs(5));
    }

    /// The lister's rule (module doc): nothing counts as handed on until the consumer comes back
    /// for the next batch; before any consumer takes, nothing waits for one.
    #[test]
    fn a_change_is_handed_on_only_once_the_consumer_comes_back() {
        let q = PodChangeQueue::default();
        q.push(change("a", "1", false));
        q.push(change("b", "2", false));
        assert!(q.handed_on(2), "no consumer yet");
        assert_eq!(rvs(&q.take(1, Duration::ZERO).unwrap()), ["a@1"]);
        assert!(!q.handed_on(1), "a is in the consumer's hand");
        assert!(q.handed_on(0));
        assert_eq!(rvs(&q.take(10, Duration::ZERO).unwrap()), ["b@2"]);
        assert!(q.handed_on(1) && !q.handed_on(2), "a handed on, b in hand");
        assert!(q.take(10, Duration::ZERO).unwrap().is_empty());
        assert!(q.handed_on(2));
        assert!(!q.handed_on(3), "not pushed yet");
        // A newer change in an old slot holds back what that slot held first.
        q.push(change("c", "3", false));
        q.push(change("c", "4", false));
        assert!(!q.handed_on(3) && !q.handed_on(4));
        assert_eq!(rvs(&q.take(10, Duration::ZERO).unwrap()), ["c@4"]);
        q.take(10, Duration::ZERO).unwrap();
        assert!(q.handed_on(4));
    }

    #[test]
    fn the_lister_waits_for_the_consumer_and_says_how_many_changes_are_behind() {
        let q = Arc::new(PodChangeQueue::default());
        q.take(1, Duration::ZERO).unwrap(); // a consumer
        for rv in 1..=3 {
            q.push(change(&format!("p{rv}"), &rv.to_string(), false));
        }
        let soon = Instant::now() + Duration::from_millis(100);
        assert_eq!(q.await_handed_on(3, soon), Err(3), "a stalled consumer");
        let consumer = {
            let q = q.clone();
            std::thread::spawn(move || {
                let batch = q.take(10, Duration::ZERO).unwrap();
                std::thread::sleep(Duration::from_millis(300)); // handing it to Spark, slowly
                q.take(10, Duration::from_millis(10)).unwrap();
                batch.len()
            })
        };
        let began = Instant::now();
        assert_eq!(q.await_handed_on(3, Instant::now() + Duration::from_secs(10)), Ok(()));
        assert!(began.elapsed() >= Duration::from_millis(250), "not before the batch was handed on");
        assert_eq!(consumer.join().unwrap(), 3);
        q.close();
        assert_eq!(q.await_handed_on(9, Instant::now() + Duration::from_secs(10)), Ok(()), "closed: no wait");
    }

    #[test]
    fn a_change_taken_after_a_snapshot_supersedes_it() {
        let q = PodChangeQueue::default();
        q.push(change("p1", "1", false));
        let first = q.take(10, Duration::ZERO).unwrap()[0].pod().generation;
        // A snapshot of the cache as of that change: nothing newer taken yet.
        assert!(!q.taken_after(first));
        q.push(change("p1", "2", false));
        assert!(!q.taken_after(first), "waiting is not taken: its snapshot may still go to Spark");
        let second = q.take(10, Duration::ZERO).unwrap()[0].pod().generation;
        assert!(q.taken_after(first), "the consumer may be handing p1@2 to Spark: p1@1's snapshot is too old");
        assert!(!q.taken_after(second));
    }

    #[test]
    fn delivered_versions_are_remembered_for_resync() {
        let q = PodChangeQueue::default();
        q.push(change("a", "1", false));
        assert!(!q.was_delivered("a", "1"));
        q.take(10, Duration::ZERO).unwrap();
        assert!(q.was_delivered("a", "1"));
        assert!(!q.was_delivered("a", "2"));
        q.push(change("a", "2", true));
        q.take(10, Duration::ZERO).unwrap();
        assert!(!q.was_delivered("a", "2"));
    }
}
