//! Handles: ids in a registry of `Arc`s, never raw pointers, so a stale or
//! double close is an exception, never a crash. Ids are not reused.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::Mutex;

use super::errors::JniError;
use crate::informer::ExecutorPodInformer;
use crate::runtime::RuntimeLease;

/// An informer and its share of the runtime.
pub struct InformerHandle {
    pub informer: ExecutorPodInformer,
    pub runtime: RuntimeLease,
}

static REGISTRY: Lazy<Mutex<HashMap<i64, Arc<InformerHandle>>>> = Lazy::new(Mutex::default);
static NEXT_ID: AtomicI64 = AtomicI64::new(1);

pub fn register(handle: InformerHandle) -> i64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    REGISTRY.lock().insert(id, Arc::new(handle));
    id
}

pub fn get(id: i64) -> Result<Arc<InformerHandle>, JniError> {
    REGISTRY.lock().get(&id).cloned().ok_or_else(|| closed(id))
}

/// Removes the handle; the caller stops it and drops it.
pub fn remove(id: i64) -> Result<Arc<InformerHandle>, JniError> {
    REGISTRY.lock().remove(&id).ok_or_else(|| closed(id))
}

/// Open handles (for leak checks).
pub fn open_count() -> usize {
    REGISTRY.lock().len()
}

fn closed(id: i64) -> JniError {
    JniError::IllegalState(format!("spark-k8s-native informer handle {id} is closed (or was never opened)"))
}
