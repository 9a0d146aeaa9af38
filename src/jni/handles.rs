//! Handles: ids in registries of `Arc`s, never raw pointers, so a stale or
//! double close is an exception, never a crash. Ids are never reused.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::Mutex;

use super::errors::JniError;
use crate::informer::ExecutorPodInformer;
use crate::runtime::RuntimeLease;
use crate::services::ServiceController;

/// An informer and its share of the runtime.
pub(super) struct InformerHandle {
    pub informer: ExecutorPodInformer,
    /// The app's Service controller, subscribed to the informer, when Services
    /// are on; a services handle may share it. The informer's stop stops it.
    pub services: Option<Arc<ServiceController>>,
    pub runtime: RuntimeLease,
}

/// The app's executor Services, for the Java side to ensure synchronously and
/// to report gone executors through.
pub(super) struct ServicesHandle {
    pub controller: Arc<ServiceController>,
    /// Whether the controller is this handle's own (informer off), stopped
    /// when the handle is closed; one shared with an informer is left to the
    /// informer's close.
    pub owns_controller: bool,
    pub runtime: RuntimeLease,
}

pub(super) static INFORMERS: Lazy<Registry<InformerHandle>> = Lazy::new(|| Registry::new("informer"));
pub(super) static SERVICES: Lazy<Registry<ServicesHandle>> = Lazy::new(|| Registry::new("executor services"));

/// Ids are unique across registries, so a handle of one kind is never taken for another.
static NEXT_ID: AtomicI64 = AtomicI64::new(1);

pub(super) struct Registry<T> {
    kind: &'static str,
    open: Mutex<HashMap<i64, Arc<T>>>,
}

impl<T> Registry<T> {
    fn new(kind: &'static str) -> Self {
        Self { kind, open: Mutex::default() }
    }

    pub(super) fn register(&self, handle: T) -> i64 {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.open.lock().insert(id, Arc::new(handle));
        id
    }

    pub(super) fn get(&self, id: i64) -> Result<Arc<T>, JniError> {
        self.open.lock().get(&id).cloned().ok_or_else(|| self.closed(id))
    }

    /// Removes the handle; the caller stops it and drops it.
    pub(super) fn remove(&self, id: i64) -> Result<Arc<T>, JniError> {
        self.open.lock().remove(&id).ok_or_else(|| self.closed(id))
    }

    pub(super) fn open_count(&self) -> usize {
        self.open.lock().len()
    }

    fn closed(&self, id: i64) -> JniError {
        JniError::IllegalState(format!("spark-k8s-native {} handle {id} is closed (or was never opened)", self.kind))
    }
}
