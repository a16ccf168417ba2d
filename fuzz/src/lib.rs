//! What every fuzz target shares: a global allocator that counts the bytes live during one
//! execution and aborts past `portico_fuzz_checks::alloc_bound(input length)`, and the macro
//! that declares a target around a check.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts live and peak bytes on top of the system allocator.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

fn grew(n: usize) {
    let live = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(live, Ordering::Relaxed);
    let limit = LIMIT.load(Ordering::Relaxed);
    if live > limit {
        // No allocation here: report and abort, which libFuzzer records as a crash.
        LIMIT.store(usize::MAX, Ordering::Relaxed);
        eprintln!("allocation bound exceeded: {live} bytes live, bound {limit}");
        std::process::abort();
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `check` on `data` with the allocation bound armed: at most
/// `alloc_bound(data.len())` bytes more than were live when it started.
pub fn run(data: &[u8], check: fn(&[u8])) {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        // A failed check's report (backtrace included) is not held to the bound.
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            LIMIT.store(usize::MAX, Ordering::Relaxed);
            report(info);
        }));
    });
    let base = LIVE.load(Ordering::Relaxed);
    LIMIT.store(base.saturating_add(portico_fuzz_checks::alloc_bound(data.len())), Ordering::Relaxed);
    check(data);
    LIMIT.store(usize::MAX, Ordering::Relaxed);
}

/// Declares the fuzz target around a check, with the counting allocator.
#[macro_export]
macro_rules! target {
    ($check:path) => {
        #[global_allocator]
        static ALLOC: $crate::Counting = $crate::Counting;
        libfuzzer_sys::fuzz_target!(|data: &[u8]| $crate::run(data, $check));
    };
}
