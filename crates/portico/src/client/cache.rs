//! A cache of stateless-era list results, honouring `ttlMs` and invalidated by list_changed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::sync::lock;

/// (method, cursor).
type Key = (&'static str, Option<String>);

/// Cached raw results by (method, cursor), with their expiry.
#[derive(Default)]
pub(crate) struct ResultCache {
    entries: Mutex<HashMap<Key, (Instant, Bytes)>>,
}

/// Bound on entries, so a server returning endless pages cannot grow the cache without limit.
const MAX_ENTRIES: usize = 256;

impl ResultCache {
    pub(crate) fn get(&self, method: &'static str, cursor: Option<&str>) -> Option<Bytes> {
        let key = (method, cursor.map(str::to_owned));
        let mut entries = lock(&self.entries);
        match entries.get(&key) {
            Some((expires, bytes)) if *expires > Instant::now() => Some(bytes.clone()),
            Some(_) => {
                entries.remove(&key);
                None
            }
            None => None,
        }
    }

    pub(crate) fn put(&self, method: &'static str, cursor: Option<&str>, ttl_ms: u64, bytes: Bytes) {
        if ttl_ms == 0 {
            return;
        }
        let mut entries = lock(&self.entries);
        if entries.len() >= MAX_ENTRIES {
            let now = Instant::now();
            entries.retain(|_, (e, _)| *e > now);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert((method, cursor.map(str::to_owned)), (Instant::now() + Duration::from_millis(ttl_ms), bytes));
    }

    /// Forgets every page of `method`.
    pub(crate) fn invalidate(&self, method: &str) {
        lock(&self.entries).retain(|(m, _), _| *m != method);
    }
}
