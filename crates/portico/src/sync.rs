//! Lock helpers used across the crate. No user code runs under these locks, so a poisoned lock
//! (a panic while it was held) is recovered instead of propagated: the data it guards is still
//! consistent at every point where the crate's code can panic.

// Only the server uses read-write locks.
#![cfg_attr(not(feature = "server"), allow(dead_code))]

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks a mutex, recovering from poisoning (no user code runs under these locks).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Read-locks an `RwLock`, recovering from poisoning.
pub(crate) fn read_lock<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(|e| e.into_inner())
}

/// Write-locks an `RwLock`, recovering from poisoning.
pub(crate) fn write_lock<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(|e| e.into_inner())
}
