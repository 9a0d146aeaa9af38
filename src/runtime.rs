//! The one tokio runtime that drives every informer of the process, built on
//! first use and shut down, with a bound, when the last user lets it go, so
//! that closing every informer leaves no thread behind.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::runtime::Runtime;

/// How long shutting the runtime down may wait for its tasks.
pub(crate) const SHUTDOWN_BOUND: Duration = Duration::from_secs(5);

static SHARED: Mutex<Option<Arc<Runtime>>> = Mutex::new(None);

/// A share of the runtime; the runtime lives while any lease does.
pub(crate) struct RuntimeLease(Option<Arc<Runtime>>);

impl RuntimeLease {
    /// A lease on the shared runtime, building it if needed.
    pub(crate) fn acquire() -> std::io::Result<RuntimeLease> {
        let mut shared = SHARED.lock();
        if let Some(runtime) = shared.as_ref() {
            return Ok(RuntimeLease(Some(runtime.clone())));
        }
        let runtime = Arc::new(
            tokio::runtime::Builder::new_multi_thread()
                // Two workers: the informers wait on the network, and the driver's JVM needs the cores.
                .worker_threads(2)
                .max_blocking_threads(4)
                .thread_name("spark-k8s-rt") // at most 15 characters show in /proc and top -H
                .enable_all()
                .build()?,
        );
        *shared = Some(runtime.clone());
        Ok(RuntimeLease(Some(runtime)))
    }

    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        self.0.as_ref().expect("held until drop").handle()
    }

    /// Runs a future to completion from a thread outside the runtime (a JVM thread).
    pub(crate) fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.handle().block_on(future)
    }
}

impl Drop for RuntimeLease {
    fn drop(&mut self) {
        let Some(mine) = self.0.take() else { return };
        let mut shared = SHARED.lock();
        // Two references: this lease and the shared slot. Then this is the last user.
        if Arc::strong_count(&mine) == 2 {
            *shared = None;
            drop(shared);
            if let Ok(runtime) = Arc::try_unwrap(mine) {
                runtime.shutdown_timeout(SHUTDOWN_BOUND);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_for_threads(want: impl Fn(usize) -> bool) -> usize {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let n = native_threads();
            if want(n) || std::time::Instant::now() > deadline {
                return n;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn native_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .map(|tasks| {
                tasks
                    .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                    .filter(|name| name.trim() == "spark-k8s-rt")
                    .count()
            })
            .unwrap_or(0)
    }

    #[test]
    fn the_last_lease_shuts_the_runtime_down_and_its_threads_end() {
        let a = RuntimeLease::acquire().unwrap();
        let b = RuntimeLease::acquire().unwrap();
        assert_eq!(a.block_on(async { 1 + 1 }), 2);
        assert!(wait_for_threads(|n| n >= 1) >= 1, "the workers are named spark-k8s-rt");
        drop(a);
        assert_eq!(b.block_on(async { 3 }), 3, "still running while a lease is held");
        drop(b);
        assert_eq!(wait_for_threads(|n| n == 0), 0);
        // And it comes back when needed.
        let c = RuntimeLease::acquire().unwrap();
        assert_eq!(c.block_on(async { 4 }), 4);
    }
}
