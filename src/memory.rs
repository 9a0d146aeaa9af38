//! The library's own heap, measured: every allocation made by this library's
//! code (the pod cache, queues, the kube client, the runtime) goes through
//! [`CountingAllocator`], so that a driver's native memory is a figure read
//! from the allocator, not an estimate. A JVM-side benchmark adds it to the
//! Java heap to count a driver's memory the same way for every contender.
//!
//! The count is one relaxed atomic add per allocation and per free, next to
//! the system allocator's own work; it has no lock and no per-thread state.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes it has handed out and not had back.
pub(crate) struct CountingAllocator;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`; only a counter is added.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            // The old block is gone and the new one is live.
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
        }
        new
    }
}

/// Bytes this library holds on the heap now (requested sizes, without the
/// system allocator's own overhead per block).
pub(crate) fn allocated_bytes() -> usize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::allocated_bytes;

    #[test]
    fn a_large_buffer_is_counted_while_it_lives() {
        // Other tests allocate concurrently: a buffer far larger than their
        // churn shows up, and goes when dropped.
        const SIZE: usize = 256 << 20;
        let before = allocated_bytes();
        let buffer = vec![0u8; SIZE]; // calloc: counted, never touched
        let during = allocated_bytes();
        assert!(during >= before + SIZE / 2, "before {before}, during {during}");
        drop(buffer);
        let after = allocated_bytes();
        assert!(after + SIZE / 2 <= during, "during {during}, after {after}");
    }
}
