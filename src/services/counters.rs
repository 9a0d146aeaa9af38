//! What the executor Services of one app did, counted as it happens and read
//! as their health.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Counters of the executor Services of one app.
#[derive(Debug, Default)]
pub struct ServiceCounters {
    pub created: AtomicU64,
    pub repaired: AtomicU64,
    /// Services of our names that another tool made, found by `ensure` and left alone.
    pub foreign: AtomicU64,
    pub deleted: AtomicU64,
    pub errors: AtomicU64,
    /// Requests sent for Services (every attempt), so a test can see that none was.
    pub requests: AtomicU64,
    pub in_flight: AtomicU64,
    pub peak_in_flight: AtomicU64,
    pub last_error: Mutex<Option<String>>,
}

/// How the executor Services are doing (their failures never stop the informer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceHealth {
    pub created: u64,
    pub repaired: u64,
    /// Services of our names that another tool made, left alone.
    pub foreign: u64,
    pub deleted: u64,
    pub errors: u64,
    pub last_error: Option<String>,
    /// Requests sent for Services so far (every attempt).
    pub requests: u64,
    /// Most requests for Services in flight at once so far.
    pub peak_in_flight: u64,
}

impl ServiceCounters {
    pub fn health(&self) -> ServiceHealth {
        ServiceHealth {
            created: self.created.load(Ordering::Relaxed),
            repaired: self.repaired.load(Ordering::Relaxed),
            foreign: self.foreign.load(Ordering::Relaxed),
            deleted: self.deleted.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            last_error: self.last_error.lock().clone(),
            requests: self.requests.load(Ordering::Relaxed),
            peak_in_flight: self.peak_in_flight.load(Ordering::Relaxed),
        }
    }
}
