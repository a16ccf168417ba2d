//! Gives back the start-up code's pages once `portico serve` is up.
//!
//! Starting a gateway runs code it never runs again: the config's parsers, the database's
//! migrations, clap, the first listing of every upstream. Their pages stay mapped, and the
//! kernel maps 64 KiB around each page a fault touches, so an idle gateway with ten upstreams
//! held about 7 MB of file pages (its own code and read-only data, libc, libm) of which its
//! idling uses a fraction. Like the kernel's own "freeing unused kernel memory" after boot,
//! [`release_startup_pages`] drops this process's mappings of those pages (`MADV_DONTNEED`): the
//! code it runs afterwards faults back in from the page cache, where the pages stay until the
//! kernel needs the room. The linker lays out the code an idle and a serving gateway run first
//! (`order.txt`, `scripts/order-file.sh`), so what comes back is a few blocks, not the start-up
//! code's spread.
//!
//! Only pages that are the file's own are dropped: mappings that are file-backed, not writable,
//! and hold no private copy of a page (relocated read-only data, `RELRO`, has them and is kept).
//! Linux only; `PORTICO_RELEASE_STARTUP_PAGES=0` turns it off.

/// Bumped by each [`release_startup_pages`]: a runtime thread that has not yet seen the new
/// value gives back its own stack's unused pages the next time it parks
/// ([`release_stack_when_asked`]).
static STACK_ROUND: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

thread_local! {
    /// The last [`STACK_ROUND`] this thread acted on.
    static STACK_SEEN: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// This thread's stack range (lowest address, size), read when it started
    /// ([`note_stack`]): reading it later would run the C library's code for it, and its
    /// allocator's, after their pages were given back.
    static STACK_RANGE: std::cell::Cell<Option<(usize, usize)>> = const { std::cell::Cell::new(None) };
}

/// For the runtime's `on_thread_start`: notes the thread's stack range for later.
pub(crate) fn note_stack() {
    STACK_RANGE.with(|r| r.set(stack_range()));
}

/// How much of the stack below the caller's frame is kept: the frames of the calls made from
/// here (this function's own, `madvise`'s) and the red zone below them.
const STACK_MARGIN: usize = 16 * 1024;

/// For the runtime's `on_thread_park`: if a release was asked for since this thread last
/// looked, drops the pages of its stack below the current frame (what start-up's deepest calls
/// touched), which read as zeros again if a later call goes that deep. One relaxed load
/// otherwise.
pub(crate) fn release_stack_when_asked() {
    let round = STACK_ROUND.load(std::sync::atomic::Ordering::Relaxed);
    if round == 0 || STACK_SEEN.with(std::cell::Cell::get) == round {
        return;
    }
    STACK_SEEN.with(|seen| seen.set(round));
    release_stack();
}

/// Drops this thread's stack pages below the current frame, less [`STACK_MARGIN`]. Returns the
/// address range given back, `None` where it does nothing.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn release_stack() -> Option<std::ops::Range<usize>> {
    const PAGE: usize = 4096;
    let here = std::hint::black_box(0u8);
    let sp = std::ptr::addr_of!(here) as usize;
    let (low, size) = STACK_RANGE.with(std::cell::Cell::get).or_else(stack_range)?;
    // The stack grows down from `low + size`; the lowest page may be the guard.
    let start = low.checked_add(PAGE)?;
    let end = sp.checked_sub(STACK_MARGIN)? & !(PAGE - 1);
    if sp > low.saturating_add(size) || end <= start {
        return None;
    }
    // SAFETY: `start..end` lies in this thread's own stack, below the live frames (the caller's,
    // this one's and the margin for the calls it makes): no live data is there, and a page
    // dropped reads as zeros when a later, deeper call touches it again.
    let done = unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
    (done == 0).then_some(start..end)
}

#[cfg(not(target_os = "linux"))]
fn release_stack() -> Option<std::ops::Range<usize>> {
    None
}

/// The calling thread's stack: its lowest address and its size.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn stack_range() -> Option<(usize, usize)> {
    // SAFETY: `pthread_getattr_np` fills the zeroed attribute object for the calling thread,
    // which is destroyed after reading its stack range; both take valid pointers to locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let got = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (got == 0).then_some((addr as usize, size))
    }
}

#[cfg(not(target_os = "linux"))]
fn stack_range() -> Option<(usize, usize)> {
    None
}

/// Gives back the calling thread's stack below its frame now: the main thread's, once parsing
/// the command line and setting up are done and it only waits for the runtime.
pub(crate) fn release_this_stack() {
    if enabled() {
        let _ = release_stack();
    }
}

/// Unless `PORTICO_RELEASE_STARTUP_PAGES=0`.
fn enabled() -> bool {
    !std::env::var("PORTICO_RELEASE_STARTUP_PAGES").is_ok_and(|v| v == "0")
}

/// What was given back.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Released {
    /// Mappings dropped.
    pub(crate) mappings: usize,
    /// Resident bytes they held just before.
    pub(crate) bytes: u64,
}

/// Drops this process's mappings of clean file pages (see the module's documentation).
/// Returns `None` where it does nothing: not Linux, turned off, or `/proc` unreadable.
pub(crate) fn release_startup_pages() -> Option<Released> {
    if !enabled() {
        return None;
    }
    STACK_ROUND.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    release()
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn release() -> Option<Released> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut released = Released::default();
    for m in clean_file_mappings(&smaps) {
        // SAFETY: the range is a whole mapping of this process, file-backed, not writable and
        // with no private page (checked above): dropping it loses nothing, since the next access
        // reads the same bytes from the file again. `madvise` changes no memory Rust owns.
        let done = unsafe { libc::madvise(m.start as *mut libc::c_void, m.end - m.start, libc::MADV_DONTNEED) };
        if done == 0 {
            released.mappings += 1;
            released.bytes += m.rss_kb * 1024;
        }
    }
    Some(released)
}

#[cfg(not(target_os = "linux"))]
fn release() -> Option<Released> {
    None
}

/// One mapping of `/proc/self/smaps` that can be dropped.
#[derive(Debug, PartialEq, Eq)]
struct Mapping {
    start: usize,
    end: usize,
    rss_kb: u64,
}

/// The mappings in `smaps` that are backed by a file (a path), not writable, resident, and hold
/// no anonymous (privately copied) page.
fn clean_file_mappings(smaps: &str) -> Vec<Mapping> {
    let mut out = Vec::new();
    // The mapping being read: its range, whether it qualifies so far, and its resident size.
    let mut current: Option<(usize, usize, bool, u64)> = None;
    let finish = |current: &mut Option<(usize, usize, bool, u64)>, out: &mut Vec<Mapping>| {
        if let Some((start, end, true, rss_kb)) = current.take()
            && rss_kb > 0
        {
            out.push(Mapping { start, end, rss_kb });
        }
    };
    for line in smaps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(first) = fields.next() else { continue };
        if let Some((a, b)) = first.split_once('-')
            && let (Ok(start), Ok(end)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
        {
            // A mapping's header: `start-end perms offset dev inode [path]`.
            finish(&mut current, &mut out);
            let perms = fields.next().unwrap_or("");
            let path = fields.nth(3).unwrap_or("");
            let candidate = path.starts_with('/') && perms.starts_with('r') && !perms.contains('w') && end > start;
            current = Some((start, end, candidate, 0));
            continue;
        }
        let Some((_, _, candidate, rss_kb)) = current.as_mut() else { continue };
        let value = fields.next().and_then(|v| v.parse::<u64>().ok());
        match (first, value) {
            ("Rss:", Some(kb)) => *rss_kb = kb,
            ("Anonymous:", Some(kb)) if kb > 0 => *candidate = false,
            ("Anonymous:", None) => *candidate = false,
            _ => {}
        }
    }
    finish(&mut current, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d0a0000000-55d0a0400000 r--p 00000000 fe:00 42 /usr/bin/portico
Size:               4096 kB
Rss:                 512 kB
Anonymous:             0 kB
55d0a0400000-55d0a1400000 r-xp 00400000 fe:00 42 /usr/bin/portico
Rss:                3000 kB
Anonymous:             0 kB
55d0a1400000-55d0a1460000 r--p 01400000 fe:00 42 /usr/bin/portico
Rss:                 384 kB
Anonymous:           384 kB
55d0a1460000-55d0a1470000 rw-p 01460000 fe:00 42 /usr/bin/portico
Rss:                  40 kB
Anonymous:            40 kB
7f0000000000-7f0000100000 r-xp 00000000 fe:00 7 /usr/lib/x86_64-linux-gnu/libc.so.6 (deleted)
Rss:                   0 kB
Anonymous:             0 kB
7f0000200000-7f0000300000 r-xp 00026000 fe:00 7 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                1196 kB
Anonymous:             0 kB
7f0000400000-7f0000600000 rw-p 00000000 00:00 0
Rss:                 96 kB
Anonymous:            96 kB
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
Rss:                   8 kB
Anonymous:             0 kB
7f0000700000-7f0000708000 rw-s 00000000 fe:00 9 /var/lib/portico/audit.db-shm
Rss:                  32 kB
Anonymous:             0 kB
";

    #[test]
    fn only_clean_resident_read_only_file_mappings_are_chosen() {
        let chosen = clean_file_mappings(SMAPS);
        let ranges: Vec<_> = chosen.iter().map(|m| (m.start, m.end, m.rss_kb)).collect();
        assert_eq!(
            ranges,
            vec![
                (0x55d0a0000000, 0x55d0a0400000, 512),
                (0x55d0a0400000, 0x55d0a1400000, 3000),
                (0x7f0000200000, 0x7f0000300000, 1196),
            ],
            "relocated read-only data, writable data, the heap, the vDSO, a shared writable file \
             and a mapping with nothing resident are all left alone"
        );
    }

    #[test]
    fn a_mapping_whose_anonymous_count_cannot_be_read_is_kept() {
        let smaps = "1000-2000 r-xp 00000000 fe:00 1 /bin/x\nRss: 4 kB\nAnonymous: ? kB\n";
        assert!(clean_file_mappings(smaps).is_empty());
        let smaps = "1000-2000 r-xp 00000000 fe:00 1 /bin/x\nRss: 4 kB\nAnonymous: 0 kB\n";
        assert_eq!(clean_file_mappings(smaps), vec![Mapping { start: 0x1000, end: 0x2000, rss_kb: 4 }]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_gives_back_the_stack_below_its_frame_and_goes_deep_again() {
        fn deep(n: u32) -> u64 {
            // A kilobyte of frame each, kept by `black_box`.
            let pad = std::hint::black_box([1u8; 1024]);
            if n == 0 { 0 } else { deep(n - 1) + u64::from(pad[n as usize % 1024]) }
        }
        /// Resident pages of `range` (`mincore`).
        #[allow(unsafe_code)]
        fn resident(range: &std::ops::Range<usize>) -> usize {
            let mut map = vec![0u8; (range.end - range.start).div_ceil(4096)];
            // SAFETY: the range is page-aligned and mapped (this thread's stack); `map` has a
            // byte for each of its pages.
            let rc =
                unsafe { libc::mincore(range.start as *mut libc::c_void, range.end - range.start, map.as_mut_ptr()) };
            assert_eq!(rc, 0, "mincore");
            map.iter().filter(|b| *b & 1 == 1).count()
        }
        std::thread::spawn(|| {
            note_stack();
            // About 200 KB deep, then back: those pages stay resident until given back.
            assert_eq!(deep(200), 200);
            let range = release_stack().expect("Linux has the thread's stack range");
            assert!(range.end - range.start >= 150 * 1024, "only {range:x?} below the frame");
            assert_eq!(resident(&range), 0, "the pages below the frame are given back");
            // The same depth again works: the pages come back (as zeros) and hold the frames.
            assert_eq!(deep(200), 200);
            assert!(resident(&range) * 4096 >= 150 * 1024, "the frames are back in {range:x?}");
        })
        .join()
        .expect("thread");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn releasing_reports_what_it_dropped_and_the_process_runs_on() {
        // This test binary's own code is a clean file mapping: it is dropped, and the code still
        // runs (it faults back in). That fewer pages stay resident is shown by `tests/pages.rs`,
        // on a whole `portico serve`: here the other tests' threads fault pages back meanwhile.
        let released = release().expect("Linux has /proc/self/smaps");
        assert!(released.mappings > 0 && released.bytes > 0, "{released:?}");
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(v.iter().sum::<u64>(), 500_500);
        assert!(release().is_some_and(|again| again.mappings > 0), "a second release works as well");
    }
}
